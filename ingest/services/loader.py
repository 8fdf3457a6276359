"""Idempotent bulk loading of parsed records: insert new jobs, update changed re-sends, count duplicates.

A record is identified by its natural key. An identical re-send (same `record_hash`) is a duplicate and
changes nothing; a changed one updates the row in place. Rows are written in batches, each batch in one
transaction, with bulk statements (never one INSERT per row).
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta

from django.db import transaction
from django.utils import timezone

from accounting.models import VO, Person, PilotDetails, PilotJobRun, Project, Resource, Site, UsageRecord
from ingest.parsers.base import ParsedRecord

BATCH_SIZE = 2000
# Several sources describe the same pilot. A more detailed source is never overwritten by a coarser one, so
# the stored pilot (and the summaries) do not depend on the order the sources arrive in.
# job.out (measured start and end) > schedd history > completed_jobs (its end is when the factory logged it).
SOURCE_RANK = {"gwms-glidein": 3, "htcondor-history": 2}
DIMENSIONS = {"site": Site, "resource": Resource, "vo": VO, "person": Person, "project": Project}
RECORD_FIELDS = (
    "kind", "start", "end", "wall_seconds", "cores", "memory_mb", "gpus", "cpu_user_seconds", "cpu_sys_seconds",
    "exit_code", "exit_signal", "site", "resource", "vo", "person", "project", "fqan", "local_user", "pilot_ref",
)  # fmt: skip
PILOT_FIELDS = (
    "glidein_name", "frontend_client", "entry", "cores", "memory_mb", "gpus", "validation_seconds",
    "condor_started", "condor_seconds", "claims",
)  # fmt: skip
RUN_FIELDS = {
    "global_job_id", "start", "end", "cores", "memory_mb", "gpus", "exit_code", "exit_signal",
    "badput_preemption", "badput_draining", "starter_exit_status",
}  # fmt: skip
UPDATE_FIELDS = [
    "kind", "record_hash", "source_format", "bundle", "source_file", "source_line", "site", "resource", "vo",
    "person", "project", "fqan", "local_user", "pilot_ref", "start", "end", "wall_seconds", "cores", "memory_mb",
    "gpus", "cpu_user_seconds", "cpu_sys_seconds", "exit_code", "exit_signal", "updated",
]  # fmt: skip


def record_hash(record: ParsedRecord) -> str:
    """A digest of everything a record says, so a changed re-send is told from an identical one."""
    parts = [repr(getattr(record, name)) for name in RECORD_FIELDS]
    if record.pilot is not None:
        parts += [repr(getattr(record.pilot, name)) for name in PILOT_FIELDS]
    if record.extra:
        parts.append(repr(record.extra))
    return hashlib.sha1("\x1f".join(parts).encode("utf-8"), usedforsecurity=False).hexdigest()


def days_between(start: datetime, end: datetime) -> tuple[date, date]:
    last = end.date()
    if end.time() == datetime.min.time() and end > start:
        last -= timedelta(days=1)
    return start.date(), max(last, start.date())


class DimensionCache:
    """Names -> ids of sites, resources, VOs, people and projects, created on first sight."""

    def __init__(self) -> None:
        self.ids: dict[str, dict[str, int]] = {name: {} for name in DIMENSIONS}

    def resolve(self, records: list[ParsedRecord]) -> None:
        for attr, model in DIMENSIONS.items():
            known = self.ids[attr]
            missing = {getattr(r, attr) for r in records} - known.keys() - {""}
            if not missing:
                continue
            known.update(model.objects.filter(name__in=missing).names())
            new = missing - known.keys()
            if new:
                model.objects.bulk_create([model(name=name) for name in sorted(new)], ignore_conflicts=True)
                known.update(model.objects.filter(name__in=new).names())

    def id(self, attr: str, name: str) -> int | None:
        return self.ids[attr].get(name) if name else None


@dataclass
class LoadCounts:
    inserted: int = 0
    updated: int = 0
    duplicates: int = 0
    first_day: date | None = None
    last_day: date | None = None
    per_batch: list[int] = field(default_factory=list)

    def touch(self, start: datetime, end: datetime) -> None:
        first, last = days_between(start, end)
        self.first_day = first if self.first_day is None else min(self.first_day, first)
        self.last_day = last if self.last_day is None else max(self.last_day, last)


class RecordLoader:
    """Buffers parsed records of one bundle and writes them in batches (see the module docstring)."""

    def __init__(self, bundle_id: int | None, source_format: str, batch_size: int = BATCH_SIZE) -> None:
        self.bundle_id = bundle_id
        self.source_format = source_format
        self.batch_size = batch_size
        self.dimensions = DimensionCache()
        self.counts = LoadCounts()
        self.buffer: list[tuple[ParsedRecord, str]] = []

    def add(self, record: ParsedRecord, filename: str) -> None:
        self.buffer.append((record, filename))
        if len(self.buffer) >= self.batch_size:
            self.flush()

    def flush(self) -> None:
        if not self.buffer:
            return
        batch, self.buffer = self.buffer, []
        with transaction.atomic():
            self._write(batch)

    def _write(self, batch: list[tuple[ParsedRecord, str]]) -> None:
        # Within a batch a later send of the same job replaces an earlier one.
        latest: dict[str, tuple[ParsedRecord, str, str]] = {}
        for record, filename in batch:
            digest = record_hash(record)
            previous = latest.get(record.natural_key)
            if previous is not None and previous[2] == digest:
                self.counts.duplicates += 1
                continue
            if previous is not None:
                self.counts.updated += 1
            latest[record.natural_key] = (record, filename, digest)
        existing = {
            key: (pk, digest, start, end, bundle_id, source)
            for key, pk, digest, start, end, bundle_id, source in UsageRecord.objects.filter(
                natural_key__in=list(latest)
            ).values_list("natural_key", "pk", "record_hash", "start", "end", "bundle_id", "source_format")
        }
        rank = SOURCE_RANK.get(self.source_format, 1)
        self.dimensions.resolve([record for record, _, _ in latest.values()])
        now = timezone.now()
        inserts: list[UsageRecord] = []
        updates: list[UsageRecord] = []
        pilots: dict[str, object] = {}
        runs: dict[str, list[dict]] = {}
        for key, (record, filename, digest) in latest.items():
            old = existing.get(key)
            if old is not None and old[1] == digest:
                # An identical row. If this very bundle wrote it (a re-run after a killed worker), it is ours.
                if old[4] is not None and old[4] == self.bundle_id:
                    self.counts.inserted += 1
                else:
                    self.counts.duplicates += 1
                continue
            if old is not None and SOURCE_RANK.get(old[5], 1) > rank:
                self.counts.duplicates += 1  # a better source already described this pilot
                continue
            row = self._row(record, filename, digest)
            self.counts.touch(record.start, record.end)
            if old is None:
                inserts.append(row)
                self.counts.inserted += 1
            else:
                row.pk = old[0]
                row.updated = now
                updates.append(row)
                self.counts.touch(old[2], old[3])
                self.counts.updated += 1
            if record.pilot is not None:
                pilots[key] = record.pilot
            if "runs" in record.extra:
                runs[key] = record.extra["runs"]
        if inserts:
            UsageRecord.objects.bulk_create(inserts)
        if updates:
            UsageRecord.objects.bulk_update(updates, UPDATE_FIELDS)
        pks = {row.natural_key: row.pk for row in inserts + updates}
        if pilots:
            metrics = {key: {k: v for k, v in latest[key][0].extra.items() if k != "runs"} for key in pilots}
            self._write_pilots(pilots, pks, metrics)
        if runs:
            self._write_runs(runs, pks)

    def _row(self, record: ParsedRecord, filename: str, digest: str) -> UsageRecord:
        ids = self.dimensions
        return UsageRecord(
            kind=record.kind,
            natural_key=record.natural_key,
            record_hash=digest,
            source_format=self.source_format,
            bundle_id=self.bundle_id,
            source_file=filename[:500],
            source_line=record.line or None,
            site_id=ids.id("site", record.site),
            resource_id=ids.id("resource", record.resource),
            vo_id=ids.id("vo", record.vo),
            person_id=ids.id("person", record.person),
            project_id=ids.id("project", record.project),
            fqan=record.fqan[:500],
            local_user=record.local_user[:200],
            pilot_ref=record.pilot_ref[:500],
            start=record.start,
            end=record.end,
            wall_seconds=record.wall_seconds,
            cores=record.cores,
            memory_mb=record.memory_mb,
            gpus=record.gpus,
            cpu_user_seconds=record.cpu_user_seconds,
            cpu_sys_seconds=record.cpu_sys_seconds,
            exit_code=record.exit_code,
            exit_signal=record.exit_signal,
        )

    def _write_runs(self, runs: dict[str, list[dict]], pks: dict[str, int]) -> None:
        """Replace the job runs of these pilots (a re-send carries the whole list again)."""
        PilotJobRun.objects.filter(pilot_id__in=[pks[key] for key in runs]).delete()
        PilotJobRun.objects.bulk_create(
            [PilotJobRun(pilot_id=pks[key], **{k: v for k, v in run.items() if k in RUN_FIELDS}) for key, items in runs.items() for run in items]
        )

    def _write_pilots(self, pilots: dict, pks: dict[str, int], metrics: dict[str, dict]) -> None:
        rows = [
            PilotDetails(record_id=pks[key], metrics=metrics.get(key, {}), **{name: getattr(info, name) for name in PILOT_FIELDS})
            for key, info in pilots.items()
        ]
        PilotDetails.objects.bulk_create(
            rows, update_conflicts=True, unique_fields=["record"], update_fields=[*PILOT_FIELDS, "metrics"]
        )
