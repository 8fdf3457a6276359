"""`ncsa`: the NCSA Account Usage Data Format (version 1.01, as seed 004 describes it): a header record,
one data record per job and a trailer record with the totals.

The seed names the fields and their order but leaves the syntax open ("all data is represented as
strings; numbers in scientific notation"), so GridLedger reads, and its exporter writes, this layout:

- one record per line, fields separated by `|` (no field may contain `|` or a line break), the first
  field naming the record type: `H` header, `D` data, `T` trailer;
- numbers in decimal or scientific notation (the exporter writes `%.6E`, e.g. `1.250000E+00`); a field
  marked "may be NULL" may be empty or `NULL`, which counts as 0 in the totals;
- times `yyyymmdd:hhmmss` in UTC (the seed's "yyyyymmdd:hmmss" with its typos mended).

Header (seed Table 4), 7 fields:
    H|Charges|<machine id>|<period begin>|<period end>|<spare>|<SESS_ACCT or PROC_ACCT>
The first field after `H` must be `Charges` (the seed: "always must be Charges"; a `Refund` bundle is
rejected). The machine id names the charged system (the seed's Char*2; any non-empty text is taken).

Data (seed Table 3 in its order, then the Table 2 items Table 3 lacks), 16 fields:
    D|user|name|psn|queue|cpu|mem|conn|su|concurrency|service_type|sess_id|start|end|exec_host|submit_host

| field | meaning | GridLedger record |
|---|---|---|
| user | UNIX login name the job ran under | `local_user` |
| name | the user's identity (login name, DN or token subject) | `person` |
| psn | project (allocation) charged | `project` |
| queue | `interact`, `batch` or the batch queue's name | `extra["queue"]` |
| cpu | CPU time, hours, all processors | `cpu_user_seconds` (x 3600) |
| mem | average memory, MB; may be NULL | `memory_mb` |
| conn | connect time, hours; may be NULL | (checked and totalled only) |
| su | service units charged, hours; may be NULL | `extra["service_units"]` |
| concurrency | number of processors, a whole number; NULL is 1 | `cores` |
| service_type | usage type label | `extra["service_type"]` |
| sess_id | the job's unique id on the machine | natural key `ncsa|<machine id>|<sess_id>` |
| start, end | when the job ran | `start`, `end`; wall = end - start (seed Table 2) |
| exec_host | execution host | `resource` (empty: the machine id) |
| submit_host | submitting host | `extra["submit_host"]` |

The site is `--site`. A record whose end falls outside the header's accounting period is rejected.

Trailer (seed Table 5, preceded by the record count), 6 fields:
    T|<record count>|totalcpu|totalmem|totalconn|totalsu
where the count is the number of non-blank lines between the header and the trailer (every one of them
is a data record) and each total is the sum of its field over the data records (totalmem, totalconn and totalsu
may be NULL, meaning 0).

Integrity: the trailer is checked against the data records: the count exactly, the totals to 6
significant digits (sums over the records whose fields and numbers can be read, so a record garbled in
its numbers, or cut short, makes them disagree when the trailer counted it). A section whose trailer disagrees is rejected **whole**: no record
of it is taken, one rejection on the trailer line gives the declared and the counted numbers (after the
rejections of its unreadable lines). So is a section without a trailer (the file ends, or the next header
comes first), with an unreadable or `Refund` header, or with more than MAX_SECTION_RECORDS records.
Records that read well but break the record rules (future date, end before start...) are rejected one by
one, and the rest of a verified section is taken. A file may hold several header-to-trailer sections
(concatenated logs), each verified alone; lines outside a section are rejected up to the next header.

A line longer than 1 MiB (base.MAX_LINE_BYTES) between a header and its trailer is read through in chunks,
never held, and counts as a data record whose numbers cannot be read: it is rejected on its own line and left
out of the sums. A trailer that totalled it (what a producer writes) then disagrees, and the section is
rejected whole as above, the long line's rejection first; the other sections of the file are still taken.

Data records wait in a spooled temporary file (in memory up to SPOOL_MEMORY_BYTES, then on disk) until
their trailer is verified, and are then read again: memory stays bounded whatever the bundle's size.
"""
from __future__ import annotations

