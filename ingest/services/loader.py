"""Idempotent bulk loading of parsed records: insert new jobs, update changed re-sends, count duplicates.

A record is identified by its natural key. An identical re-send (same `record_hash`) is a duplicate and
changes nothing; a changed one updates the row in place. Rows are written in batches, each batch in one
transaction, with bulk statements (never one INSERT per row).
"""
from __future__ import annotations

import hashlib
import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta

from django.db import IntegrityError, connection, transaction
from django.utils import timezone
from psycopg.errors import UniqueViolation

from accounting.choices import RecordKind
from accounting.models import VO, Person, PilotDetails, PilotJobRun, Project, Resource, Site, UsageRecord
from ingest.compiled import current
from ingest.parsers.base import ParsedRecord, PilotRuns

_record_hash = current("ingest.services._record_hash")  # None when not built (or stale): python_record_hash, the same
_copy_rows = current("ingest.services._copy_rows")  # None when not built (or stale): `_values` rows through psycopg

# Records per batch (one COPY, one transaction). 5,000 gave 20-35 % more ads/s than 2,000 on the bench (fewer
# statements and commits per record, for both processes), for ~10 MB per batch of parsed records in memory.
BATCH_SIZE = 5000
# The first batch of a loader is smaller: PostgreSQL has nothing to do until it is parsed (~50 ms for 5,000 ads).
FIRST_BATCH_SIZE = 500
Run = Callable[..., None]  # run(work, *args): `call` at once, or `pipeline.Writer.submit`


def call(work: Callable, *args) -> None:
    work(*args)

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
STAGE_COLUMNS = [
    "kind", "natural_key", "record_hash", "source_format", "bundle_id", "source_file", "source_line", "site_id",
    "resource_id", "vo_id", "person_id", "project_id", "fqan", "local_user", "pilot_ref", "start", "end",
    "wall_seconds", "cores", "memory_mb", "gpus", "cpu_user_seconds", "cpu_sys_seconds", "exit_code", "exit_signal",
    "void", "created", "updated",
]  # fmt: skip
STAGE_COLUMN_LIST = ", ".join(f'"{name}"' for name in STAGE_COLUMNS)
STAGE_TABLE = (
    "CREATE TEMP TABLE IF NOT EXISTS gl_stage ON COMMIT DELETE ROWS AS "
    f"SELECT {STAGE_COLUMN_LIST} FROM accounting_usagerecord WITH NO DATA"
)
_RANK_SQL = "CASE {} " + " ".join(f"WHEN '{name}' THEN {rank}" for name, rank in SOURCE_RANK.items()) + " ELSE 1 END"
_CHANGED = [name for name in STAGE_COLUMNS if name not in ("natural_key", "void", "created")]
UPSERT = (
    f"INSERT INTO accounting_usagerecord AS u ({STAGE_COLUMN_LIST}) SELECT {STAGE_COLUMN_LIST} FROM gl_stage "
    "ON CONFLICT (natural_key) DO UPDATE SET " + ", ".join(f'"{name}" = EXCLUDED."{name}"' for name in _CHANGED) + " "
    "WHERE u.record_hash <> EXCLUDED.record_hash "
    f"AND {_RANK_SQL.format('u.source_format')} <= {_RANK_SQL.format('EXCLUDED.source_format')} "
    "RETURNING u.id, u.natural_key, (u.xmax = 0)"
)
# Binary COPY: the values are sent as PostgreSQL stores them, with the column types of the table (about ten
# times less client time per row than formatting text).
COPY_RECORDS = f"COPY accounting_usagerecord ({STAGE_COLUMN_LIST}) FROM STDIN (FORMAT BINARY)"  # a batch of new jobs
COPY_STAGE = f"COPY gl_stage ({STAGE_COLUMN_LIST}) FROM STDIN (FORMAT BINARY)"
COLUMN_TYPES = (
    "SELECT attname, atttypid FROM pg_attribute "
    "WHERE attrelid = 'accounting_usagerecord'::regclass AND attnum > 0 AND NOT attisdropped"
)
UPDATE_FIELDS = [
    "kind", "record_hash", "source_format", "bundle", "source_file", "source_line", "site", "resource", "vo",
    "person", "project", "fqan", "local_user", "pilot_ref", "start", "end", "wall_seconds", "cores", "memory_mb",
    "gpus", "cpu_user_seconds", "cpu_sys_seconds", "exit_code", "exit_signal", "updated",
]  # fmt: skip


START, END = operator.attrgetter("start"), operator.attrgetter("end")
_RECORD_VALUES = operator.attrgetter(*RECORD_FIELDS)
_PILOT_VALUES = operator.attrgetter(*PILOT_FIELDS)


