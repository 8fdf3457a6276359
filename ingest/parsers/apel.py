"""`apel`: APEL accounting messages, individual jobs and monthly summaries (`Key: value` lines, records
separated by `%%` lines), as APEL clients publish them to the APEL server (seed 003).

Message types, by the first line (APEL's `apel.db.loader.record_factory` and `apel.db.records`):
- `APEL-individual-job-message: v0.2` / `v0.3`: one job per record (APEL's `JobRecord`; its loader reads
  both versions with the same field list) -> ParsedRecord of kind batch;
- `APEL-summary-job-message: v0.2`: a month of a site's jobs per bucket (`SummaryRecord`), and `v0.3`: the
  same with `NormalisedWallDuration` / `NormalisedCpuDuration` and `Infrastructure` instead of
  `InfrastructureType` and the service level (`NormalisedSummaryRecord`) -> ParsedSummary. Summaries stay
  summaries, kept apart from job records, so that a site publishing both is never counted twice.
Other headers or versions reject the whole file on its first line.

Validation is APEL's own: the mandatory fields, no unknown field, `None` / `null` / empty meaning absent,
whole numbers for durations and counts, epoch seconds for times, a service level type (si2k, HEPSPEC,
HEPscore23) only with a service level; plus no negative number, and the checks of `check_record` for jobs.

Job mapping: site `Site`, resource `SubmitHost` (the CE), natural key `Site|LocalJobId|EndTime epoch` (the key
of APEL's JobRecords table: one record per grid job), cores `Processors` (0 or absent -> 1), memory `MemoryReal`
(KB), person `GlobalUserName`, local user `LocalUserId`. The VO comes from the FQAN when it has the
`/vo[/group]/Role=...` form, as APEL derives VO, VOGroup and VORole from it, else from `VO`.
`WallDuration` is the job's elapsed time, not multiplied by `Processors`: APEL's parsers take it from the
batch system's elapsed time (Slurm `Elapsed`), and its SummariseJobs procedure normalises
`WallDuration x ServiceLevel` with no `Processors` factor; so core-hours are WallDuration x Processors / 3600
as everywhere in GridLedger. `CpuDuration` (all cores, user and system together: APEL has no split) goes to
user CPU time. The published service level is kept in `extra`: GridLedger normalises with its own benchmark
table (DOMAIN.md).
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import BinaryIO

from accounting.choices import RecordKind
from ingest.parsers.base import (
    EARLIEST,
    MAX_CORES,
    MAX_WALL_SECONDS,
    ParseContext,
    ParsedRecord,
    Parser,
    RecordInvalid,
    Rejection,
    check_record,
    iter_lines,
    utc_from_epoch,
)

JOB_HEADER = "APEL-individual-job-message"
SUMMARY_HEADER = "APEL-summary-job-message"
LEADING_SPACE = b"\xef\xbb\xbf \t\r\n"
NULLS = ("", "none", "null")
INTEGER = re.compile(r"[+-]?\d{1,15}")
DECIMAL = re.compile(r"[+-]?(?:\d{1,15}(?:\.\d*)?|\.\d{1,15})(?:[eE][+-]?\d{1,3})?")
SERVICE_LEVEL_TYPES = ("si2k", "hepspec", "hepscore23")
MAX_RECORD_FIELDS = 200  # APEL records have at most ~25
MAX_JOBS = 10**9


class ApelFormatError(ValueError):
    """A record that breaks the APEL message rules."""


def text(name: str, raw: str) -> str:
    """A string field, as given."""
    return raw


def whole(name: str, raw: str) -> int:
    """A non-negative whole number (APEL stores durations and counts as integers)."""
    if not INTEGER.fullmatch(raw):
        raise ApelFormatError(f"{name} is not a whole number: {raw[:40]!r}")
    value = int(raw)
    if value < 0:
        raise ApelFormatError(f"negative {name} ({value})")
    return value


def decimal(name: str, raw: str) -> float:
    """A non-negative finite decimal number (the service level, a benchmark factor)."""
    if not DECIMAL.fullmatch(raw):
        raise ApelFormatError(f"{name} is not a number: {raw[:40]!r}")
    value = float(raw)
    if not math.isfinite(value):
        raise ApelFormatError(f"{name} is not a finite number: {raw[:40]!r}")
    if value < 0:
        raise ApelFormatError(f"negative {name} ({value:g})")
    return value


def epoch(name: str, raw: str) -> datetime:
    """A time in seconds since the epoch, as APEL messages carry them."""
    seconds = whole(name, raw)
    try:
        return utc_from_epoch(seconds)
    except (OverflowError, OSError, ValueError):
        raise ApelFormatError(f"{name} is out of range: {raw[:40]!r}") from None


Converter = Callable[[str, str], object]

# Field -> converter, None for a field APEL accepts and ignores (job.py, summary.py, normalised_summary.py).
JOB_FIELDS: dict[str, Converter | None] = {
    "Site": text, "SubmitHost": text, "MachineName": text, "Queue": text, "LocalJobId": text,
    "LocalUserId": text, "GlobalUserName": text, "FQAN": text, "VO": text, "VOGroup": text, "VORole": text,
    "WallDuration": whole, "CpuDuration": whole, "Processors": whole, "NodeCount": whole, "StartTime": epoch,
    "EndTime": epoch, "InfrastructureDescription": text, "InfrastructureType": text, "MemoryReal": whole,
    "MemoryVirtual": whole, "ServiceLevelType": text, "ServiceLevel": decimal, "SubmitHostType": None,
    "UpdateTime": None,
}  # fmt: skip
SUMMARY_COMMON: dict[str, Converter | None] = {
    "Site": text, "Month": whole, "Year": whole, "GlobalUserName": text, "VO": text, "VOGroup": text,
    "VORole": text, "SubmitHost": text, "NodeCount": whole, "Processors": whole, "EarliestEndTime": epoch,
    "LatestEndTime": epoch, "WallDuration": whole, "CpuDuration": whole, "NumberOfJobs": whole, "UpdateTime": None,
}  # fmt: skip
SUMMARY_FIELDS = {**SUMMARY_COMMON, "InfrastructureType": text, "ServiceLevelType": text, "ServiceLevel": decimal}
NORMALISED_SUMMARY_FIELDS = {
    **SUMMARY_COMMON, "Infrastructure": text, "NormalisedWallDuration": whole, "NormalisedCpuDuration": whole,
}  # fmt: skip
JOB_MANDATORY = ("Site", "LocalJobId", "WallDuration", "CpuDuration", "StartTime", "EndTime")
SUMMARY_MANDATORY = ("Site", "Month", "Year", "WallDuration", "CpuDuration", "NumberOfJobs")
# Extra information of a job kept for reconciliation: APEL field -> key in `ParsedRecord.extra`.
JOB_EXTRA = {
    "MachineName": "machine_name", "Queue": "queue", "NodeCount": "node_count", "InfrastructureType": "infrastructure_type",
    "InfrastructureDescription": "infrastructure_description", "ServiceLevelType": "service_level_type",
    "ServiceLevel": "service_level", "MemoryVirtual": "memory_virtual_kb",
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class MessageType:
    """What a message header announces: job or summary records, their fields and the mandatory ones."""

    header: str
    summary: bool
    fields: dict[str, Converter | None]
    mandatory: tuple[str, ...]


MESSAGE_TYPES = {
    f"{JOB_HEADER}: v0.2": MessageType(f"{JOB_HEADER}: v0.2", False, JOB_FIELDS, JOB_MANDATORY),
    f"{JOB_HEADER}: v0.3": MessageType(f"{JOB_HEADER}: v0.3", False, JOB_FIELDS, JOB_MANDATORY),
    f"{SUMMARY_HEADER}: v0.2": MessageType(f"{SUMMARY_HEADER}: v0.2", True, SUMMARY_FIELDS, SUMMARY_MANDATORY),
    f"{SUMMARY_HEADER}: v0.3": MessageType(
        f"{SUMMARY_HEADER}: v0.3", True, NORMALISED_SUMMARY_FIELDS,
        SUMMARY_MANDATORY + ("NormalisedWallDuration", "NormalisedCpuDuration"),
    ),
}  # fmt: skip


@dataclass(slots=True)
class ParsedSummary:
    """One APEL summary record: a month of a site's jobs in one bucket (user, VO group and role, submit
    host, infrastructure, service level, node count, processors), as published; never split into jobs."""

    line: int
    site: str
    year: int
    month: int
    vo: str = ""
    vo_group: str = ""
    vo_role: str = ""
    person: str = ""
    fqan: str = ""  # summary messages carry VO, VOGroup and VORole, never an FQAN
    submit_host: str = ""
    infrastructure: str = ""
    service_level_type: str = ""
    service_level: float | None = None  # not in normalised (v0.3) summaries
    processors: int = 0
    node_count: int = 0
    number_of_jobs: int = 0
    wall_seconds: float = 0.0
    cpu_seconds: float = 0.0
    normalised_wall: float | None = None  # only in normalised (v0.3) summaries
    normalised_cpu: float | None = None
    earliest_end: datetime | None = None
    latest_end: datetime | None = None

    @property
    def natural_key(self) -> str:
        """The columns of the primary key of APEL's Summaries and NormalisedSummaries tables (schemas/server.sql)."""
        level = "" if self.service_level is None else f"{self.service_level:.3f}"  # DECIMAL(10,3) in APEL
        parts = (self.site, self.year, self.month, self.vo, self.vo_group, self.vo_role, self.person, self.submit_host,
                 self.infrastructure, self.service_level_type, level, self.node_count, self.processors)  # fmt: skip
        return "|".join(str(part) for part in parts)