import math
import re
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import BinaryIO

from accounting.choices import RecordKind
from ingest.parsers.base import ParseContext, ParsedRecord, Parser, RecordInvalid, Rejection, check_record, iter_lines

HEADER_FIELDS = ("type", "kind", "machine", "period_begin", "period_end", "spare", "accounting")
DATA_FIELDS = (
    "type", "user", "name", "psn", "queue", "cpu", "mem", "conn", "su", "concurrency", "service_type", "sess_id",
    "start", "end", "exec_host", "submit_host",
)  # fmt: skip
TRAILER_FIELDS = ("type", "count", "totalcpu", "totalmem", "totalconn", "totalsu")
SUMMED = ("cpu", "mem", "conn", "su")
NULLABLE = {"mem", "conn", "su", "concurrency", "totalmem", "totalconn", "totalsu"}
ACCOUNTING_KINDS = {"SESS_ACCT", "PROC_ACCT"}
TIME_FORMAT = "%Y%m%d:%H%M%S"
TIME = re.compile(r"\d{8}:\d{6}\Z")
NUMBER = re.compile(r"[+-]?(?:\d{1,30}(?:\.\d{0,30})?|\.\d{1,30})(?:[eE][+-]?\d{1,4})?\Z")
RELATIVE_TOLERANCE = 1e-6
MAX_SECTION_RECORDS = 2_000_000
MAX_MEMORY_MB = 2**31 - 1
SPOOL_MEMORY_BYTES = 16 * 1024 * 1024


class NCSAFormatError(ValueError):
    pass


@dataclass(slots=True)
class Header:
    machine: str
    period_begin: datetime
    period_end: datetime


class NCSAParser(Parser):
    name = "ncsa"

    def detect(self, head: bytes, filename: str) -> bool:
        for line in head.splitlines()[:5]:
            if line.strip():
                return line.startswith((b"H|Charges|", b"H|Refund|"))
        return False

    def parse(self, stream: BinaryIO, filename: str, context: ParseContext) -> Iterator[ParsedRecord | Rejection]:
        reader = SectionReader(context)
        for number, raw in iter_lines(stream):
            yield from reader.feed(number, raw)
        yield from reader.finish()


def split(raw: bytes, fields: tuple[str, ...], what: str) -> dict[str, str]:
    try:
        values = raw.decode("utf-8").split("|")
    except UnicodeDecodeError as exc:
        raise NCSAFormatError(f"not UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})") from None
    if values[0] != what:
        raise NCSAFormatError(f"not a {what} record: {raw[:60].decode('utf-8', errors='replace')!r}")
    if len(values) != len(fields):
        raise NCSAFormatError(f"{what} record has {len(values)} fields, not {len(fields)}")
    return dict(zip(fields, (value.strip() for value in values), strict=True))


def number(record: dict[str, str], name: str) -> float | None:
    value = record[name]
    if name in NULLABLE and value.upper() in ("", "NULL"):
        return None
    if not NUMBER.match(value):
        raise NCSAFormatError(f"{name} is not a number: {value[:40]!r}")
    result = float(value)
    if not math.isfinite(result):
        raise NCSAFormatError(f"{name} is out of range: {value[:40]!r}")
    return result


def moment(record: dict[str, str], name: str) -> datetime:
    value = record[name]
    try:
        if not TIME.match(value):
            raise ValueError(value)
        return datetime.strptime(value, TIME_FORMAT).replace(tzinfo=UTC)
    except ValueError:
        raise NCSAFormatError(f"{name} is not a yyyymmdd:hhmmss time: {value[:40]!r}") from None


