"""`snapshot`: site capacity and demand over time, what categories 7 (provisioning bottleneck) and 8
(insufficient demand) are computed from (DOMAIN.md "Canonical units and the eight categories", seed 002).

A CSV file: UTF-8 (a byte-order mark is allowed), comma-separated, double-quote quoting, one row per line,
a header row first:

    timestamp,site,idle_cores,pilots_queued,idle_jobs,resource,vo,idle_slots,pledged_cores
    2024-03-01T12:00:00Z,SITE_A,120,4,350,ce01.site-a.org,cms,,2000
    2024-03-01T12:10:00Z,SITE_A,0,10,500,ce01.site-a.org,cms,,2000

| column | required | meaning |
|---|---|---|
| timestamp | yes | the instant observed: ISO 8601 with `Z` or an offset (converted to UTC); a time without an offset is rejected |
| site | yes | the site observed (not empty) |
| idle_cores | yes | cores at the site free at that instant: capacity a pilot could have taken |
| pilots_queued | yes | pilots (glideins) sent to the site and still waiting in its queue |
| idle_jobs | yes | user jobs idle on the submit hosts that could run at the site |
| resource | no | the CE or factory entry observed; empty: the whole site |
| vo | no | the VO the demand counts are for; empty: all VOs |
| idle_slots | no | idle batch slots, for sites that count slots rather than cores; empty: unknown |
| pledged_cores | no | cores pledged at the site (to the VO, when `vo` is given); empty: unknown |

Columns may come in any order; names are matched ignoring case and surrounding blanks. A missing required
column, an unknown column or a repeated one rejects the whole file on the header line, naming the column.
Counts are whole numbers of ASCII digits, 0 to MAX_COUNT. Site, resource and VO names are at most
MAX_NAME characters (the length of the mapping tables' names). A timestamp before 1995 or more than a
day after the ingest is rejected.

Meaning: a snapshot holds from its timestamp until the next snapshot of the same (site, resource, vo).
While it holds, idle capacity is a provisioning bottleneck (category 7) when `idle_jobs` > 0 (jobs were
waiting that could have run there: not enough pilots were sent) and insufficient demand (category 8) when
`idle_jobs` is 0.

These are not job records: the parser yields `ParsedSnapshot`s (and `Rejection`s), whose natural key
`<timestamp ISO>|<site>|<resource>|<vo>` makes a re-sent snapshot a duplicate.
"""
from __future__ import annotations

import csv
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import BinaryIO

from ingest.parsers.base import EARLIEST, FUTURE_SLACK, ParseContext, Parser, Rejection, iter_lines

REQUIRED = ("timestamp", "site", "idle_cores", "pilots_queued", "idle_jobs")
OPTIONAL = ("resource", "vo", "idle_slots", "pledged_cores")
COUNT = re.compile(r"[0-9]{1,9}\Z")
MAX_COUNT = 10_000_000
MAX_NAME = 200
BOM = b"\xef\xbb\xbf"


class SnapshotFormatError(ValueError):
    pass


@dataclass(slots=True)
class ParsedSnapshot:
    """A site's idle capacity and the demand for it at one instant (module docstring)."""

    line: int
    timestamp: datetime
    site: str
    resource: str
    vo: str
    idle_cores: int
    pilots_queued: int
    idle_jobs: int
    pledged_cores: int | None
    idle_slots: int | None

    @property
    def natural_key(self) -> str:
        return f"{self.timestamp.isoformat()}|{self.site}|{self.resource}|{self.vo}"


class SnapshotParser(Parser):
    name = "snapshot"

    def detect(self, head: bytes, filename: str) -> bool:
        for line in head.removeprefix(BOM).splitlines()[:5]:
            if line.strip():
                names = {name.strip().lower() for name in line.split(b",")}
                return {b"timestamp", b"site"} <= names and bool(names & {b"idle_cores", b"pilots_queued", b"idle_jobs"})
        return False

    def parse(self, stream: BinaryIO, filename: str, context: ParseContext) -> Iterator[ParsedSnapshot | Rejection]:
        lines = iter_lines(stream)
        columns = read_header(lines)
        if isinstance(columns, Rejection):
            yield columns
            return
        for number, raw in lines:
            if raw is None:
                yield Rejection(number, "line longer than 1 MiB")
                continue
            if not raw.strip():
                continue
            try:
                yield read_row(raw, number, columns, context)
            except SnapshotFormatError as exc:
                yield Rejection(number, str(exc))