@dataclass(slots=True)
class RawRecord:
    """The `Key: value` lines of one record, by key (a repeated key: the last wins, as in APEL), or the first
    problem that makes it unreadable."""

    line: int = 0
    fields: dict[str, tuple[int, str]] = field(default_factory=dict)
    problem: str = ""

    def add(self, number: int, raw: bytes | None) -> None:
        if raw is not None and not raw.strip():
            return
        self.line = self.line or number
        if self.problem:
            return
        if raw is None:
            self.problem = f"line {number} is longer than 1 MiB"
            return
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            self.problem = f"line {number} is not UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})"
            return
        key, sep, value = line.partition(":")
        if not sep or not key.strip():
            self.problem = f"line {number} is not a 'Key: value' line: {line[:80]!r}"
        elif len(self.fields) >= MAX_RECORD_FIELDS:
            self.problem = f"record longer than {MAX_RECORD_FIELDS} fields"
        else:
            self.fields[key.strip()] = (number, value.strip())


def read_header(lines: Iterator[tuple[int, bytes | None]]) -> MessageType | Rejection:
    """The message type named by the first non-blank line, or the Rejection of the whole file."""
    for number, raw in lines:
        if raw is not None and not raw.strip():
            continue
        header = (raw or b"").lstrip(LEADING_SPACE).decode("utf-8", "replace").strip()
        name, _, version = (part.strip() for part in header.partition(":"))
        message = MESSAGE_TYPES.get(f"{name}: {version}")
        if message is not None:
            return message
        if name in (JOB_HEADER, SUMMARY_HEADER):
            return Rejection(number, f"unsupported {name} version {version[:20]!r} (v0.2 and v0.3 are read)")
        return Rejection(number, f"not an APEL message: first line {header[:60]!r} is not a {JOB_HEADER} or "
                                 f"{SUMMARY_HEADER} header")  # fmt: skip
    return Rejection(1, "empty file: not an APEL message")