def read_header(raw: bytes) -> Header:
    record = split(raw, HEADER_FIELDS, "H")
    if record["kind"] != "Charges":
        raise NCSAFormatError(f"header kind {record['kind'][:20]!r}: only Charges bundles are accounted")
    if not record["machine"]:
        raise NCSAFormatError("header has no machine id")
    if record["accounting"] not in ACCOUNTING_KINDS:
        raise NCSAFormatError(f"header accounting type {record['accounting'][:20]!r} is not SESS_ACCT or PROC_ACCT")
    begin, end = moment(record, "period_begin"), moment(record, "period_end")
    if end < begin:
        raise NCSAFormatError("header period ends before it begins")
    return Header(record["machine"], begin, end)


def read_data(raw: bytes) -> tuple[dict[str, str], dict[str, float | None]]:
    """A data record's fields and its numbers (NULL as None): what the trailer totals are checked against."""
    record = split(raw, DATA_FIELDS, "D")
    return record, {name: number(record, name) for name in (*SUMMED, "concurrency")}


def read_trailer(raw: bytes) -> tuple[int, dict[str, float]]:
    record = split(raw, TRAILER_FIELDS, "T")
    count = number(record, "count")
    if count is None or count < 0 or not count.is_integer():
        raise NCSAFormatError(f"trailer record count is not a whole number: {record['count'][:40]!r}")
    return int(count), {name: number(record, f"total{name}") or 0.0 for name in SUMMED}


def data_record(raw: bytes, line: int, header: Header, context: ParseContext) -> ParsedRecord:
    """The usage record of one data record (field table in the module docstring)."""
    text, numbers = read_data(raw)
    if not text["sess_id"]:
        raise NCSAFormatError("data record without sess_id")
    start, end = moment(text, "start"), moment(text, "end")
    for name in SUMMED:
        if (numbers[name] or 0.0) < 0:
            raise NCSAFormatError(f"negative {name} ({numbers[name]:g})")
    if not header.period_begin <= end <= header.period_end:
        raise NCSAFormatError(f"end {end.isoformat()} is outside the header's accounting period")
    concurrency = numbers["concurrency"]
    if concurrency is not None and not concurrency.is_integer():
        raise NCSAFormatError(f"concurrency is not a whole number of processors ({concurrency:g})")
    memory = numbers["mem"]
    if memory is not None and memory > MAX_MEMORY_MB:
        raise NCSAFormatError(f"absurd mem ({memory:g} MB)")
    extra = {"service_units": numbers["su"]}
    extra.update((name, text[name]) for name in ("queue", "service_type", "submit_host") if text[name])
    return ParsedRecord(
        kind=RecordKind.BATCH,
        natural_key=f"ncsa|{header.machine}|{text['sess_id']}",
        start=start,
        end=end,
        wall_seconds=(end - start).total_seconds(),
        line=line,
        cores=1 if concurrency is None else int(concurrency),
        memory_mb=(round(memory) or None) if memory is not None else None,
        cpu_user_seconds=numbers["cpu"] * 3600.0,
        site=context.site,
        resource=text["exec_host"] or header.machine,
        person=text["name"],
        project=text["psn"],
        local_user=text["user"],
        extra=extra,
    )


def agree(declared: float, counted: float) -> bool:
    return abs(declared - counted) <= RELATIVE_TOLERANCE * max(abs(declared), abs(counted)) + 1e-12


