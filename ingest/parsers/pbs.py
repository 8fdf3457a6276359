"""`pbs`: PBS/Torque (and PBS Pro) server accounting logs, `server_priv/accounting/YYYYMMDD`.

Each line is `MM/DD/YYYY HH:MM:SS;<type>;<job id>;<key=value key=value ...>`. Only `E` (job ended)
records are jobs; every other type (`Q` queued, `S` started, `D` deleted, `A` aborted, `R` rerun, PBS
Pro `L` licence ...) is skipped without comment. The prefix time is the server's *local* time and is not
used: `start` and `end` are epoch seconds and say when the job ran, in UTC.

Mapping (as APEL's PBS parser, DOMAIN.md "Records"):
- local user `user`; project `account`, else PBS Pro `project` (not its `_pbs_project_default`); queue
  kept in `extra["queue"]`; site = `--site`; resource = the PBS server, the part of the job id after
  its first dot (`123.pbs01.example.org` -> `pbs01.example.org`).
- wall `resources_used.walltime` (`HH:MM:SS`, or seconds in Torque >= 5.1), else `end - start`;
  CPU `resources_used.cput` (same forms), all counted as user CPU (PBS does not split user and system).
- cores, the first present of: `resources_used.ncpus` (PBS Pro), `total_execution_slots` (Torque
  >= 5), the slots listed in `exec_host` (`h1/0-7+h2/0-7`, `h1/0*8`), `Resource_List.ncpus`,
  `Resource_List.nodes` (`2:ppn=8` is 16; `n1:ppn=4+n2:ppn=4` is 8; ppn defaults to 1); else 1.
- GPUs `Resource_List.ngpus`, else the `gpus=` of `Resource_List.nodes` (per node); memory
  `Resource_List.mem` (what was allocated), else `resources_used.mem`; sizes in b/kb/mb/gb/tb (and
  words, 8 bytes), no unit meaning bytes.
- `Exit_status` above 256 is a kill by signal `status - 256`; other values (negative ones are PBS's own
  start-up failures) are the exit code.

Natural key: `pbs|<server, else --site>|<job id>|<end epoch>` (the end epoch tells apart a job id the
server reused after a restart). An `E` record without `start` (a job that never ran, or a truncated
line) is rejected, as is one whose job id has no server part when no `--site` was given.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime
from typing import BinaryIO

from accounting.choices import RecordKind
from ingest.parsers.base import (
    ParseContext,
    ParsedRecord,
    Parser,
    RecordInvalid,
    Rejection,
    check_record,
    iter_lines,
    utc_from_epoch,
)

PREFIX = re.compile(rb"\d\d/\d\d/\d{4} \d\d:\d\d:\d\d;([A-Za-z]);")
LINE = re.compile(r"\d\d/\d\d/\d{4} \d\d:\d\d:\d\d;E;([^;]*);(.*)\Z")
DURATION = re.compile(r"(-?)(?:(\d{1,9}):(\d{1,2}):(\d{1,2})|(\d{1,12}))\Z")
EPOCH = re.compile(r"\d{1,11}\Z")
COUNT = re.compile(r"\d{1,6}\Z")
EXIT_STATUS = re.compile(r"-?\d{1,9}\Z")
SIZE = re.compile(r"(\d{1,18})([kmgtp]?[bw])?\Z", re.IGNORECASE)
BYTE_UNITS = {"b": 1, "kb": 1 << 10, "mb": 1 << 20, "gb": 1 << 30, "tb": 1 << 40, "pb": 1 << 50}
WORD_BYTES = 8
SIZE_BYTES = {"": 1, **BYTE_UNITS, **{unit[:-1] + "w": factor * WORD_BYTES for unit, factor in BYTE_UNITS.items()}}
MAX_MEMORY_MB = 2**31 - 1
DEFAULT_PROJECT = "_pbs_project_default"
SIGNAL_OFFSET = 256


class PBSFormatError(ValueError):
    pass


class PBSParser(Parser):
    name = "pbs"

    def detect(self, head: bytes, filename: str) -> bool:
        lines = [line for line in head.splitlines()[:40] if line.strip()]
        if len(lines) > 1:
            lines = lines[:-1]  # the last line of the head may be cut short
        return bool(lines) and sum(1 for line in lines if PREFIX.match(line)) >= 0.8 * len(lines)

    def parse(self, stream: BinaryIO, filename: str, context: ParseContext) -> Iterator[ParsedRecord | Rejection]:
        empty = True
        for number, raw in iter_lines(stream):
            if raw is None:
                empty = False
                yield Rejection(number, "line longer than 1 MiB")
                continue
            if not raw.strip():
                continue
            empty = False
            prefix = PREFIX.match(raw)
            if prefix is None:
                yield Rejection(number, f"not a PBS accounting record: {preview(raw)}")
                continue
            if prefix.group(1) != b"E":
                continue
            try:
                record = end_record(raw, number, context)
                check_record(record, context.now)
            except (PBSFormatError, RecordInvalid) as exc:
                yield Rejection(number, str(exc))
                continue
            yield record
        if empty:
            yield Rejection(None, "empty file: no PBS accounting records")


def preview(raw: bytes) -> str:
    return repr(raw[:80].decode("utf-8", errors="replace"))


def end_record(raw: bytes, line: int, context: ParseContext) -> ParsedRecord:
    """Map one `E` record to a usage record (see the module docstring for the attribute choices)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PBSFormatError(f"not UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})") from None
    match = LINE.match(text)
    if match is None:
        raise PBSFormatError(f"E record cut short (no attributes after the job id): {text[:80]!r}")
    job_id, attributes = match.group(1).strip(), parse_attributes(match.group(2))
    if not job_id:
        raise PBSFormatError("E record without a job id")
    server = job_id.partition(".")[2]
    if not (server or context.site):
        raise PBSFormatError(f"job id {job_id[:80]!r} names no server and no --site was given")
    if "start" not in attributes:
        raise PBSFormatError("no start time: the job never ran, or the line is truncated")
    if "end" not in attributes:
        raise PBSFormatError("no end time (truncated line?)")
    start_epoch, end_epoch = epoch(attributes, "start"), epoch(attributes, "end")
    start, end = to_datetime(start_epoch), to_datetime(end_epoch)
    wall = duration(attributes, "resources_used.walltime")
    exit_code, exit_signal = exit_status(attributes)
    cores, gpus = cores_and_gpus(attributes)
    return ParsedRecord(
        kind=RecordKind.BATCH,
        natural_key=f"pbs|{server or context.site}|{job_id}|{end_epoch}",
        start=start,
        end=end,
        wall_seconds=wall if wall is not None else float(end_epoch - start_epoch),
        line=line,
        cores=cores,
        gpus=gpus,
        memory_mb=memory_mb(attributes),
        cpu_user_seconds=duration(attributes, "resources_used.cput") or 0.0,
        exit_code=exit_code,
        exit_signal=exit_signal,
        site=context.site,
        resource=server,
        local_user=attributes.get("user", ""),
        project=project(attributes),
        extra={"queue": attributes["queue"]} if attributes.get("queue") else {},
    )


