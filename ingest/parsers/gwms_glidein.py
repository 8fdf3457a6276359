"""`gwms-glidein`: a glidein's stdout as the factory keeps it (`entry_<name>/job.<cluster>.<proc>.out`), with
the startd history packed in its stderr (`job.<cluster>.<proc>.err`) when that file lies beside it.

What job.out says (glideinwms `glidein_startup.sh`, `condor_startup.sh`, `parse_starterlog.awk`; the factory
reads the same lines in `factory/glideFactoryLogParser.py`):
- header `name = 'value'` lines: `condorg_schedd`, `condorg_cluster`, `condorg_subcluster` (the glidein's
  Condor-G job at the factory), `glidein_entry` (factory entry), `client_name` (frontend client);
- `Starting glidein_startup.sh at <date> (<epoch>)`: the glidein's start (old versions print no epoch);
- the configuration dump, `NAME value` lines: `GLIDEIN_Site`, `GLIDEIN_ResourceName`, `GLIDEIN_CPUS`,
  `GLIDEIN_MaxMemMBs`; the setup scripts' resolved `Setting GLIDEIN_CPUS=N` / `Setting GLIDEIN_MaxMemMBs=N`;
- `=== Last script starting ... after validating for N ===`: N seconds of validation before HTCondor;
- `=== Condor starting ... ===` (or `=== Condor started ...`): HTCondor was started;
- `=== Condor ended ... after N ===`: HTCondor ran N seconds (missing when the glidein was killed);
- the `=== Stats of main ===` block: `(Real) Total [kind] jobs N ... utilization S` and `(Normalized)` lines
  (normalised = divided by GLIDEIN_CPUS); older versions print them without prefix (normalised when the
  "normalized to 1 Core" note precedes the block); often empty (no StarterLog);
- `Total number of activations/claims: N`: job runs the startd activated;
- `=== Glidein ending <date> (<epoch>) with code C after N ===`: the glidein lived N seconds;
- `=== XML description of glidein activity ===` ... `=== End ... ===`: an `<OSGTestResult>` whose `<result>`
  has the `<status>` (OK / ERROR), `<metric name=...>` values (CondorDuration, TotalJobsNr, failure, ...)
  and a `<detail>` text on failure. It is parsed with defusedxml: a DTD or an entity declaration is refused.
Markers are matched with any number of blanks after `===` (newer glideins print `===  Glidein ending`).

The record is one `pilot`, keyed `<condorg_schedd>#<condorg_cluster>.<condorg_subcluster>` (the key payloads
carry in MATCH_EXP_JOB_GLIDEIN_Schedd/ClusterId/ProcId). start = the start epoch, end = start + the ending's
"after N" (without a start epoch: end = the ending epoch, start = end - N); wall = N. site = GLIDEIN_Site
(else the caller's `--site`), resource = GLIDEIN_ResourceName else the entry; cores = GLIDEIN_CPUS (1 when
absent or not a number: auto, node, slot), memory = GLIDEIN_MaxMemMBs. `PilotInfo.glidein_name` is the first
`glidein_<pid>_<rand>@host` startd name the log shows, else "". A log without its `Glidein ending` line was
cut (the glidein is still running, or the transfer failed) and is rejected; so is a log whose lines that this
parser reads are not UTF-8 or whose XML part is refused. Other lines (script chatter) are not read.

`record.extra`:
- `glidein_exit_code`: the code of the `Glidein ending` line;
- `stats`: `{"real"|"normalized": {"Total"|"goodZ"|"goodNZ"|"badSignal"|"badOther": {"jobs", "seconds"}}}`
  from the Stats block, `{}` when it is empty;
- `result`: `{"status", "metrics": {name: text}, "detail"}` from the XML part (detail cut at 4000
  characters); absent when the log has no complete XML part;
- `runs`: the payload runs of the startd history in the `.err` (see below); absent when there is no `.err`
  or no `StartdHistoryLog` in it, so that the accounting engine falls back to its estimated mode.

The `.err` (`condor_startup.sh` `cond_print_log`): after HTCondor ends, each log is written as
`<name>` / `======== gzip | uuencode =============` / `begin-base64 644 -` / base64 lines / `====`. The
`StartdHistoryLog` one holds one HTCondor job ClassAd per payload run in this pilot (the startd's history,
`*** ` banners), read with `htcondor_history.iter_ads`. Each run: `global_job_id`, `start`/`end` (UTC;
end = CompletionDate, start = end - RemoteWallClockTime, both set by the starter when the job left it),
`cores`/`memory_mb`/`gpus` (…Provisioned, else Request…; 1 / None / 0 when not numbers), `exit_code` or
`exit_signal`, `badput_preemption` / `badput_draining` (BadputCausedByPreemption / ...ByDraining: the job was
still running when the slot was preempted or drained), `starter_exit_status`. The base64 text and the
decompressed history are each capped at 64 MiB (a zip bomb stops there). If that block cannot be read whole,
the pilot is still yielded, without `runs` (a partial history would misplace hours), followed by a
`Rejection(None, ...)` naming the `.err` line and the reason.
"""