class Section:
    """The data records of one header, spooled until the trailer says whether they are complete."""

    def __init__(self, header: Header, line: int) -> None:
        self.header = header
        self.line = line
        self.count = 0
        self.sums = dict.fromkeys(SUMMED, 0.0)
        self.spool = tempfile.SpooledTemporaryFile(max_size=SPOOL_MEMORY_BYTES)

    def add(self, number: int, raw: bytes | None) -> None:
        """Keep one data line (None: longer than 1 MiB) and add its numbers to the sums when it reads."""
        self.count += 1
        if raw is None:
            self.spool.write(b"%d\n" % number)
            return
        self.spool.write(b"%d\t%s\n" % (number, raw))
        try:
            numbers = read_data(raw)[1]
        except NCSAFormatError:
            return
        for name in SUMMED:
            self.sums[name] += numbers[name] or 0.0

    def mismatches(self, count: int, totals: dict[str, float]) -> list[str]:
        problems = [f"record count {count} but {self.count} data records"] if count != self.count else []
        for name in SUMMED:
            if not agree(totals[name], self.sums[name]):
                problems.append(f"total{name} {totals[name]:.7g} but the records sum to {self.sums[name]:.7g}")
        return problems

    def replay(self, context: ParseContext) -> Iterator[ParsedRecord | Rejection]:
        """The spooled lines again, in file order, as records or rejections."""
        self.spool.seek(0)
        for entry in self.spool:
            number_text, tab, raw = entry[:-1].partition(b"\t")
            number = int(number_text)
            if not tab:
                yield Rejection(number, "line longer than 1 MiB")
                continue
            try:
                record = data_record(raw, number, self.header, context)
                check_record(record, context.now)
            except (NCSAFormatError, RecordInvalid) as exc:
                yield Rejection(number, str(exc))
                continue
            yield record

    def reject(self, line: int, reason: str, context: ParseContext) -> Iterator[Rejection]:
        """The whole section refused: its lines' own rejections, then `reason` on `line`."""
        yield from (item for item in self.replay(context) if isinstance(item, Rejection))
        yield Rejection(line, f"{reason}; the whole bundle (header on line {self.line}) is rejected")
        self.spool.close()


class SectionReader:
    """Walks the lines of a file: outside a section, inside one, or skipping a broken one to its trailer."""

    def __init__(self, context: ParseContext) -> None:
        self.context = context
        self.section: Section | None = None
        self.skipping = False
        self.last_line = 0
        self.empty = True

    def feed(self, number: int, raw: bytes | None) -> Iterator[ParsedRecord | Rejection]:
        self.last_line = number
        if raw is not None and not raw.strip():
            return
        self.empty = False
        kind = raw[:2] if raw is not None else b""
        if self.section is not None:
            yield from self.inside(number, raw, kind)
        elif kind == b"H|":
            yield from self.open(number, raw)
        elif self.skipping:
            self.skipping = kind != b"T|"
        else:
            self.skipping = True
            problem = "line longer than 1 MiB" if raw is None else "expected a header record (H|Charges|...)"
            yield Rejection(number, f"{problem}; lines up to the next header are skipped")

    def inside(self, number: int, raw: bytes | None, kind: bytes) -> Iterator[ParsedRecord | Rejection]:
        section = self.section
        if kind == b"T|":
            self.section = None
            yield from self.close(section, number, raw)
        elif kind == b"H|":
            self.section = None
            yield from section.reject(section.line, f"no trailer record before the next header on line {number}", self.context)
            yield from self.open(number, raw)
        elif section.count >= MAX_SECTION_RECORDS:
            self.section, self.skipping = None, True
            yield from section.reject(number, f"more than {MAX_SECTION_RECORDS} data records", self.context)
        else:
            section.add(number, raw)

    def open(self, number: int, raw: bytes) -> Iterator[Rejection]:
        try:
            self.section = Section(read_header(raw), number)
        except NCSAFormatError as exc:
            self.skipping = True
            yield Rejection(number, f"unreadable header: {exc}; lines up to its trailer are skipped")

    def close(self, section: Section, number: int, raw: bytes) -> Iterator[ParsedRecord | Rejection]:
        try:
            count, totals = read_trailer(raw)
        except NCSAFormatError as exc:
            yield from section.reject(number, f"unreadable trailer: {exc}", self.context)
            return
        problems = section.mismatches(count, totals)
        if problems:
            yield from section.reject(number, "trailer totals disagree with the data records: " + "; ".join(problems), self.context)
            return
        yield from section.replay(self.context)
        section.spool.close()

    def finish(self) -> Iterator[Rejection]:
        if self.section is not None:
            reason = f"the file ends at line {self.last_line} without a trailer record"
            yield from self.section.reject(self.last_line, reason, self.context)
        elif self.empty:
            yield Rejection(None, "empty file: no NCSA header record")