def parse_attributes(text: str) -> dict[str, str]:
    """`key=value` pairs separated by blanks, in one linear pass; a double-quoted value (PBS Pro) may hold
    blanks. Words without `=` are ignored, and a repeated key keeps its first value, so a job name such
    as `x user=mallory` cannot replace the real `user` that comes before it."""
    attributes: dict[str, str] = {}
    words = iter(text.split())
    for word in words:
        key, equals, value = word.partition("=")
        if value.startswith('"'):
            parts = [value]
            while not quote_closed(parts) and (following := next(words, None)) is not None:
                parts.append(following)
            value = " ".join(parts).removeprefix('"').removesuffix('"')
        if equals and key:
            attributes.setdefault(key, value)
    return attributes


def quote_closed(parts: list[str]) -> bool:
    """Whether the words of a value opened by `"` end with its closing quote."""
    return parts[-1].endswith('"') and (len(parts) > 1 or len(parts[0]) > 1)


def epoch(attributes: dict[str, str], name: str) -> int:
    value = attributes[name]
    if not EPOCH.match(value):
        raise PBSFormatError(f"{name} is not epoch seconds: {value[:40]!r}")
    return int(value)


def to_datetime(value: int) -> datetime:
    try:
        return utc_from_epoch(value)
    except (OverflowError, OSError, ValueError):
        raise PBSFormatError(f"time {value} is out of range") from None