from __future__ import annotations

import binascii
import math
import re
import zlib
from collections.abc import Iterator
from datetime import datetime
from io import BytesIO
from pathlib import Path
from typing import BinaryIO
from xml.etree.ElementTree import ParseError

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import fromstring

from accounting.choices import RecordKind
from ingest.parsers.base import (
    MAX_WALL_SECONDS,
    ParseContext,
    ParsedRecord,
    Parser,
    PilotInfo,
    RecordInvalid,
    Rejection,
    check_record,
    iter_lines,
    utc_from_epoch,
)
from ingest.parsers.htcondor_history import (
    GLIDEIN_HOST,
    HistoryFormatError,
    first_number,
    is_true,
    iter_ads,
    number,
    text,
)

MAX_HISTORY_BYTES = 64 * 1024 * 1024
MAX_XML_BYTES = 1024 * 1024
MAX_MARKER_LINE = 64 * 1024  # longer lines are script output, never a marker
MAX_DETAIL_CHARS = 4000
LATEST_EPOCH = 253402300799  # 9999-12-31T23:59:59Z
HISTORY_LOG_NAME = b"StartdHistoryLog"
HISTORY_FRAMING = (b"======== gzip", b"begin-base64")

JOB_OUT_NAME = re.compile(r"(job\.\d+\.\d+)\.out\Z")
HEADER = re.compile(
    r"(condorg_cluster|condorg_subcluster|condorg_schedd|glidein_entry|client_name)\s*=\s*'([^']*)'\s*$"
)
START = re.compile(r"Starting glidein_startup\.sh at\b(.*)$")
EPOCH = re.compile(r"\((-?\d+)\)")
VALIDATED = re.compile(r"===\s+Last script starting\b.*\bafter validating for (-?\d+)\s*===\s*$")
CONDOR_STARTING = re.compile(r"===\s+Condor start(?:ing|ed)\b")
CONDOR_ENDED = re.compile(r"===\s+Condor ended\b.*\bafter (-?\d+)\s*===\s*$")
STATS_BEGIN = re.compile(r"===\s+Stats of (\S+)\s*===\s*$")
STATS_END = re.compile(r"===\s+End Stats of (\S+)\s*===\s*$")
STATS_LINE = re.compile(r"(?:\((Real|Normalized)\)\s+)?Total\s+(?:(\w+)\s+)?jobs\s+(\d+)\b.*\butilization\s+(\d+)")
NORMALIZED_NOTE = re.compile(r"\bnormalized to 1 Core\b")
CLAIMS = re.compile(r"Total number of activations/claims:\s*(\d+)\s*$")
ENDING = re.compile(r"===\s+Glidein ending\b(.*)\bwith code (-?\d+) after (-?\d+)\s*===\s*$")
XML_BEGIN = re.compile(r"===\s+XML description of glidein activity\s*===\s*$")
XML_END = re.compile(r"===\s+End XML description of glidein activity\s*===\s*$")
SETTING = re.compile(r"\bSetting (GLIDEIN_CPUS|GLIDEIN_MaxMemMBs)=(\S*)")
CONSTANT = re.compile(r"(GLIDEIN_CPUS|GLIDEIN_MaxMemMBs|GLIDEIN_Site|GLIDEIN_ResourceName)\s+(\S.*)$")
POSITIVE = re.compile(r"[0-9]{1,9}\Z")


class GlideinLogError(ValueError):
    """A job.out that cannot give a pilot record: where (line, None for the whole file) and why."""

    def __init__(self, line: int | None, reason: str) -> None:
        super().__init__(reason)
        self.line = line
        self.reason = reason


class HistoryBlockError(GlideinLogError):
    """The `.err`'s StartdHistoryLog block cannot be read whole; `line` is a line of the `.err`."""