def csv_fields(raw: bytes) -> list[str]:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SnapshotFormatError(f"not UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})") from None
    try:
        return next(csv.reader([text], strict=True))
    except csv.Error as exc:
        raise SnapshotFormatError(f"not a CSV row ({exc}): {text[:80]!r}") from None


def read_header(lines: Iterator[tuple[int, bytes | None]]) -> list[str] | Rejection:
    """The header's column names, or the Rejection of the whole file naming the faulty column."""
    for number, raw in lines:
        if raw is None:
            return Rejection(number, "line longer than 1 MiB where the snapshot header should be")
        if not raw.strip():
            continue
        try:
            columns = [name.strip().lower() for name in csv_fields(raw.removeprefix(BOM))]
        except SnapshotFormatError as exc:
            return Rejection(number, f"unreadable snapshot header: {exc}")
        problem = header_problem(columns)
        return Rejection(number, problem) if problem else columns
    return Rejection(None, "empty file: no snapshot header")


def header_problem(columns: list[str]) -> str:
    seen: set[str] = set()
    for name in columns:
        if name not in REQUIRED and name not in OPTIONAL:
            return f"unknown column {name[:60]!r} (known: {', '.join(REQUIRED + OPTIONAL)})"
        if name in seen:
            return f"column {name!r} appears twice"
        seen.add(name)
    missing = [name for name in REQUIRED if name not in seen]
    return f"missing required column {missing[0]!r}" if missing else ""


def read_row(raw: bytes, line: int, columns: list[str], context: ParseContext) -> ParsedSnapshot:
    values = csv_fields(raw)
    if len(values) != len(columns):
        raise SnapshotFormatError(f"{len(values)} fields where the header has {len(columns)}")
    row = {name: value.strip() for name, value in zip(columns, values, strict=True)}
    if not row["site"]:
        raise SnapshotFormatError("empty site")
    for name in ("site", "resource", "vo"):
        if len(row.get(name, "")) > MAX_NAME:
            raise SnapshotFormatError(f"{name} longer than {MAX_NAME} characters")
    return ParsedSnapshot(
        line=line,
        timestamp=timestamp(row["timestamp"], context),
        site=row["site"],
        resource=row.get("resource", ""),
        vo=row.get("vo", ""),
        idle_cores=count(row, "idle_cores"),
        pilots_queued=count(row, "pilots_queued"),
        idle_jobs=count(row, "idle_jobs"),
        pledged_cores=optional_count(row, "pledged_cores"),
        idle_slots=optional_count(row, "idle_slots"),
    )


def timestamp(value: str, context: ParseContext) -> datetime:
    try:
        moment = datetime.fromisoformat(value)
        if moment.tzinfo is not None:
            moment = moment.astimezone(UTC)
    except (OverflowError, ValueError):
        raise SnapshotFormatError(f"timestamp is not an ISO 8601 time in range: {value[:40]!r}") from None
    if moment.tzinfo is None:
        raise SnapshotFormatError(f"timestamp {value[:40]!r} has no UTC offset (write e.g. 2024-03-01T12:00:00Z)")
    if moment < EARLIEST:
        raise SnapshotFormatError(f"timestamp {moment.isoformat()} is before 1995")
    if moment > context.now + FUTURE_SLACK:
        raise SnapshotFormatError(f"timestamp {moment.isoformat()} is in the future")
    return moment


def count(row: dict[str, str], name: str) -> int:
    value = row[name]
    if not COUNT.match(value) or int(value) > MAX_COUNT:
        raise SnapshotFormatError(f"{name} is not a whole number from 0 to {MAX_COUNT}: {value[:40]!r}")
    return int(value)


def optional_count(row: dict[str, str], name: str) -> int | None:
    return count(row, name) if row.get(name) else None