def iter_records(lines: Iterator[tuple[int, bytes | None]]) -> Iterator[RawRecord]:
    """The records after the header, split at `%%` lines; blank lines are ignored."""
    record = RawRecord()
    for number, raw in lines:
        if raw is not None and raw.strip() == b"%%":
            if record.line:
                yield record
            record = RawRecord()
            continue
        record.add(number, raw)
    if record.line:
        yield record


def convert(record: RawRecord, message: MessageType) -> dict[str, object]:
    """The record's present values, typed; ApelFormatError naming the field for anything APEL would refuse."""
    values: dict[str, object] = {}
    for key, (number, raw) in record.fields.items():
        if key not in message.fields:
            raise ApelFormatError(f"line {number}: unknown field {key!r} in an {message.header}")
        converter = message.fields[key]
        if converter is None or raw.lower() in NULLS:
            continue
        try:
            values[key] = converter(key, raw)
        except ApelFormatError as exc:
            raise ApelFormatError(f"line {number}: {exc}") from None
    missing = [name for name in message.mandatory if name not in values]
    if missing:
        raise ApelFormatError(f"missing mandatory field{'s' if len(missing) > 1 else ''} {', '.join(missing)}")
    return values


def vo_attributes(values: dict) -> tuple[str, str, str]:
    """(VO, VO group, VO role): from the first FQAN when it has APEL's `/vo[/group]/Role=...` form, else the
    VO, VOGroup and VORole fields."""
    fqan = values.get("FQAN", "").split(";")[0]
    pieces = [piece for piece in fqan.split("/") if piece]
    role_at = next((i for i, piece in enumerate(pieces) if piece.lower().startswith("role=")), 0)
    if fqan.startswith("/") and role_at:
        return pieces[0], "/" + "/".join(pieces[:role_at]), pieces[role_at]
    return values.get("VO", ""), values.get("VOGroup", ""), values.get("VORole", "")