class GWMSGlideinParser(Parser):
    name = "gwms-glidein"

    def detect(self, head: bytes, filename: str) -> bool:
        if filename.endswith(".err"):  # the stderr beside a job.out is read with it, never alone
            return False
        lines = head.splitlines()[:40]
        return any(line.startswith(b"Starting glidein_startup.sh at") for line in lines[:5]) or any(
            re.match(rb"condorg_schedd\s*= '", line) for line in lines
        )

    def parse(
        self, stream: BinaryIO, filename: str, context: ParseContext, *, sibling_err: BinaryIO | None = None
    ) -> Iterator[ParsedRecord | Rejection]:
        """One pilot record (or one rejection) for the job.out; `sibling_err` is its `.err`, if any."""
        try:
            log = read_glidein_log(stream)
            record = record_from_log(log, context)
            check_record(record, context.now)
        except GlideinLogError as exc:
            yield Rejection(exc.line, exc.reason)
            return
        except RecordInvalid as exc:
            yield Rejection(log.ending_line, str(exc))
            return
        problem = None
        if sibling_err is not None:
            try:
                runs = read_startd_history(sibling_err)
            except HistoryBlockError as exc:
                where = f"{err_name(sibling_err)} line {exc.line}" if exc.line else err_name(sibling_err)
                problem = Rejection(None, f"{where}: {exc.reason}; the pilot is kept without its payload runs")
            else:
                if runs is not None:
                    record.extra["runs"] = runs
        yield record
        if problem:
            yield problem


def find_sibling_err(path: Path) -> Path | None:
    """The `job.N.M.err` beside a `job.N.M.out` (a regular file, not a link), or None."""
    match = JOB_OUT_NAME.match(path.name)
    if not match:
        return None
    err = path.with_name(f"{match.group(1)}.err")
    return err if err.is_file() and not err.is_symlink() else None


def err_name(stream: BinaryIO) -> str:
    name = getattr(stream, "name", None)
    return Path(name).name if isinstance(name, str) else "the .err file"


# --- job.out ---