def duration(attributes: dict[str, str], name: str) -> float | None:
    """`HH:MM:SS` (hours may exceed 24) or plain seconds; None when absent; signed, for check_record."""
    value = attributes.get(name)
    if value is None:
        return None
    match = DURATION.match(value)
    if match is None:
        raise PBSFormatError(f"{name} is not HH:MM:SS or seconds: {value[:40]!r}")
    sign, hours, minutes, seconds, plain = match.groups()
    total = int(plain) if plain is not None else int(hours) * 3600 + int(minutes) * 60 + int(seconds)
    return float(-total if sign else total)


def exit_status(attributes: dict[str, str]) -> tuple[int | None, int | None]:
    value = attributes.get("Exit_status")
    if value is None:
        return None, None
    if not EXIT_STATUS.match(value):
        raise PBSFormatError(f"Exit_status is not an integer: {value[:40]!r}")
    status = int(value)
    if status > SIGNAL_OFFSET:
        return None, status - SIGNAL_OFFSET
    return status, None


def count(attributes: dict[str, str], name: str) -> int | None:
    value = attributes.get(name)
    if value is None:
        return None
    if not COUNT.match(value):
        raise PBSFormatError(f"{name} is not a count: {value[:40]!r}")
    return int(value)


def cores_and_gpus(attributes: dict[str, str]) -> tuple[int, int]:
    """Cores and GPUs the job held, from the first attribute that says (module docstring order)."""
    nodes = attributes.get("Resource_List.nodes")
    node_cores, node_gpus = nodes_request(nodes) if nodes else (None, 0)
    cores = count(attributes, "resources_used.ncpus")
    if cores is None:
        cores = count(attributes, "total_execution_slots")
    if cores is None and attributes.get("exec_host"):
        cores = exec_host_slots(attributes["exec_host"])
    if cores is None:
        cores = count(attributes, "Resource_List.ncpus")
    if cores is None:
        cores = node_cores
    gpus = count(attributes, "Resource_List.ngpus")
    return (1 if cores is None else cores), (node_gpus if gpus is None else gpus)


def exec_host_slots(value: str) -> int:
    """Slots in `host/0-3,5+host2/0` (Torque) or `host/0*8` (PBS Pro); a host without `/` is one."""
    slots = 0
    for part in value.split("+"):
        spec = part.partition("/")[2]
        try:
            if not spec:
                slots += 1
            elif "*" in spec:
                slots += int(spec.partition("*")[2])
            else:
                slots += sum(range_size(item) for item in spec.split(","))
        except ValueError:
            raise PBSFormatError(f"unreadable exec_host part {part[:60]!r}") from None
    return slots


def range_size(item: str) -> int:
    """Slots in one exec_host item: `5` is one, `0-7` is eight; ValueError when unreadable."""
    low, dash, high = item.partition("-")
    first = int(low)
    last = int(high) if dash else first
    if last < first:
        raise ValueError(item)
    return last - first + 1


def nodes_request(value: str) -> tuple[int, int]:
    """(cores, GPUs) of `Resource_List.nodes`: `+`-joined `<count or host>[:ppn=M][:gpus=G][:property]`."""
    cores = gpus = 0
    for part in value.split("+"):
        head, *properties = part.split(":")
        nodes = int(head) if COUNT.match(head) else 1
        per_node = {"ppn": 1, "gpus": 0}
        for item in properties:
            key, _, number = item.partition("=")
            if key in per_node:
                if not COUNT.match(number):
                    raise PBSFormatError(f"Resource_List.nodes has an unreadable {key}: {part[:60]!r}")
                per_node[key] = int(number)
        cores += nodes * per_node["ppn"]
        gpus += nodes * per_node["gpus"]
    return cores, gpus


def memory_mb(attributes: dict[str, str]) -> int | None:
    """Allocated memory (`Resource_List.mem`), else used (`resources_used.mem`), in MB; None when absent or 0."""
    for name in ("Resource_List.mem", "resources_used.mem"):
        value = attributes.get(name)
        if value is None:
            continue
        match = SIZE.match(value)
        if match is None:
            raise PBSFormatError(f"{name} is not a size: {value[:40]!r}")
        megabytes = round(int(match.group(1)) * SIZE_BYTES[(match.group(2) or "").lower()] / (1 << 20))
        if megabytes > MAX_MEMORY_MB:
            raise PBSFormatError(f"absurd {name} ({value[:40]})")
        return megabytes or None
    return None


def project(attributes: dict[str, str]) -> str:
    account = attributes.get("account", "")
    if account:
        return account
    value = attributes.get("project", "")
    return "" if value == DEFAULT_PROJECT else value