def check_service_level(values: dict) -> None:
    """APEL's rule: a service level type and value together or neither, the type one APEL knows."""
    level_type, level = values.get("ServiceLevelType"), values.get("ServiceLevel")
    if (level_type is None) != (level is None):
        raise ApelFormatError("ServiceLevelType and ServiceLevel must be given together")
    if level_type is not None and level_type.lower() not in SERVICE_LEVEL_TYPES:
        raise ApelFormatError(f"ServiceLevelType {level_type[:40]!r} is not si2k, HEPSPEC or HEPscore23")


def job_record(values: dict, line: int) -> ParsedRecord:
    """An individual job message record as a batch job (see the module docstring)."""
    check_service_level(values)
    vo, vo_group, vo_role = vo_attributes(values)
    end = values["EndTime"]
    memory_mb = values.get("MemoryReal", 0) // 1024
    extra = {key: values[name] for name, key in JOB_EXTRA.items() if name in values}
    extra.update(vo_group=vo_group, vo_role=vo_role)
    return ParsedRecord(
        kind=RecordKind.BATCH,
        natural_key=f"{values['Site']}|{values['LocalJobId']}|{int(end.timestamp())}",
        start=values["StartTime"],
        end=end,
        wall_seconds=float(values["WallDuration"]),
        line=line,
        cores=values.get("Processors") or 1,
        memory_mb=memory_mb or None,
        cpu_user_seconds=float(values["CpuDuration"]),
        site=values["Site"],
        resource=values.get("SubmitHost", ""),
        vo=vo,
        person=values.get("GlobalUserName", ""),
        fqan=values.get("FQAN", ""),
        local_user=values.get("LocalUserId", ""),
        extra=extra,
    )