class GlideinLog:
    """What a job.out says, taken line by line; only the lines that carry accounting data are kept."""

    RULES = (
        (XML_BEGIN, "on_xml_begin"),
        (STATS_BEGIN, "on_stats_begin"),
        (ENDING, "on_ending"),
        (CONDOR_ENDED, "on_condor_ended"),
        (CONDOR_STARTING, "on_condor_starting"),
        (VALIDATED, "on_validated"),
        (CLAIMS, "on_activations"),
        (START, "on_started"),
        (HEADER, "on_header_line"),
        (CONSTANT, "on_constant"),
    )

    def __init__(self) -> None:
        self.lines = 0
        self.header: dict[str, str] = {}
        self.constants: dict[str, str] = {}
        self.settings: dict[str, str] = {}
        self.start_epoch: int | None = None
        self.start_seen = False
        self.validation_seconds: int | None = None
        self.condor_started = False
        self.condor_seconds: int | None = None
        self.claims: int | None = None
        self.ending: tuple[int | None, int, int] | None = None  # (epoch, exit code, seconds lived)
        self.ending_line: int | None = None
        self.glidein_name = ""
        self.normalized_note = False
        self.stats_block: str | None = None
        self.stats: dict[str, dict[str, dict[str, int]]] = {}
        self.xml_start: int | None = None
        self.xml_lines: list[str] | None = None
        self.xml_size = 0
        self.xml_done = False

    def feed(self, line_number: int, line: str) -> bool:
        """Take one line; True when it carried something this parser reads."""
        if self.xml_lines is not None and not self.xml_done:
            return self.xml_line(line_number, line)
        if len(line) > MAX_MARKER_LINE:
            return False
        if self.stats_block is not None and self.stats_line(line_number, line):
            return True
        for pattern, handler in self.RULES:
            match = pattern.match(line)
            if match:
                getattr(self, handler)(match, line_number)
                return True
        return self.loose_line(line)

    def loose_line(self, line: str) -> bool:
        """Lines whose data is not at their start: resolved settings, the normalisation note, a startd name."""
        setting = SETTING.search(line)
        if setting:
            self.settings[setting.group(1)] = setting.group(2)
            return True
        if NORMALIZED_NOTE.search(line):
            self.normalized_note = True
            return True
        if not self.glidein_name and "glidein_" in line:
            name = GLIDEIN_HOST.search(line)
            self.glidein_name = name.group(1) if name else ""
            return bool(name)
        return False

    def xml_line(self, line_number: int, line: str) -> bool:
        if XML_END.match(line):
            self.xml_done = True
            return True
        self.xml_size += len(line) + 1
        if self.xml_size > MAX_XML_BYTES:
            raise GlideinLogError(line_number, "XML description of glidein activity longer than 1 MiB")
        self.xml_lines.append(line)
        return True

    def stats_line(self, line_number: int, line: str) -> bool:
        """A line of a `=== Stats of <slot> ===` block (its job-by-job lines are not read)."""
        if STATS_END.match(line):
            self.stats_block = None
            return True
        match = STATS_LINE.match(line)
        if not match:
            return False
        if self.stats_block.endswith("1"):  # as glideinwms does: a slot name ending in 1 is the monitoring slot
            return True
        scale, kind, jobs, seconds = match.groups()
        scale = scale.lower() if scale else ("normalized" if self.normalized_note else "real")
        self.stats.setdefault(scale, {}).setdefault(
            kind or "Total", {"jobs": count(jobs, line_number), "seconds": count(seconds, line_number)}
        )
        return True

    def on_xml_begin(self, match: re.Match, line_number: int) -> None:
        self.xml_lines, self.xml_start, self.xml_size, self.xml_done = [], line_number + 1, 0, False

    def on_stats_begin(self, match: re.Match, line_number: int) -> None:
        self.stats_block = match.group(1)

    def on_ending(self, match: re.Match, line_number: int) -> None:
        epoch = EPOCH.search(match.group(1))
        self.ending = (
            count(epoch.group(1), line_number) if epoch else None,
            count(match.group(2), line_number),
            count(match.group(3), line_number),
        )
        self.ending_line = line_number

    def on_condor_ended(self, match: re.Match, line_number: int) -> None:
        self.condor_seconds = count(match.group(1), line_number)

    def on_condor_starting(self, match: re.Match, line_number: int) -> None:
        self.condor_started = True

    def on_validated(self, match: re.Match, line_number: int) -> None:
        self.validation_seconds = count(match.group(1), line_number)

    def on_activations(self, match: re.Match, line_number: int) -> None:
        self.claims = count(match.group(1), line_number)

    def on_started(self, match: re.Match, line_number: int) -> None:
        if not self.start_seen:
            epoch = EPOCH.search(match.group(1))
            self.start_epoch = count(epoch.group(1), line_number) if epoch else None
            self.start_seen = True

    def on_header_line(self, match: re.Match, line_number: int) -> None:
        self.header.setdefault(match.group(1), match.group(2).strip())

    def on_constant(self, match: re.Match, line_number: int) -> None:
        self.constants[match.group(1)] = match.group(2).strip()


def count(digits: str, line_number: int) -> int:
    """An integer of a marker line; more than 12 digits is no time or count a glidein can have."""
    if len(digits.lstrip("-")) > 12:
        raise GlideinLogError(line_number, f"absurd number {digits[:20]}... in a glidein marker line")
    return int(digits)


