"""Loading the items that are not job records: APEL summaries and capacity snapshots.

Same rules as for jobs: keyed by natural key, an identical re-send is a duplicate, a changed one updates.
"""
from __future__ import annotations

import hashlib
from datetime import timedelta

from django.db import transaction

from accounting.models import VO, ApelSummary, CapacitySnapshot, Person, Resource, Site
from ingest.services.loader import LoadCounts, Run, call

BATCH_SIZE = 2000
SNAPSHOT_SPAN = timedelta(hours=1)
NAMED = {"site": Site, "vo": VO, "person": Person, "resource": Resource}


def _named_id(model, name: str, cache: dict) -> int | None:
    if not name:
        return None
    key = (model, name)
    if key not in cache:
        cache[key] = model.objects.get_or_create(name=name)[0].pk
    return cache[key]


def summary_fields(item, ids) -> dict:
    return {
        "site_id": ids(Site, item.site),
        "vo_id": ids(VO, item.vo),
        "person_id": ids(Person, item.person),
        "year": item.year,
        "month": item.month,
        "fqan": (item.fqan or "")[:500],
        "submit_host": (item.submit_host or "")[:255],
        "infrastructure": (item.infrastructure or "")[:255],
        "service_level_type": (item.service_level_type or "")[:50],
        "service_level": item.service_level,
        "processors": item.processors or 0,
        "node_count": item.node_count or 0,
        "number_of_jobs": item.number_of_jobs or 0,
        "wall_seconds": item.wall_seconds or 0.0,
        "cpu_seconds": item.cpu_seconds or 0.0,
        "normalised_wall": item.normalised_wall or 0.0,
        "normalised_cpu": item.normalised_cpu or 0.0,
        "earliest_end": item.earliest_end,
        "latest_end": item.latest_end,
    }


def snapshot_fields(item, ids) -> dict:
    return {
        "timestamp": item.timestamp,
        "site_id": ids(Site, item.site),
        "resource_id": ids(Resource, getattr(item, "resource", "")),
        "vo_id": ids(VO, getattr(item, "vo", "")),
        "idle_cores": item.idle_cores or 0,
        "pilots_queued": item.pilots_queued or 0,
        "idle_jobs": item.idle_jobs or 0,
        "pledged_cores": getattr(item, "pledged_cores", None),
    }


KINDS = {"ParsedSummary": (ApelSummary, summary_fields), "ParsedSnapshot": (CapacitySnapshot, snapshot_fields)}


def handles(item) -> bool:
    return type(item).__name__ in KINDS


class SideLoader:
    """Buffers summaries / snapshots of one bundle and upserts them in batches."""

    def __init__(self, bundle_id: int | None, run: Run = call) -> None:
        self.bundle_id = bundle_id
        self.run = run
        self.counts = LoadCounts()
        self.buffer: list = []
        self._names: dict = {}

    def add(self, item) -> None:
        self.buffer.append(item)
        if len(self.buffer) >= BATCH_SIZE:
            self.flush()

    def flush(self) -> None:
        batch, self.buffer = self.buffer, []
        if batch:
            self.run(self._write_batch, batch)

    def _write_batch(self, batch: list) -> None:
        by_kind: dict[str, list] = {}
        for item in batch:
            by_kind.setdefault(type(item).__name__, []).append(item)
        with transaction.atomic():
            for kind, items in by_kind.items():
                self._write(*KINDS[kind], items)

    def _write(self, model, to_fields, items) -> None:
        def ids(m, name):
            return _named_id(m, name, self._names)

        latest = {}
        for item in items:
            fields = to_fields(item, ids)
            digest = hashlib.sha1(repr(sorted(fields.items())).encode(), usedforsecurity=False).hexdigest()
            if item.natural_key in latest and latest[item.natural_key][1] == digest:
                self.counts.duplicates += 1
                continue
            latest[item.natural_key] = (fields, digest)
        has_hash = any(f.name == "record_hash" for f in model._meta.fields)
        existing = {obj.natural_key: obj for obj in model.objects.filter(natural_key__in=list(latest))}
        for key, (fields, digest) in latest.items():
            old = existing.get(key)
            if old is not None and (getattr(old, "record_hash", None) == digest or (not has_hash and all(getattr(old, k) == v for k, v in fields.items()))):
                self.counts.duplicates += 1
                continue
            values = fields | {"bundle_id": self.bundle_id} | ({"record_hash": digest} if has_hash else {})
            if "timestamp" in fields:  # a snapshot stands for up to an hour: those days' categories change
                self.counts.touch(fields["timestamp"], fields["timestamp"] + SNAPSHOT_SPAN)
            model.objects.update_or_create(natural_key=key, defaults=values)
            if old is None:
                self.counts.inserted += 1
            else:
                self.counts.updated += 1
