"""`slurm`: `sacct -P` (or `-p`) output with its header line, e.g.

    TZ=UTC sacct -a -P -S 2024-03-01 -E 2024-03-02 --format=JobID,JobIDRaw,Cluster,User,Account,Partition,\\
        AllocCPUS,AllocTRES,ReqMem,Start,End,ElapsedRaw,TotalCPU,UserCPU,SystemCPU,State,ExitCode

Columns are found by their header names (any order, case ignored; a repeated header line, as in
concatenated `sacct` runs, is skipped). Required: `JobID` or `JobIDRaw`, `Start`, `End`, and a core count
(`AllocCPUS`, `NCPUS` or `AllocTRES`); a file without them is rejected whole on its header line.

- Only allocation lines are jobs: a step (`123.batch`, `123.extern`, `123.0`, `123.interactive`) is
  skipped, its usage being already in its job's line. Array tasks (`123_4`) and heterogeneous job parts
  (`123+0`) are jobs.
- Jobs that have not finished (`End` is `Unknown`/`None`: RUNNING, PENDING, REQUEUED...) and jobs that
  never started (`Start` is `Unknown`/`None`, e.g. cancelled while pending) are skipped without a
  rejection: they hold no usage yet, and the finished job is picked up by a later export.
- `Start`/`End` are `sacct`'s ISO times. Without an offset they are read as **UTC**, so run `sacct` with
  `TZ=UTC` (or `SLURM_TIME_FORMAT=%s`: epoch seconds are accepted too); an explicit offset is honoured.
- wall `ElapsedRaw`, else `Elapsed` (`[D-]HH:MM:SS`), else `End - Start`.
- CPU time is `TotalCPU` (`[D-]HH:MM:SS[.mmm]` or `MM:SS.mmm`), the CPU the job's processes really
  used, split into system `SystemCPU` and user (the rest); never `CPUTimeRAW`, which is only elapsed x
  cores. Without `TotalCPU`: `UserCPU` + `SystemCPU`.
- cores `AllocCPUS`, else `NCPUS`, else `cpu=` of `AllocTRES`; GPUs `gres/gpu=N` of `AllocTRES` (else the
  sum of typed `gres/gpu:<type>=N`); memory `mem=` of `AllocTRES`, else `ReqMem` (`4000Mc` per core,
  `4000Mn` per node, `16G` for the job; K/M/G/T/P are powers of 1024, no unit is MB).
- `ExitCode` `code:signal`: a non-zero signal is the exit signal, else the code is the exit code.
- local user `User`; project `Account`; resource `Cluster`; site `--site`; queue (`Partition`) in
  `extra["queue"]`.

Natural key: `slurm|<Cluster, else --site>|<JobIDRaw, else JobID>`. Job ids repeat across clusters, so a
file with no `Cluster` column is rejected whole unless `--site` names where it comes from.
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
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

UNKNOWN_TIMES = {"", "unknown", "none"}
DURATION = re.compile(r"(-?)(?:(\d{1,6})-)?(?:(\d{1,9}):)?(\d{1,9}):(\d{1,9}(?:\.\d{1,9})?)\Z")
INTEGER = re.compile(r"-?\d{1,15}\Z")
COUNT = re.compile(r"\d{1,9}\Z")
EPOCH = re.compile(r"\d{1,11}\Z")
EXIT_CODE = re.compile(r"(\d{1,9}):(\d{1,9})\Z")
MEMORY = re.compile(r"(\d{1,15}(?:\.\d{1,6})?)([KMGTP]?)([cn]?)\Z", re.IGNORECASE)
MEGABYTES_PER_UNIT = {"K": 1 / 1024, "M": 1, "G": 1024, "T": 1024**2, "P": 1024**3}
MAX_MEMORY_MB = 2**31 - 1
CORE_COLUMNS = ("alloccpus", "ncpus", "alloctres")


class SlurmFormatError(ValueError):
    pass


class SlurmParser(Parser):
    name = "slurm"

    def detect(self, head: bytes, filename: str) -> bool:
        for line in head.splitlines()[:5]:
            if line.strip():
                names = {name.strip().lower() for name in line.split(b"|")}
                return len(names) > 1 and bool(names & {b"jobid", b"jobidraw"})
        return False

    def parse(self, stream: BinaryIO, filename: str, context: ParseContext) -> Iterator[ParsedRecord | Rejection]:
        lines = iter_lines(stream)
        header = read_header(lines, context)
        if isinstance(header, Rejection):
            yield header
            return
        header_raw, columns = header
        for number, raw in lines:
            if raw is None:
                yield Rejection(number, "line longer than 1 MiB")
                continue
            if not raw.strip() or raw == header_raw:
                continue
            try:
                record = row_to_record(split_row(raw, columns), number, context)
                if record is None:
                    continue
                check_record(record, context.now)
            except (SlurmFormatError, RecordInvalid) as exc:
                yield Rejection(number, str(exc))
                continue
            yield record


def read_header(lines: Iterator[tuple[int, bytes | None]], context: ParseContext) -> tuple[bytes, list[str]] | Rejection:
    """The header line and its lower-case column names, or the Rejection of the whole file."""
    for number, raw in lines:
        if raw is not None and not raw.strip():
            continue
        if raw is None:
            return Rejection(number, "line longer than 1 MiB where the sacct header should be")
        try:
            columns = [name.strip().lower() for name in raw.decode("utf-8").split("|")]
        except UnicodeDecodeError:
            return Rejection(number, "not a sacct -P header (not UTF-8)")
        if columns[-1] == "" and len(columns) > 1:
            columns.pop()  # `sacct -p` ends every line with `|`
        problem = header_problem(columns, context)
        return Rejection(number, problem) if problem else (raw, columns)
    return Rejection(None, "empty file: no sacct -P header line")


def header_problem(columns: list[str], context: ParseContext) -> str:
    if not {"jobid", "jobidraw"} & set(columns):
        return "not a sacct -P header: no JobID or JobIDRaw column (was sacct run with -n?)"
    repeated = sorted(name for name, times in Counter(columns).items() if times > 1)
    if repeated:
        return f"sacct header repeats column {repeated[0][:60]!r}"
    missing = [name for name in ("start", "end") if name not in columns]
    if missing:
        return f"sacct header has no {missing[0]!r} column"
    if not set(CORE_COLUMNS) & set(columns):
        return "sacct header has no core count column (AllocCPUS, NCPUS or AllocTRES)"
    if "cluster" not in columns and not context.site:
        return "sacct output without a Cluster column needs --site: job ids repeat across clusters"
    return ""


def split_row(raw: bytes, columns: list[str]) -> dict[str, str]:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SlurmFormatError(f"not UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})") from None
    values = text.split("|")
    if len(values) == len(columns) + 1 and values[-1] == "":
        values.pop()
    if len(values) != len(columns):
        raise SlurmFormatError(f"{len(values)} fields where the header has {len(columns)}: {text[:80]!r}")
    return dict(zip(columns, (value.strip() for value in values), strict=True))


def row_to_record(row: dict[str, str], line: int, context: ParseContext) -> ParsedRecord | None:
    """The usage record of one allocation line; None for steps and unfinished or never-started jobs."""
    job_id = row.get("jobid") or row.get("jobidraw", "")
    if not job_id:
        raise SlurmFormatError("empty JobID")
    if "." in job_id:
        return None
    if row["start"].lower() in UNKNOWN_TIMES or row["end"].lower() in UNKNOWN_TIMES:
        return None
    cluster = row.get("cluster", "")
    if not (cluster or context.site):
        raise SlurmFormatError("empty Cluster and no --site given: job ids repeat across clusters")
    start, end = timestamp(row["start"], "Start"), timestamp(row["end"], "End")
    tres = parse_tres(row.get("alloctres", ""))
    cores = job_cores(row, tres)
    cpu_user, cpu_sys = cpu_seconds(row)
    exit_code, exit_signal = exit_status(row.get("exitcode", ""))
    partition = row.get("partition", "")
    return ParsedRecord(
        kind=RecordKind.BATCH,
        natural_key=f"slurm|{cluster or context.site}|{row.get('jobidraw') or job_id}",
        start=start,
        end=end,
        wall_seconds=wall_seconds(row, start, end),
        line=line,
        cores=cores,
        memory_mb=memory_mb(row, tres, cores),
        gpus=tres_gpus(tres),
        cpu_user_seconds=cpu_user,
        cpu_sys_seconds=cpu_sys,
        exit_code=exit_code,
        exit_signal=exit_signal,
        site=context.site,
        resource=cluster,
        local_user=row.get("user", ""),
        project=row.get("account", ""),
        extra={"queue": partition} if partition else {},
    )


def timestamp(value: str, name: str) -> datetime:
    """An ISO time (no offset: UTC) or epoch seconds (`SLURM_TIME_FORMAT=%s`)."""
    try:
        if EPOCH.match(value):
            return utc_from_epoch(int(value))
        moment = datetime.fromisoformat(value)
        return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    except (OverflowError, OSError, ValueError):
        raise SlurmFormatError(f"{name} is not a time: {value[:40]!r}") from None


def duration(value: str, name: str) -> float:
    """Seconds of `[D-][HH:]MM:SS[.mmm]` (sacct's Elapsed and *CPU columns); signed, for check_record."""
    match = DURATION.match(value)
    if match is None:
        raise SlurmFormatError(f"{name} is not a duration: {value[:40]!r}")
    sign, days, hours, minutes, seconds = match.groups()
    total = int(days or 0) * 86400 + int(hours or 0) * 3600 + int(minutes) * 60 + float(seconds)
    return -total if sign else total


def wall_seconds(row: dict[str, str], start: datetime, end: datetime) -> float:
    raw = row.get("elapsedraw", "")
    if raw:
        if not INTEGER.match(raw):
            raise SlurmFormatError(f"ElapsedRaw is not a number of seconds: {raw[:40]!r}")
        return float(raw)
    if row.get("elapsed"):
        return duration(row["elapsed"], "Elapsed")
    return (end - start).total_seconds()


def cpu_seconds(row: dict[str, str]) -> tuple[float, float]:
    """(user, system) CPU seconds: TotalCPU split by SystemCPU (see the module docstring)."""
    user = duration(row["usercpu"], "UserCPU") if row.get("usercpu") else 0.0
    system = duration(row["systemcpu"], "SystemCPU") if row.get("systemcpu") else 0.0
    total = duration(row["totalcpu"], "TotalCPU") if row.get("totalcpu") else user + system
    if total < 0 or system < 0:
        return total, system  # check_record names the negative value
    return max(total - system, 0.0), min(system, total)


def parse_tres(value: str) -> dict[str, str]:
    """`billing=8,cpu=8,gres/gpu=2,mem=32G,node=1` as a dict."""
    pairs = (item.partition("=") for item in value.split(",") if item)
    return {key.strip().lower(): number.strip() for key, _, number in pairs}


def count(value: str, name: str) -> int:
    if not COUNT.match(value):
        raise SlurmFormatError(f"{name} is not a count: {value[:40]!r}")
    return int(value)


def job_cores(row: dict[str, str], tres: dict[str, str]) -> int:
    for name, value in (("AllocCPUS", row.get("alloccpus")), ("NCPUS", row.get("ncpus")), ("AllocTRES cpu", tres.get("cpu"))):
        if value:
            return count(value, name)
    raise SlurmFormatError("no core count (AllocCPUS, NCPUS and AllocTRES cpu= are all empty)")


def tres_gpus(tres: dict[str, str]) -> int:
    if "gres/gpu" in tres:
        return count(tres["gres/gpu"], "AllocTRES gres/gpu")
    return sum(count(value, f"AllocTRES {key}") for key, value in tres.items() if key.startswith("gres/gpu:"))


def memory_mb(row: dict[str, str], tres: dict[str, str], cores: int) -> int | None:
    """Allocated memory in MB: AllocTRES `mem=`, else ReqMem (per core `c`, per node `n`); None when unknown."""
    value, name = (tres["mem"], "AllocTRES mem") if tres.get("mem") else (row.get("reqmem", ""), "ReqMem")
    if not value:
        return None
    match = MEMORY.match(value)
    if match is None:
        raise SlurmFormatError(f"{name} is not a memory size: {value[:40]!r}")
    amount, unit, per = match.groups()
    megabytes = float(amount) * MEGABYTES_PER_UNIT[unit.upper() or "M"]
    if per.lower() == "c":
        megabytes *= cores
    elif per.lower() == "n" and row.get("nnodes"):
        megabytes *= count(row["nnodes"], "NNodes")
    if megabytes > MAX_MEMORY_MB:
        raise SlurmFormatError(f"absurd {name} ({value[:40]})")
    return round(megabytes) or None


def exit_status(value: str) -> tuple[int | None, int | None]:
    if not value:
        return None, None
    match = EXIT_CODE.match(value)
    if match is None:
        raise SlurmFormatError(f"ExitCode is not code:signal: {value[:40]!r}")
    code, signal = int(match.group(1)), int(match.group(2))
    return (None, signal) if signal else (code, None)