def read_glidein_log(stream: BinaryIO) -> GlideinLog:
    log = GlideinLog()
    for line_number, raw in iter_lines(stream):
        log.lines = line_number
        if raw is None:
            if log.xml_lines is not None and not log.xml_done:
                raise GlideinLogError(line_number, "line longer than 1 MiB in the XML description")
            continue
        try:
            log.feed(line_number, raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            if log.feed(line_number, raw.decode("utf-8", "replace")):
                raise GlideinLogError(
                    line_number, f"not UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})"
                ) from None
    return log


def record_from_log(log: GlideinLog, context: ParseContext) -> ParsedRecord:
    """The pilot record of a read job.out (see the module docstring for each field)."""
    if not log.lines:
        raise GlideinLogError(None, "empty file")
    key = pilot_key(log.header)
    if log.ending is None:
        raise GlideinLogError(
            log.lines, f"no '=== Glidein ending ... after N ===' line: log cut at line {log.lines}, glidein end unknown"
        )
    start, end, lived, exit_code = lifetime(log)
    entry = log.header.get("glidein_entry", "")
    cores = positive(setting(log, "GLIDEIN_CPUS")) or 1
    memory = positive(setting(log, "GLIDEIN_MaxMemMBs"))
    record = ParsedRecord(
        kind=RecordKind.PILOT,
        natural_key=key,
        start=start,
        end=end,
        wall_seconds=float(lived),
        line=1,
        cores=cores,
        memory_mb=memory,
        site=log.constants.get("GLIDEIN_Site") or context.site,
        resource=log.constants.get("GLIDEIN_ResourceName") or entry,
    )
    record.pilot = PilotInfo(
        glidein_name=log.glidein_name,
        frontend_client=log.header.get("client_name", ""),
        entry=entry,
        cores=cores,
        memory_mb=memory,
        validation_seconds=optional_float(log.validation_seconds),
        condor_started=log.condor_started,
        condor_seconds=optional_float(log.condor_seconds),
        claims=log.claims,
    )
    record.extra = {"glidein_exit_code": exit_code, "stats": log.stats}
    result = glidein_result(log)
    if result is not None:
        record.extra["result"] = result
    return record


def pilot_key(header: dict[str, str]) -> str:
    schedd = header.get("condorg_schedd", "")
    cluster, proc = header.get("condorg_cluster", ""), header.get("condorg_subcluster", "")
    if not schedd or not cluster or not proc:
        raise GlideinLogError(
            None, "not a glidein job.out: no condorg_schedd / condorg_cluster / condorg_subcluster header"
        )
    if not (re.fullmatch(r"[0-9]{1,18}", cluster) and re.fullmatch(r"[0-9]{1,18}", proc)):
        raise GlideinLogError(
            None, f"condorg_cluster.condorg_subcluster {cluster[:20]!r}.{proc[:20]!r} are not numbers"
        )
    return f"{schedd}#{int(cluster)}.{int(proc)}"


def lifetime(log: GlideinLog) -> tuple[datetime, datetime, int, int]:
    """(start, end, seconds lived, exit code): end = start + lived, or from the ending epoch without a start."""
    end_epoch, exit_code, lived = log.ending
    if log.start_epoch is not None:
        start_epoch, end_epoch = log.start_epoch, log.start_epoch + lived
    elif end_epoch is not None:
        start_epoch = end_epoch - lived
    else:
        raise GlideinLogError(log.ending_line, "glidein start unknown: no start epoch and no ending epoch")
    start, end = utc(start_epoch), utc(end_epoch)
    if start is None or end is None:
        raise GlideinLogError(log.ending_line, f"glidein times out of range (start {start_epoch}, end {end_epoch})")
    return start, end, lived, exit_code


def utc(epoch: float) -> datetime | None:
    return utc_from_epoch(epoch) if 0 <= epoch <= LATEST_EPOCH else None


def setting(log: GlideinLog, name: str) -> str:
    """A glidein attribute as resolved by the setup scripts (`Setting X=`), else as configured."""
    return log.settings.get(name) or log.constants.get(name, "")


def positive(value: str) -> int | None:
    return int(value) if POSITIVE.match(value) and int(value) > 0 else None


def optional_float(value: int | None) -> float | None:
    return float(value) if value is not None else None


def glidein_result(log: GlideinLog) -> dict | None:
    """Status, metrics and failure detail of the XML part, parsed by defusedxml; None without a complete one."""
    if log.xml_lines is None or not log.xml_done:
        return None
    try:
        root = fromstring("\n".join(log.xml_lines), forbid_dtd=True)
    except DefusedXmlException as exc:
        raise GlideinLogError(
            log.xml_start,
            f"XML description of glidein activity refused ({type(exc).__name__}): entities are never expanded",
        ) from None
    except ParseError as exc:
        raise GlideinLogError(
            log.xml_start, f"XML description of glidein activity is not well-formed ({exc})"
        ) from None
    return {
        "status": (root.findtext("result/status") or "").strip(),
        "metrics": {metric.get("name", ""): (metric.text or "").strip() for metric in root.iterfind("result/metric")},
        "detail": (root.findtext("detail") or "").strip()[:MAX_DETAIL_CHARS],
    }


# --- job.err: the startd history ---


def read_startd_history(stream: BinaryIO) -> list[dict] | None:
    """The payload runs of the `.err`'s StartdHistoryLog block; None when the `.err` has no such block."""
    block = history_block(stream)
    if block is None:
        return None
    first_line, encoded = block
    history = gunzip_bounded(base64_decoded(encoded, first_line), first_line)
    runs = []
    for item in iter_ads(BytesIO(history)):
        if isinstance(item, Rejection):
            raise HistoryBlockError(first_line, f"StartdHistoryLog line {item.line}: {item.reason}")
        ad_line, ad = item
        try:
            runs.append(run_from_ad(ad))
        except HistoryFormatError as exc:
            raise HistoryBlockError(first_line, f"StartdHistoryLog ad at line {ad_line}: {exc}") from None
    return runs


def history_block(stream: BinaryIO) -> tuple[int, bytes] | None:
    """(line of the `StartdHistoryLog` name, its base64 text) from the `cond_print_log` framing."""
    lines = iter_lines(stream)
    for line_number, raw in lines:
        if raw is not None and raw.strip() == HISTORY_LOG_NAME:
            return line_number, encoded_lines(lines, line_number)
    return None


def encoded_lines(lines: Iterator[tuple[int, bytes | None]], first_line: int) -> bytes:
    """The base64 lines after the framing, up to the closing `====`, at most MAX_HISTORY_BYTES."""
    framing = list(HISTORY_FRAMING)
    chunks: list[bytes] = []
    size = 0
    for line_number, raw in lines:
        if raw is None:
            raise HistoryBlockError(line_number, "line longer than 1 MiB in the StartdHistoryLog block")
        if framing:
            if not raw.startswith(framing.pop(0)):
                raise HistoryBlockError(line_number, "StartdHistoryLog is not followed by its gzip | uuencode framing")
            continue
        if raw.startswith(b"===="):
            return b"".join(chunks)
        size += len(raw)
        if size > MAX_HISTORY_BYTES:
            raise HistoryBlockError(first_line, "StartdHistoryLog block larger than 64 MiB")
        chunks.append(raw.strip())
    raise HistoryBlockError(first_line, "StartdHistoryLog block has no closing ==== (the .err is cut)")


def base64_decoded(encoded: bytes, first_line: int) -> bytes:
    try:
        return binascii.a2b_base64(encoded, strict_mode=True)
    except binascii.Error as exc:
        raise HistoryBlockError(first_line, f"StartdHistoryLog is not valid base64 ({exc})") from None


def gunzip_bounded(data: bytes, first_line: int) -> bytes:
    """Decompress gzip members one after the other, never past MAX_HISTORY_BYTES of output (zip bombs)."""
    out = bytearray()
    while data:
        inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
        try:
            out += inflater.decompress(data, MAX_HISTORY_BYTES - len(out) + 1)
        except zlib.error as exc:
            raise HistoryBlockError(first_line, f"StartdHistoryLog is not gzip data ({exc})") from None
        if len(out) > MAX_HISTORY_BYTES:
            raise HistoryBlockError(first_line, "StartdHistoryLog decompresses to more than 64 MiB (refused)")
        if not inflater.eof:
            raise HistoryBlockError(first_line, "StartdHistoryLog gzip data is cut")
        data = inflater.unused_data
    return bytes(out)


def run_from_ad(ad: dict[str, str]) -> dict:
    """One payload run of the startd history (keys in the module docstring)."""
    global_job_id = text(ad, "GlobalJobId")
    if not global_job_id:
        raise HistoryFormatError("no GlobalJobId")
    completion, wall = number(ad, "CompletionDate"), number(ad, "RemoteWallClockTime")
    if completion is None or wall is None:
        raise HistoryFormatError("no CompletionDate or RemoteWallClockTime")
    if not 0 <= wall <= MAX_WALL_SECONDS:
        raise HistoryFormatError(f"absurd RemoteWallClockTime ({wall:g} s)")
    start, end = utc(completion - wall), utc(completion)
    if start is None or end is None:
        raise HistoryFormatError(f"CompletionDate out of range ({completion:g})")
    by_signal = is_true(ad, "ExitBySignal")
    cores = whole(first_number(ad, "CpusProvisioned", "RequestCpus"))
    memory = whole(first_number(ad, "MemoryProvisioned", "RequestMemory"))
    gpus = whole(first_number(ad, "GPUsProvisioned", "RequestGPUs"))
    return {
        "global_job_id": global_job_id,
        "start": start,
        "end": end,
        "cores": cores if cores and cores >= 1 else 1,
        "memory_mb": memory if memory and memory > 0 else None,
        "gpus": gpus if gpus and gpus > 0 else 0,
        "exit_code": None if by_signal else whole(first_number(ad, "ExitCode")),
        "exit_signal": whole(first_number(ad, "ExitSignal")) if by_signal else None,
        "badput_preemption": is_true(ad, "BadputCausedByPreemption"),
        "badput_draining": is_true(ad, "BadputCausedByDraining"),
        "starter_exit_status": whole(first_number(ad, "StarterExitStatus")),
    }


def whole(value: float | None) -> int | None:
    """An integer attribute value; None when absent, not finite or beyond 32 bits."""
    return int(value) if value is not None and math.isfinite(value) and abs(value) < 2**31 else None