def month_bounds(year: int, month: int, now: datetime) -> tuple[datetime, datetime]:
    """First instants of the summary's month and of the next one; ApelFormatError for an impossible month."""
    if not 1 <= month <= 12:
        raise ApelFormatError(f"Month {month} is out of range")
    if year < EARLIEST.year:
        raise ApelFormatError(f"Year {year} is before {EARLIEST.year}")
    if (year, month) > (now.year, now.month):
        raise ApelFormatError(f"{year}-{month:02d} is in the future")
    following = datetime(year + month // 12, month % 12 + 1, 1, tzinfo=UTC)
    return datetime(year, month, 1, tzinfo=UTC), following


def check_summary(summary: ParsedSummary, now: datetime) -> None:
    """APEL's summary checks (end times within the month and in order), and no absurd totals."""
    first, following = month_bounds(summary.year, summary.month, now)
    for name, value in (("EarliestEndTime", summary.earliest_end), ("LatestEndTime", summary.latest_end)):
        if value is not None and not first <= value <= following:
            raise ApelFormatError(f"{name} {value:%Y-%m-%d %H:%M:%S} is not within {summary.year}-{summary.month:02d}")
    if summary.earliest_end and summary.latest_end and summary.earliest_end > summary.latest_end:
        raise ApelFormatError("LatestEndTime is earlier than EarliestEndTime")
    if summary.number_of_jobs > MAX_JOBS:
        raise ApelFormatError(f"absurd NumberOfJobs ({summary.number_of_jobs})")
    # A month's bucket may hold hours of jobs that end in a later month (exporters that spread hours by
    # the month they were spent, ours included) and so no ended job: allow one job's worth then.
    if summary.wall_seconds > max(summary.number_of_jobs, 1) * MAX_WALL_SECONDS:
        raise ApelFormatError(f"absurd WallDuration ({summary.wall_seconds:g} s for {summary.number_of_jobs} jobs)")
    if summary.processors > MAX_CORES:
        raise ApelFormatError(f"absurd Processors ({summary.processors})")


def summary_record(values: dict, line: int, now: datetime) -> ParsedSummary:
    """A summary message record, kept as a summary (v0.2 or normalised v0.3)."""
    normalised = "NormalisedWallDuration" in values
    summary = ParsedSummary(
        line=line,
        site=values["Site"],
        year=values["Year"],
        month=values["Month"],
        vo=values.get("VO", ""),
        vo_group=values.get("VOGroup", ""),
        vo_role=values.get("VORole", ""),
        person=values.get("GlobalUserName", ""),
        submit_host=values.get("SubmitHost", ""),
        infrastructure=values.get("InfrastructureType") or values.get("Infrastructure", ""),
        service_level_type=values.get("ServiceLevelType", ""),
        service_level=values.get("ServiceLevel"),
        processors=values.get("Processors", 0),
        node_count=values.get("NodeCount", 0),
        number_of_jobs=values["NumberOfJobs"],
        wall_seconds=float(values["WallDuration"]),
        cpu_seconds=float(values["CpuDuration"]),
        normalised_wall=float(values["NormalisedWallDuration"]) if normalised else None,
        normalised_cpu=float(values["NormalisedCpuDuration"]) if normalised else None,
        earliest_end=values.get("EarliestEndTime"),
        latest_end=values.get("LatestEndTime"),
    )
    check_summary(summary, now)
    return summary


def build(record: RawRecord, message: MessageType, context: ParseContext) -> ParsedRecord | ParsedSummary | Rejection:
    if record.problem:
        return Rejection(record.line, record.problem)
    try:
        values = convert(record, message)
        if message.summary:
            return summary_record(values, record.line, context.now)
        job = job_record(values, record.line)
        check_record(job, context.now)
    except (ApelFormatError, RecordInvalid) as exc:
        return Rejection(record.line, str(exc))
    return job


class APELParser(Parser):
    name = "apel"

    def detect(self, head: bytes, filename: str) -> bool:
        return head.lstrip(LEADING_SPACE).startswith((f"{JOB_HEADER}:".encode(), f"{SUMMARY_HEADER}:".encode()))

    def parse(
        self, stream: BinaryIO, filename: str, context: ParseContext
    ) -> Iterator[ParsedRecord | ParsedSummary | Rejection]:
        lines = iter_lines(stream)
        message = read_header(lines)
        if isinstance(message, Rejection):
            yield message
            return
        for record in iter_records(lines):
            yield build(record, message, context)
