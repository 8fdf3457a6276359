"""The small interface every format parser shares: detect, iterate records with file and line, reject.

A parser reads a binary stream and yields `ParsedRecord`s and `Rejection`s in file order. It never
raises for bad input: whatever it cannot read becomes a `Rejection` naming the line and the reason, and
the records around it are still yielded.
"""
from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import BinaryIO, ClassVar

from accounting.choices import RecordKind

MAX_LINE_BYTES = 1024 * 1024
# A job or pilot running longer than this is not believable (the longest grid walltimes are days).
MAX_WALL_SECONDS = 366 * 24 * 3600
MAX_CORES = 4096
MAX_MEMORY_MB = 64 * 1024 * 1024  # 64 TB: more than any node
MAX_KEY_LENGTH = 500  # a job identifier's column width
# Column widths of the names a record carries (accounting models).
NAME_LIMITS = {"site": 200, "resource": 255, "vo": 200, "project": 200, "person": 500}
EARLIEST = datetime(1995, 1, 1, tzinfo=UTC)
FUTURE_SLACK = timedelta(days=1)
RECORD_KINDS = frozenset(RecordKind.values)  # RecordKind.values builds a new list on every access


@dataclass(slots=True)
class PilotInfo:
    """What a pilot record knows about its glidein (DOMAIN.md, seed 002)."""

    glidein_name: str = ""
    frontend_client: str = ""
    entry: str = ""
    cores: int = 1
    memory_mb: int | None = None
    gpus: int = 0
    validation_seconds: float | None = None
    condor_started: bool | None = None
    condor_seconds: float | None = None
    claims: int | None = None


@dataclass(slots=True)
class ParsedRecord:
    """One job as a parser read it: the quantities and identity strings of DOMAIN.md "Records"."""

    kind: str
    natural_key: str
    start: datetime
    end: datetime
    wall_seconds: float
    line: int = 0
    cores: int = 1
    memory_mb: int | None = None
    gpus: int = 0
    cpu_user_seconds: float = 0.0
    cpu_sys_seconds: float = 0.0
    exit_code: int | None = None
    exit_signal: int | None = None
    site: str = ""
    resource: str = ""
    vo: str = ""
    person: str = ""
    project: str = ""
    fqan: str = ""
    local_user: str = ""
    pilot_ref: str = ""
    pilot: PilotInfo | None = None
    extra: dict = field(default_factory=dict)


@dataclass(slots=True)
class PilotRuns:
    """The payload runs a glidein's startd history file lists, for the pilot the ads name (`pilot_ref`: its
    `schedd#cluster.proc` or glidein name, as a payload names it): attached to that pilot's stored record
    like the runs of a glidein's `.err`, once the bundle's records are stored (seed 002, exact mode)."""

    pilot_ref: str
    runs: list[dict]
    line: int


@dataclass(slots=True)
class Rejection:
    """Something that could not be read: where (line, 1-based; None for the whole file) and why."""

    line: int | None
    reason: str


class RecordInvalid(ValueError):
    """A record whose values break the rules of `check_record`."""


@dataclass(slots=True)
class ParseContext:
    """What the caller knows that the file may not say (e.g. `--site` for formats that carry none)."""

    site: str = ""
    schedd: str = ""  # the factory schedd, for `completed_jobs` lines that name only cluster.proc
    now: datetime = field(default_factory=lambda: datetime.now(UTC))


class Parser:
    """Base class of the format parsers. Subclasses set `name` and implement `detect` and `parse`."""

    name: ClassVar[str] = ""

    def detect(self, head: bytes, filename: str) -> bool:
        """Whether the file whose first bytes are `head` is in this format."""
        raise NotImplementedError

    def parse(self, stream: BinaryIO, filename: str, context: ParseContext) -> Iterator[ParsedRecord | Rejection]:
        raise NotImplementedError


def check_record(record: ParsedRecord, now: datetime) -> None:
    """Reject values no real job has: negative, NaN or absurd durations, end before start, future dates."""
    wall = record.wall_seconds
    if wall is None or math.isnan(wall) or math.isinf(wall):
        raise RecordInvalid(f"wall time is not a number ({wall!r})")
    if wall < 0:
        raise RecordInvalid(f"negative wall time ({wall:g} s)")
    if wall > MAX_WALL_SECONDS:
        raise RecordInvalid(f"absurd wall time ({wall:g} s, more than a year)")
    for name in ("cpu_user_seconds", "cpu_sys_seconds"):
        value = getattr(record, name)
        if math.isnan(value) or math.isinf(value) or value < 0:
            raise RecordInvalid(f"{name} is negative or not a number ({value!r})")
    if record.end < record.start:
        raise RecordInvalid(f"end {record.end.isoformat()} is before start {record.start.isoformat()}")
    if record.end > now + FUTURE_SLACK:
        raise RecordInvalid(f"end {record.end.isoformat()} is in the future")
    if record.start < EARLIEST:
        raise RecordInvalid(f"start {record.start.isoformat()} is before 1995")
    if not 1 <= record.cores <= MAX_CORES:
        raise RecordInvalid(f"absurd core count ({record.cores})")
    if record.gpus < 0 or record.gpus > MAX_CORES:
        raise RecordInvalid(f"absurd GPU count ({record.gpus})")
    if record.kind not in RECORD_KINDS:
        raise RecordInvalid(f"unknown record kind {record.kind!r}")
    if not record.natural_key or len(record.natural_key) > MAX_KEY_LENGTH:
        raise RecordInvalid("missing or over-long job identifier")
    for name, limit in NAME_LIMITS.items():
        if len(getattr(record, name)) > limit:
            raise RecordInvalid(f"{name} longer than {limit} characters")
    if record.memory_mb is not None and not 0 <= record.memory_mb <= MAX_MEMORY_MB:
        raise RecordInvalid(f"absurd memory ({record.memory_mb} MB)")
    for name in ("exit_code", "exit_signal"):
        value = getattr(record, name)
        if value is not None and not -(2**31) <= value < 2**31:
            raise RecordInvalid(f"{name} out of range ({value})")


def iter_lines(stream: BinaryIO, max_bytes: int = MAX_LINE_BYTES) -> Iterator[tuple[int, bytes | None]]:
    """Yield (line number, bytes without the newline); `None` for a line longer than `max_bytes`.

    An over-long line is read through in bounded chunks and never held whole in memory.
    """
    number = 0
    while True:
        raw = stream.readline(max_bytes + 1)
        if not raw:
            return
        number += 1
        if len(raw) > max_bytes and not raw.endswith(b"\n"):
            while raw and not raw.endswith(b"\n"):
                raw = stream.readline(max_bytes)
            yield number, None
            continue
        yield number, raw.rstrip(b"\r\n")


def utc_from_epoch(value: float) -> datetime:
    return datetime.fromtimestamp(value, tz=UTC)