def python_record_hash(record: ParsedRecord) -> str:
    """A digest of everything a record says, so a changed re-send is told from an identical one.

    Stored in every row: the text hashed must never change, or every re-send would count as a change.
    `record_hash` is this, compiled (`_record_hash.pyx`) when built: the same text, written 3x faster."""
    parts = list(map(repr, _RECORD_VALUES(record)))
    if record.pilot is not None:
        parts += map(repr, _PILOT_VALUES(record.pilot))
    if record.extra:
        parts.append(repr(record.extra))
    return hashlib.sha1("\x1f".join(parts).encode("utf-8"), usedforsecurity=False).hexdigest()


record_hash = _record_hash.RecordHasher(_RECORD_VALUES, _PILOT_VALUES, RecordKind) if _record_hash else python_record_hash


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
        self.resolve_names(names_of(records))

    def resolve_names(self, names: dict[str, set[str]]) -> None:
        """Make sure every name of `names` ({dimension: names}, see `names_of`) has an id."""
        for attr, model in DIMENSIONS.items():
            known = self.ids[attr]
            missing = names[attr] - known.keys()
            if not missing:
                continue
            known.update(model.objects.filter(name__in=missing).names())
            new = missing - known.keys()
            if new:
                model.objects.bulk_create([model(name=name) for name in sorted(new)], ignore_conflicts=True)
                known.update(model.objects.filter(name__in=new).names())

    def id(self, attr: str, name: str) -> int | None:
        return self.ids[attr].get(name) if name else None

    def knows(self, names: dict[str, set[str]]) -> bool:
        """Whether every name of `names` has an id (read from the parsing thread: ids are only ever added)."""
        return all(names[attr] <= self.ids[attr].keys() for attr in DIMENSIONS)


def names_of(records: list[ParsedRecord]) -> dict[str, set[str]]:
    """{dimension: the names `records` carry in it}, without ""."""
    return {attr: set(map(operator.attrgetter(attr), records)) - {""} for attr in DIMENSIONS}


@dataclass
class Batch:
    """A batch of records as the writer thread takes it. What takes no database is done before, by `prepare`
    on the parsing thread: while the writer runs Python, PostgreSQL waits for it."""

    latest: dict[str, tuple[ParsedRecord, str, str]]  # natural key -> (record, file, digest): its last send
    duplicates: int  # identical re-sends within the batch
    updated: int  # changed re-sends within the batch
    names: dict[str, set[str]]  # `names_of` the latest records
    pilot_keys: list[str]  # the latest records with pilot details or job runs to write beside them
    first_day: date | None  # the days the latest records touch
    last_day: date | None
    # When every name had an id already (`RecordLoader.flush`): the binary COPY data of `latest` or, when it could
    # not be written so, its rows; with their `created` and `updated`.
    data: bytes | None = None
    rows: list[tuple] | None = None
    now: datetime | None = None
    resent: bool = False  # a COPY of it found one of its jobs stored already: straight to the upsert


def prepare(batch: list[tuple[ParsedRecord, str, str]]) -> Batch:
    """The batch as the writer takes it (see Batch), on the parsing thread. Within a batch a later send of the
    same job replaces an earlier one."""
    latest: dict[str, tuple[ParsedRecord, str, str]] = {}
    duplicates = updated = 0
    for record, filename, digest in batch:
        previous = latest.get(record.natural_key)
        if previous is not None and previous[2] == digest:
            duplicates += 1
            continue
        if previous is not None:
            updated += 1
        latest[record.natural_key] = (record, filename, digest)
    records = [record for record, _, _ in latest.values()]
    days = LoadCounts()
    days.touch_all(records)
    pilot_keys = [record.natural_key for record in records if record.pilot is not None or "runs" in record.extra]
    return Batch(latest, duplicates, updated, names_of(records), pilot_keys, days.first_day, days.last_day)


@dataclass
class LoadCounts:
    inserted: int = 0
    updated: int = 0
    duplicates: int = 0
    first_day: date | None = None
    last_day: date | None = None
    per_batch: list[int] = field(default_factory=list)

    def touch(self, start: datetime, end: datetime) -> None:
        self.touch_days(*days_between(start, end))

    def touch_days(self, first: date, last: date) -> None:
        self.first_day = first if self.first_day is None else min(self.first_day, first)
        self.last_day = last if self.last_day is None else max(self.last_day, last)

    def touch_all(self, records: list[ParsedRecord]) -> None:
        """`touch` for every record, in bulk: the earliest start, and the records with the latest end, decide
        (a later end never has an earlier last day)."""
        if not records:
            return
        start = min(map(START, records))
        self.touch(start, start)
        latest = max(map(END, records))
        for record in records:
            if record.end == latest:
                self.touch(record.start, record.end)


class RecordLoader:
    """Buffers parsed records of one bundle and writes them in batches (see the module docstring)."""

    def __init__(self, bundle_id: int | None, source_format: str, batch_size: int | None = None, run: Run = call) -> None:
        self.bundle_id = bundle_id
        self.source_format = source_format
        self.batch_size = batch_size or BATCH_SIZE
        self.flush_at = min(FIRST_BATCH_SIZE, self.batch_size)  # records buffered before the next flush
        self.run = run  # how a batch's write is run: at once, or queued on the ingest's writer thread
        self.dimensions = DimensionCache()
        self.column_types: list[int] | None = None
        self.copy_rows = None  # `_copy_rows.CopyRows` once the table's column types are known to be what it writes
        self.counts = LoadCounts()
        self.buffer: list[tuple[ParsedRecord, str, str]] = []  # (record, file, record_hash)
        self.pending_runs: list[tuple[PilotRuns, str]] = []  # standalone startd histories: attached at the end

    def add(self, record: ParsedRecord, filename: str) -> None:
        # Hashed here, on the parsing thread: the writer thread then starts on the database sooner.
        self.buffer.append((record, filename, record_hash(record)))
        if len(self.buffer) >= self.flush_at:
            self.flush()

    def add_runs(self, item: PilotRuns, filename: str) -> None:
        self.pending_runs.append((item, filename))

    def attach_runs(self) -> list[tuple[str, int, str]]:
        """Attach the runs of standalone startd histories to their pilots, once every record of the bundle is
        stored (the pilot may come in a later file): the same replacement as for a glidein `.err`'s runs (a
        pilot's startd history lists all its runs; two files of one pilot add up). Returns (file, line,
        reason) of the histories whose pilot is not stored, so that they are reported, not dropped silently."""
        if not self.pending_runs:
            return []
        refs = {item.pilot_ref for item, _ in self.pending_runs}
        pilots = UsageRecord.objects.filter(kind=RecordKind.PILOT)
        pks = dict(pilots.filter(natural_key__in=refs).values_list("natural_key", "pk"))
        pks |= dict(
            PilotDetails.objects.filter(record__in=pilots, glidein_name__in=refs - pks.keys()).values_list("glidein_name", "record_id")
        )
        runs: dict[str, list[dict]] = {}
        missing = []
        for item, filename in self.pending_runs:
            if item.pilot_ref in pks:
                runs.setdefault(item.pilot_ref, []).extend(item.runs)
            else:
                missing.append((filename, item.line, f"startd history of pilot {item.pilot_ref}: no such pilot is stored, so "
                                f"its {len(item.runs)} runs are not attached (ingest the pilot, then this file again)"))  # fmt: skip
        if runs:
            with transaction.atomic():
                self._write_runs(runs, pks)
        self.pending_runs = []
        return missing

    def flush(self) -> None:
        if not self.buffer:
            return
        batch, self.buffer = self.buffer, []
        self.flush_at = self.batch_size
        prepared = prepare(batch)
        if self.dimensions.knows(prepared.names):  # the usual case after the first batches: rows built here too
            prepared.now = timezone.now()
            payload = self._payload(prepared, prepared.now)
            if isinstance(payload, bytes):
                prepared.data = payload
            else:
                prepared.rows = payload
        self.run(self._write_batch, prepared)

    def _write_batch(self, batch: Batch) -> None:
        if self._alone(batch):
            try:
                self._copy_alone(batch)
                return
            except UniqueViolation:  # nothing was written: the statement was its own transaction
                batch.resent = True
        with transaction.atomic():
            self._write(batch)

    @staticmethod
    def _alone(batch: Batch) -> bool:
        """Whether the batch can be written by one COPY in autocommit, its own transaction (`_copy_alone`): its COPY
        data is built (every name had an id), it has no pilot details or job runs to write beside its records, and
        no caller's transaction is open (then the COPY would be part of it)."""
        return batch.data is not None and not batch.pilot_keys and not connection.in_atomic_block

    def _copy_alone(self, batch: Batch) -> None:
        """A batch of new jobs as one COPY, atomic on its own: what `_insert_new` does in BEGIN, SAVEPOINT, COPY,
        RELEASE and COMMIT, in one round trip instead of five (each a wait for the GIL on the writer thread, while
        PostgreSQL has nothing to do). Raises UniqueViolation, with nothing written, when a job is stored already."""
        with connection.cursor() as cursor, cursor.cursor.copy(COPY_RECORDS) as copy:
            copy.write(memoryview(batch.data))
        self._count_within(batch)
        self._count_inserted(batch)

    def _count_within(self, batch: Batch) -> None:
        """The re-sends within the batch: identical (duplicates) and changed (updated)."""
        self.counts.duplicates += batch.duplicates
        self.counts.updated += batch.updated

    def _count_inserted(self, batch: Batch) -> None:
        """Every job of the batch inserted as new, and the days they touch."""
        self.counts.inserted += len(batch.latest)
        if batch.first_day is not None:
            self.counts.touch_days(batch.first_day, batch.last_day)

    def _write(self, batch: Batch) -> None:
        self._count_within(batch)
        latest = batch.latest
        self.dimensions.resolve_names(batch.names)
        upsert = self._upsert_copy if connection.vendor == "postgresql" else self._upsert_orm
        pks = upsert(batch)
        pilots = {key: latest[key][0].pilot for key in pks if latest[key][0].pilot is not None}
        if pilots:
            metrics = {key: {k: v for k, v in latest[key][0].extra.items() if k != "runs"} for key in pilots}
            self._write_pilots(pilots, pks, metrics)
        runs = {key: latest[key][0].extra["runs"] for key in pks if "runs" in latest[key][0].extra}
        if runs:
            self._write_runs(runs, pks)

    def _upsert_copy(self, batch: Batch) -> dict[str, int | None]:
        """PostgreSQL: COPY a batch of new jobs straight into the table (`_insert_new`); any other batch into a
        staging table, then one INSERT ... ON CONFLICT DO UPDATE.

        Returns {natural key: id} of the rows inserted or changed (that need it: see `_insert_new`)."""
        with connection.cursor() as cursor:
            types = self._column_types(cursor)
        payload = self._payload(batch, batch.now or timezone.now())  # once, for either COPY below
        pks = None if batch.resent else self._insert_new(batch, types, payload)
        if pks is not None:
            return pks
        latest = batch.latest
        with connection.cursor() as cursor:
            cursor.execute(STAGE_TABLE)
            cursor.execute("TRUNCATE gl_stage")
            with cursor.cursor.copy(COPY_STAGE) as copy:
                self._send(copy, types, payload)
            # Changed rows: their old days need rebuilding too. Identical rows of this very bundle were
            # written by an earlier attempt at it (a worker killed half-way): they count as inserted.
            cursor.execute(
                """SELECT min(u.start) FILTER (WHERE u.record_hash <> s.record_hash OR u.bundle_id = %(bundle)s),
                          max(u."end") FILTER (WHERE u.record_hash <> s.record_hash OR u.bundle_id = %(bundle)s),
                          count(*) FILTER (WHERE u.record_hash = s.record_hash AND u.bundle_id = %(bundle)s)
                   FROM gl_stage s JOIN accounting_usagerecord u ON u.natural_key = s.natural_key""",
                {"bundle": self.bundle_id},
            )
            old_first, old_last, ours = cursor.fetchone()  # old days of changed rows and of our own earlier rows
            cursor.execute(UPSERT)
            written = cursor.fetchall()
        inserted = sum(1 for _, _, new in written if new)
        self.counts.inserted += inserted + ours
        self.counts.updated += len(written) - inserted
        self.counts.duplicates += len(latest) - len(written) - ours
        if old_first is not None:
            self.counts.touch(old_first, old_last)
        for _, key, _ in written:
            record = latest[key][0]
            self.counts.touch(record.start, record.end)
        return {key: pk for pk, key, _ in written}

    def _insert_new(self, batch: Batch, types: list[int], payload: bytes | list[tuple]) -> dict[str, int] | None:
        """COPY the batch straight into the records table, in a savepoint: the common case of a new file, without
        the staging table, the join and the speculative inserts of the upsert. None, with nothing written, when
        one of its jobs is stored already (by an earlier file, an earlier attempt at this bundle or another
        worker right now): the unique index refuses it at the first such row, so little work is lost.

        Returns {natural key: id} of the rows that need it (pilots: their details and job runs), with nothing
        else to do per row after the COPY: `prepare` did it on the parsing thread."""
        pilots = batch.pilot_keys
        with connection.cursor() as cursor:
            try:
                with transaction.atomic(), cursor.cursor.copy(COPY_RECORDS) as copy:
                    self._send(copy, types, payload)
            except (IntegrityError, UniqueViolation):
                return None
            ids = {}
            if pilots:
                cursor.execute("SELECT natural_key, id FROM accounting_usagerecord WHERE natural_key = ANY(%s)", [pilots])
                ids = dict(cursor.fetchall())
        self._count_inserted(batch)
        return {key: ids.get(key) for key in pilots}

    def _column_types(self, cursor) -> list[int]:
        """The type oids of STAGE_COLUMNS in the records table (the staging table has the same), for binary COPY;
        when they are those `_copy_rows` writes, batches are written by it from then on."""
        if self.column_types is None:
            cursor.execute(COLUMN_TYPES)
            oids = dict(cursor.fetchall())
            self.column_types = [oids[name] for name in STAGE_COLUMNS]
            if _copy_rows is not None and tuple(self.column_types) == _copy_rows.COLUMN_TYPES:
                self.copy_rows = _copy_rows.CopyRows(self.source_format, self.bundle_id)
        return self.column_types

    def _payload(self, batch: Batch, now: datetime) -> bytes | list[tuple]:
        """What a COPY of the batch sends (built by `flush` when it could): its binary COPY data (`_copy_rows`),
        else its rows for psycopg to write, when the module is not built, the table's column types are not
        known yet or it does not write one of the values exactly as psycopg does."""
        if batch.data is not None:
            return batch.data
        if batch.rows is not None:
            return batch.rows
        latest = batch.latest.values()
        data = self.copy_rows.rows(latest, self.dimensions.ids, now) if self.copy_rows is not None else None
        return data if data is not None else [self._values(record, filename, digest, now) for record, filename, digest in latest]

    @staticmethod
    def _send(copy, types: list[int], payload: bytes | list[tuple]) -> None:
        """A `_payload` into a binary COPY (`types`: `_column_types`, read before the COPY began)."""
        if isinstance(payload, bytes):
            copy.write(memoryview(payload))  # sent in slices of the one buffer, without copies
            return
        copy.set_types(types)
        for row in payload:
            copy.write_row(row)

    def _upsert_orm(self, batch: Batch) -> dict[str, int]:
        """Any database (SQLite for the demo): the same decisions as `_upsert_copy`, through the ORM."""
        latest = batch.latest
        existing = {
            key: (pk, digest, start, end, bundle_id, source)
            for key, pk, digest, start, end, bundle_id, source in UsageRecord.objects.filter(
                natural_key__in=list(latest)
            ).values_list("natural_key", "pk", "record_hash", "start", "end", "bundle_id", "source_format")
        }
        rank = SOURCE_RANK.get(self.source_format, 1)
        now = timezone.now()
        inserts: list[UsageRecord] = []
        updates: list[UsageRecord] = []
        for key, (record, filename, digest) in latest.items():
            old = existing.get(key)
            if old is not None and old[1] == digest:
                if old[4] is not None and old[4] == self.bundle_id:
                    self.counts.inserted += 1  # written by an earlier attempt at this bundle: its days still count
                    self.counts.touch(record.start, record.end)
                else:
                    self.counts.duplicates += 1
                continue
            if old is not None and SOURCE_RANK.get(old[5], 1) > rank:
                self.counts.duplicates += 1  # a better source already described this pilot
                continue
            row = UsageRecord(**dict(zip(STAGE_COLUMNS, self._values(record, filename, digest, now), strict=True)))
            self.counts.touch(record.start, record.end)
            if old is None:
                inserts.append(row)
                self.counts.inserted += 1
            else:
                row.pk = old[0]
                updates.append(row)
                self.counts.touch(old[2], old[3])
                self.counts.updated += 1
        if inserts:
            UsageRecord.objects.bulk_create(inserts)
        if updates:
            UsageRecord.objects.bulk_update(updates, UPDATE_FIELDS)
        return {row.natural_key: row.pk for row in inserts + updates}

    def _values(self, record: ParsedRecord, filename: str, digest: str, now) -> tuple:
        """The row of a record, in STAGE_COLUMNS order."""
        ids = self.dimensions.ids
        return (
            record.kind, record.natural_key, digest, self.source_format, self.bundle_id, filename[:500],
            record.line or None, ids["site"].get(record.site), ids["resource"].get(record.resource),
            ids["vo"].get(record.vo), ids["person"].get(record.person), ids["project"].get(record.project),
            record.fqan[:500], record.local_user[:200], record.pilot_ref[:500], record.start, record.end,
            record.wall_seconds, record.cores, record.memory_mb, record.gpus, record.cpu_user_seconds,
            record.cpu_sys_seconds, record.exit_code, record.exit_signal, False, now, now,
        )  # fmt: skip

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
