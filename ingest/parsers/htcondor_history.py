"""`htcondor-history`: HTCondor job ClassAds from schedd history (`***` banners, also the `*** EPOCH`
variant), per-job `history.N.M` files and `condor_history -l` output (blank-line separated).

Attributes are mapped the way OSG's Gratia condor meter does (DOMAIN.md "Records"):
- identity: `x509userproxysubject`, else `AuthTokenSubject`; VO `x509UserProxyVOName`, else the first
  of `AuthTokenGroups`; FQAN
  `x509UserProxyFirstFQAN`; project `ProjectName`; local user `Owner`;
- cores: `MachineAttrCpus0`, then `CpusProvisioned`, then `RequestCpus` (when it is a number);
- site `MachineAttrGLIDEIN_Site0`; resource `MachineAttrGLIDEIN_ResourceName0`, else
  `MATCH_EXP_JOBGLIDEIN_ResourceName`; a batch job's resource is its schedd (GlobalJobId's host: the CE);
- pilot link: `MATCH_EXP_JOB_GLIDEIN_Schedd` + `_ClusterId` + `_ProcId` as `schedd#cluster.proc`, else the
  `glidein_<pid>_<rand>@host` part of `LastRemoteHost`. An ad with a pilot link or glidein machine
  attributes is a payload; a grid-universe ad with `GlideinEntryName` (the factory's own history of the
  glideins it submitted) is a pilot, keyed `schedd#cluster.proc` like the payloads' link; anything else is
  a batch job.
- end = `CompletionDate`, else `EnteredCurrentStatus`; start = end - `RemoteWallClockTime`.
- a glidein's startd history (ads with `BadputCausedByPreemption` / `BadputCausedByDraining`, which only a
  startd writes): besides its payload records, the runs of each pilot its ads link to, read as the runs of a
  glidein's `.err` (`gwms_glidein.run_from_ad`), as one `PilotRuns` item per pilot after the records; the
  loader attaches them to the stored pilot (`PilotJobRun` rows) like the `.err`'s.

ClassAd attribute names are case-insensitive; a repeated attribute's last value wins. Values are kept
as raw text and converted only for the attributes used, which is what makes this line parser several
times faster than a full ClassAd parse (see bench/classad_parsers.py). The parser keeps only the
attributes it maps (`MAPPED_ATTRIBUTES`, found by one pass over each ad that also checks every line), so no
Python code runs per line of an ad.

The two loops over every byte of a history (where ads end; the wanted attributes of an ad) run compiled
(`_adlines.pyx`, built by `make venv`), about five times faster than the regular expressions below, which
stay as their definition: tests check that both give the same on the real samples and on random input, and
the parser uses the expressions when the compiled module is not built. The same module reads an ordinary
job ad straight to its checked record (`record_maker`, `_adlines.RecordMaker`: the mapping below and
`check_record`, without building the {name: value} dict), about half the parser's time per ad; it leaves
every ad it cannot read without doubt (escapes, padding, expressions where a number is read, startd runs,
factory glideins, values near or past a bound of check_record) to `ad_to_record` and `check_record`, and
tests check both give the same records, type for type. `make venv` also compiles this
module itself with Cython, as it is (about a quarter less time per ad); `ingest.parsers` runs the source
instead when the compiled file is older than it.
"""
from __future__ import annotations

import math
import operator
import re
from collections.abc import Iterable, Iterator
from typing import BinaryIO

from accounting.choices import RecordKind
from ingest.compiled import current
from ingest.parsers.base import (
    EARLIEST,
    FUTURE_SLACK,
    MAX_CORES,
    MAX_KEY_LENGTH,
    MAX_LINE_BYTES,
    MAX_MEMORY_MB,
    MAX_WALL_SECONDS,
    NAME_LIMITS,
    ParseContext,
    ParsedRecord,
    Parser,
    PilotInfo,
    PilotRuns,
    RecordInvalid,
    Rejection,
    check_record,
    utc_from_epoch,
)

_adlines = current("ingest.parsers._adlines")  # None when not built (or stale): the regular expressions below give the same
ATTRIBUTE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*\Z")  # used with .match: anchored at both ends
NAME_LINES = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*(?:\n[A-Za-z_][A-Za-z0-9_.]*)*")
PARTITION = operator.methodcaller("partition", " = ")
NAME_OF, SEP_OF, VALUE_OF = operator.itemgetter(0), operator.itemgetter(1), operator.itemgetter(2)
DETECT_LINE = re.compile(rb"^[A-Za-z_][A-Za-z0-9_.]* = ")
GLIDEIN_HOST = re.compile(r"(glidein_\d+_\d+@[^\s\"]+)")
MAX_AD_LINES = 5000
# Every attribute `ad_to_record` and `as_factory_pilot` read: the parser keeps only these (about 30 of the
# 80 lines of a real ad; tests check the list against what the mapping asks for).
MAPPED_ATTRIBUTES = (
    "GlobalJobId", "RemoteWallClockTime", "CompletionDate", "EnteredCurrentStatus", "MachineAttrCpus0",
    "CpusProvisioned", "RequestCpus", "MachineAttrMemory0", "MemoryProvisioned", "RequestMemory", "MachineAttrGPUs0",
    "GPUsProvisioned", "RequestGPUs", "ExitBySignal", "ExitSignal", "ExitCode", "ExitStatus", "RemoteUserCpu",
    "RemoteSysCpu", "x509userproxysubject", "AuthTokenSubject", "x509UserProxyVOName", "AuthTokenGroups",
    "x509UserProxyFirstFQAN", "ProjectName", "Owner", "MachineAttrGLIDEIN_Site0", "MATCH_EXP_JOBGLIDEIN_Site",
    "GLIDEIN_Site", "MachineAttrGLIDEIN_ResourceName0", "MATCH_EXP_JOBGLIDEIN_ResourceName", "GlideinEntryName",
    "GlideinFactory", "JobUniverse", "MATCH_EXP_JOB_GLIDEIN_Schedd", "MATCH_EXP_JOB_GLIDEIN_ClusterId",
    "MATCH_EXP_JOB_GLIDEIN_ProcId", "LastRemoteHost", "RemoteHost", "GLIDEIN_CPUS", "xcount", "GLIDEIN_MaxMemMBs",
    "maxMemory", "GLIDEIN_ResourceName", "GlideinClient", "GlideinFrontendName",
    # a startd history's ads (gwms_glidein.run_from_ad)
    "BadputCausedByPreemption", "BadputCausedByDraining", "StarterExitStatus",
)  # fmt: skip
# Written by a startd into the job ads of its own history, never by a schedd: an ad with one is a run on a
# startd, which for a glidein's startd is a payload run inside that pilot.
STARTD_ONLY = ("badputcausedbypreemption", "badputcausedbydraining")


def is_startd_ad(ad: dict[str, str]) -> bool:
    return STARTD_ONLY[0] in ad or STARTD_ONLY[1] in ad


class HistoryFormatError(ValueError):
    pass


def unquote(value: str) -> str:
    """The text of a ClassAd string literal (old ClassAd syntax: backslash escapes quote and backslash)."""
    if value[:1] == '"' and value[-1:] == '"' and len(value) >= 2 and "\\" not in value:
        return value[1:-1]  # the common case, quicker: nothing to strip, nothing escaped
    value = value.strip()
    if len(value) >= 2 and value[0] == '"' and value[-1] == '"':
        inner = value[1:-1]
        if "\\" in inner:
            inner = re.sub(r"\\(.)", r"\1", inner)
        return inner
    if value.upper() in ("UNDEFINED", "ERROR"):
        return ""
    return value


def number(ad: dict[str, str], name: str) -> float | None:
    """A numeric attribute, None when absent or UNDEFINED; HistoryFormatError when it is not a number."""
    raw = ad.get(name.lower())
    if raw is None:
        return None
    try:
        value = float(raw)
    except ValueError:
        if raw.strip().upper() == "UNDEFINED":
            return None
        value = math.nan
    if not math.isfinite(value):
        raise HistoryFormatError(f"{name} is not a number: {raw[:60]!r}")
    return value


def first_number(ad: dict[str, str], *names: str) -> float | None:
    """The first of `names` that holds a number; expressions (e.g. `RequestCpus = ifThenElse(...)`) skipped.

    So are `inf` and `nan` (float() reads them, ClassAd does not: there they are attribute references), which
    would otherwise reach int() and raise out of the parser."""
    for name in names:
        raw = ad.get(name.lower())
        if raw is None:
            continue
        try:
            value = float(raw)
        except ValueError:
            continue
        if math.isfinite(value):
            return value
    return None


def text(ad: dict[str, str], *names: str) -> str:
    for name in names:
        raw = ad.get(name.lower())
        if raw:
            value = unquote(raw)
            if value:
                return value
    return ""


def token_group(ad: dict[str, str]) -> str:
    """The VO of a token job: the first of its `AuthTokenGroups` (e.g. "/cms,/cms/production" -> "cms")."""
    groups = text(ad, "AuthTokenGroups")
    return groups.split(",")[0].strip().strip("/").split("/")[0] if groups else ""


def is_true(ad: dict[str, str], name: str) -> bool:
    return ad.get(name.lower(), "").strip().lower() == "true"  # values are kept unstripped: strip when read


class HTCondorHistoryParser(Parser):
    name = "htcondor-history"

    def detect(self, head: bytes, filename: str) -> bool:
        lines = [line for line in head.splitlines()[:40] if line.strip()]
        if not lines:
            return False
        attrs = sum(1 for line in lines if DETECT_LINE.match(line))
        banners = sum(1 for line in lines if line.startswith(b"***"))
        return attrs >= 3 and attrs + banners >= 0.8 * len(lines[:-1] or lines)

    def parse(self, stream: BinaryIO, filename: str, context: ParseContext) -> Iterator[ParsedRecord | PilotRuns | Rejection]:
        empty = True
        runs = StartdRuns()
        for item in iter_ads(stream, PICKER, record_maker(context)):
            empty = False
            if type(item) is ParsedRecord:  # an ordinary job ad, read and checked by the compiled maker
                yield item
                continue
            if isinstance(item, Rejection):
                yield item
                continue
            first_line, ad = item
            try:
                record = ad_to_record(ad, first_line, context)
                check_record(record, context.now)
            except (HistoryFormatError, RecordInvalid) as exc:
                yield Rejection(first_line, str(exc))
                runs.drop(ad)
                continue
            if record is not None:
                rejection = runs.add(ad, record)
                yield record
                if rejection is not None:
                    yield rejection
        yield from runs.items()
        if empty:
            yield Rejection(None, "empty file: no job ads")


class StartdRuns:
    """The payload runs of a standalone startd history, per glidein (the ads' pilot link), read as the runs of
    a glidein's `.err` are (`gwms_glidein.run_from_ad`). A pilot with an unreadable run gets none (a partial
    list would misplace hours) and the ad is named in a rejection; the job records themselves are kept."""

    def __init__(self) -> None:
        self.by_pilot: dict[str, PilotRuns] = {}
        self.broken: set[str] = set()

    def drop(self, ad: dict[str, str]) -> None:
        """A rejected ad: when it is a run of a glidein, that glidein's list would be partial, so it gets none."""
        if is_startd_ad(ad) and (ref := pilot_link(ad)):
            self.broken.add(ref)

    def add(self, ad: dict[str, str], record: ParsedRecord) -> Rejection | None:
        if not record.pilot_ref or not is_startd_ad(ad):
            return None
        from ingest.parsers.gwms_glidein import run_from_ad  # that module reads history ads with this one's helpers

        ref = record.pilot_ref
        try:
            run = run_from_ad(ad)
        except HistoryFormatError as exc:
            self.broken.add(ref)
            return Rejection(record.line, f"startd history run not readable ({exc}): no run of pilot {ref} is kept")
        self.by_pilot.setdefault(ref, PilotRuns(ref, [], record.line)).runs.append(run)
        return None

    def items(self) -> Iterator[PilotRuns]:
        return (item for ref, item in self.by_pilot.items() if ref not in self.broken)


# Read in blocks of 1 MiB into one buffer kept for the whole stream. A new bytes object per block (and another
# for the pending ad + block) came as fresh pages from the kernel each time: 8 MiB blocks cost the parser alone
# 7.3-8.1 us per ad, 1 MiB ones ~5.9 (~0.75 page faults per ad left), one reused buffer ~5.45.
BLOCK_BYTES = 1024 * 1024
NEWLINE = ord("\n")
MAX_AD_BYTES = 64 * 1024 * 1024
# "\n" + a banner or blank line; the lookahead (implied by the rest) turns other lines away at their first byte
SEPARATOR = re.compile(rb"\n(?=[* \t\r\n]|\Z)(?:\*\*\*[^\n]*|[ \t\r]*)(?=\n|\Z)")


class AttributePicker:
    """Picks the attributes `names` out of an ad (see `attribute_picker`), compiled when it can be."""

    def __init__(self, names: Iterable[str], compiled: bool = True) -> None:
        names = tuple(names)
        self.pattern = attribute_picker(names)
        self.compiled = _adlines.Picker(names) if compiled and _adlines is not None else None

    def pick(self, chunk: bytes) -> dict[str, str] | None:
        """{lower-case name: raw value} of the wanted lines of an ad (`chunk`, valid UTF-8), or None when a line
        is not exactly `Name = value` (the caller then reads the ad line by line)."""
        if self.compiled is not None:
            return self.compiled.pick(chunk)
        pairs = self.pattern.findall("\n" + chunk.decode("utf-8").rstrip("\n"))
        if ("", "") in pairs:
            return None
        if not pairs:
            return {}
        names, values = zip(*pairs, strict=True)  # one lower() for all names: fewer Python steps per ad
        return dict(zip("\n".join(names).lower().split("\n"), values, strict=True))

    def picks(self, name: str) -> bool:
        """Whether the attribute `name` is one of the wanted ones."""
        match = self.pattern.match(f"\n{name} = ")
        return bool(match and match[1])


def attribute_picker(names: Iterable[str]) -> re.Pattern[str]:
    """A regular expression whose `findall` over "\\n" + an ad gives (name, raw value) of the lines naming
    one of `names`, in any letter case (ClassAd names are case-insensitive), and ("", "") for each line that
    is not `Name = value` (so one pass both checks every line and picks the wanted ones).

    The names are laid out as a trie whose first letters are plain literals in both cases, which lets the
    regex engine turn away most lines after one character compare."""
    by_first: dict[str, list[str]] = {}
    for name in names:
        by_first.setdefault(name[0].lower(), []).append(name[1:].lower())
    branches = [
        re.escape(letter) + (f"(?i:{_trie(rests)})" if rests != [""] else "")
        for first, rests in sorted(by_first.items())
        for letter in sorted({first, first.upper()})
    ]
    wanted = r"((?:" + "|".join(branches) + r")) = ([^\n]*)"
    # ASCII: letter case is ASCII's only (in Unicode, "ſ" matches "s"; a name is ASCII, so such a line is bad)
    return re.compile(r"\n(?:" + wanted + r"|(?![A-Za-z_][A-Za-z0-9_.]* = )[^\n]*)", re.ASCII)


def _trie(words: list[str]) -> str:
    """A regex alternation of `words` that shares their common prefixes."""
    children: dict[str, list[str]] = {}
    for word in words:
        children.setdefault(word[:1], []).append(word[1:])
    alternatives = ["" if head == "" else re.escape(head) + _trie(tails) for head, tails in sorted(children.items())]
    return alternatives[0] if len(alternatives) == 1 else "(?:" + "|".join(alternatives) + ")"


PICKER = AttributePicker(MAPPED_ATTRIBUTES)
MAKER_BOUNDS = {
    "earliest_start": EARLIEST.timestamp(), "max_wall": MAX_WALL_SECONDS, "max_cores": MAX_CORES,
    "max_memory_mb": MAX_MEMORY_MB, "max_key": MAX_KEY_LENGTH, "name_limits": NAME_LIMITS,
}  # fmt: skip


def record_maker(context: ParseContext):
    """The compiled reading of ordinary job ads straight to their checked records for one parse
    (`_adlines.RecordMaker`): what `ad_to_record(PICKER.pick(chunk), ...)` and `check_record` give, without
    the dict, for the ads it reads without doubt; None when the module is not built."""
    if _adlines is None:
        return None
    return _adlines.RecordMaker(
        record=ParsedRecord, payload=RecordKind.PAYLOAD, batch=RecordKind.BATCH, glidein_host=GLIDEIN_HOST,
        site=context.site, latest_end=(context.now + FUTURE_SLACK).timestamp(), **MAKER_BOUNDS,
    )  # fmt: skip


def separator_spans(buffer: bytes | bytearray, size: int) -> Iterator[tuple[int, int, int]]:
    """(start, end, newlines before start) of each SEPARATOR in `buffer[:size]`, in order."""
    if _adlines is not None:
        return _adlines.separator_spans(buffer, size)
    return _separator_spans(buffer, size)


def _separator_spans(buffer: bytes | bytearray, size: int) -> Iterator[tuple[int, int, int]]:
    before = counted = 0  # newlines in buffer[:counted]
    for match in SEPARATOR.finditer(buffer, 0, size):
        before += buffer.count(b"\n", counted, match.start())
        counted = match.start()
        yield match.start(), match.end(), before


def read_into(stream: BinaryIO, buffer: bytearray, at: int, size: int) -> int:
    """Read up to `size` bytes of `stream` into buffer[at:] (which has room for them); 0 at the end."""
    with memoryview(buffer) as view:
        readinto = getattr(stream, "readinto", None)
        if readinto is not None:
            return readinto(view[at : at + size]) or 0
        data = stream.read(size)
        view[at : at + len(data)] = data
        return len(data)


def iter_ads(
    stream: BinaryIO, picker: AttributePicker | None = None, maker=None
) -> Iterator[tuple[int, dict[str, str]] | ParsedRecord | Rejection]:
    """Split a history stream into ads: (first line, {lower-case name: raw value text}); with a `picker`,
    only the attributes it names; with a `maker` (`record_maker`), the checked record of each ordinary job ad
    instead (see `parse_ad`).

    An ad ends at a `***` banner line, a blank line or the end of the file. An ad with an unreadable line
    (not `Name = value`, not UTF-8, over 1 MiB) is rejected whole, naming that line. The stream is read into
    one buffer kept for the whole stream, in 1 MiB blocks (as long as the pending ad when it is longer, so that
    a long ad is read and scanned a linear number of times), and split into ads at each SEPARATOR
    (`separator_spans`, which also counts the lines); each ad is decoded once and read in one pass (with a
    `picker`) or split with str.partition. An ad larger than 64 MiB is rejected without being held whole.
    """
    buffer = bytearray(2 * BLOCK_BYTES)  # buffer[:filled]: read, not yet split into ads
    buffer[0] = NEWLINE  # a virtual newline before the first line: every line then follows a "\n"
    filled = 1
    newlines = 0  # newlines (the virtual one included) before buffer[0]
    skipping = False
    at_end = False
    while not at_end:
        want = max(BLOCK_BYTES, filled)  # an ad longer than a block: reads double, copies stay linear
        if filled + want > len(buffer):
            buffer += bytes(filled + want - len(buffer))
        got = read_into(stream, buffer, filled, want)
        at_end = not got
        filled += got
        position = 0  # buffer[position] is the newline before the pending ad
        upto = int(filled > 0 and buffer[0] == NEWLINE)  # newlines in buffer[:position + 1]: the pending ad's first line is newlines + upto
        view = memoryview(buffer)
        for start, end, before in separator_spans(buffer, filled):
            if end == filled and not at_end:
                break  # the separator line may continue in the next block
            if start > position:
                if skipping:
                    skipping = False
                else:
                    yield parse_ad(bytes(view[position + 1 : start]), newlines + upto, picker, maker)
            position, upto = end, before + 2  # the newlines that start and end the separator line
        if at_end and position < filled and buffer[position:filled].strip() and not skipping:
            yield parse_ad(bytes(view[position + 1 : filled]), newlines + upto, picker, maker)
            return
        view.release()
        newlines += upto - (position < filled and buffer[position] == NEWLINE)
        filled = keep_from(buffer, position, filled)
        if filled > MAX_AD_BYTES:
            if not skipping:
                yield Rejection(newlines + 1, f"ad longer than {MAX_AD_BYTES // (1024 * 1024)} MiB")
            skipping = True
            cut = buffer.rfind(b"\n", 0, filled)
            cut = cut if cut >= 0 else filled - 1
            newlines += buffer.count(b"\n", 0, cut)
            filled = keep_from(buffer, cut, filled)
        if len(buffer) > 2 * BLOCK_BYTES and filled <= BLOCK_BYTES:
            del buffer[2 * BLOCK_BYTES :]  # a long ad is over: back to the usual size


def keep_from(buffer: bytearray, position: int, filled: int) -> int:
    """Move buffer[position:filled] to the start of the buffer; its length (the new `filled`)."""
    rest = filled - position
    buffer[:rest] = buffer[position:filled]
    return rest


def parse_ad(
    chunk: bytes, first: int, picker: AttributePicker | None = None, maker=None
) -> tuple[int, dict[str, str]] | ParsedRecord | Rejection:
    """One ad's text to {lower-case name: raw value}; a Rejection naming the first unreadable line.

    With a `picker` only the attributes it names are kept; one pass checks every line and finds the wanted
    ones, so that no Python code runs per line. With a `maker`, an ASCII ad it reads without doubt becomes its
    record at once (`ad_to_record`'s, which passed `check_record`); any other ad is read as without it."""
    if len(chunk) > MAX_LINE_BYTES:
        for offset, raw in enumerate(chunk.split(b"\n")):
            if len(raw) > MAX_LINE_BYTES:
                return Rejection(first + offset, "line longer than 1 MiB")
    ascii = chunk.isascii()
    if not ascii:  # ASCII is UTF-8: the common case needs no decoding to be checked
        try:
            chunk.decode("utf-8")
        except UnicodeDecodeError as exc:
            offset = chunk.count(b"\n", 0, exc.start)
            column = exc.start - (chunk.rfind(b"\n", 0, exc.start) + 1)
            return Rejection(first + offset, f"not UTF-8 (byte 0x{chunk[exc.start]:02x} at column {column + 1})")
    if len(chunk) >= MAX_AD_LINES and chunk.count(b"\n") >= MAX_AD_LINES:  # fewer bytes: fewer lines
        return Rejection(first + MAX_AD_LINES, f"ad longer than {MAX_AD_LINES} lines")
    # The fast paths, C-level over the lines: every line `Name = value` (values are stripped when read).
    if maker is not None and ascii:
        record = maker.make(chunk, first)
        if record is not None:
            return record
    if picker is not None:
        ad = picker.pick(chunk)
        if ad is not None:  # every line is `Name = value`
            return first, ad
    body = chunk.decode("utf-8").rstrip("\n")
    parts = list(map(PARTITION, body.split("\n")))
    names = "\n".join(map(NAME_OF, parts))
    if picker is None and "" not in map(SEP_OF, parts) and NAME_LINES.fullmatch(names):
        return first, dict(zip(names.lower().split("\n"), map(VALUE_OF, parts), strict=True))
    ad: dict[str, str] = {}
    for offset, raw in enumerate(body.split("\n")):  # other spacing around `=`, or a bad line
        name, sep, value = raw.partition("=")
        name = name.strip()
        if not sep or not ATTRIBUTE_NAME.match(name):
            return Rejection(first + offset, f"not a ClassAd attribute line: {raw[:80]!r}")
        if picker is None or picker.picks(name):
            ad[name.lower()] = value.strip()
    return first, ad


def ad_to_record(ad: dict[str, str], line: int, context: ParseContext) -> ParsedRecord:
    """Map one job ad to a usage record (see the module docstring for the attribute choices)."""
    global_job_id = text(ad, "GlobalJobId")
    if not global_job_id:
        raise HistoryFormatError("no GlobalJobId (truncated or not a job ad)")
    wall = number(ad, "RemoteWallClockTime")
    if wall is None:
        raise HistoryFormatError("no RemoteWallClockTime (truncated or not a job ad)")
    completion = number(ad, "CompletionDate") or 0
    entered = number(ad, "EnteredCurrentStatus") or 0
    if completion <= 0 and wall <= 0:
        raise HistoryFormatError("job never ran (no CompletionDate and no wall time)")
    end_epoch = completion if completion > 0 else entered
    if end_epoch <= 0:
        raise HistoryFormatError("no CompletionDate or EnteredCurrentStatus")
    try:
        end = utc_from_epoch(end_epoch)
        start = utc_from_epoch(end_epoch - wall)
    except (OverflowError, OSError, ValueError):
        raise HistoryFormatError(f"time out of range (end {end_epoch:g}, wall {wall:g} s)") from None

    cores = first_number(ad, "MachineAttrCpus0", "CpusProvisioned", "RequestCpus")
    memory = first_number(ad, "MachineAttrMemory0", "MemoryProvisioned", "RequestMemory")
    gpus = first_number(ad, "MachineAttrGPUs0", "GPUsProvisioned", "RequestGPUs")

    exit_code = exit_signal = None
    if is_true(ad, "ExitBySignal"):
        signal = first_number(ad, "ExitSignal")
        exit_signal = int(signal) if signal is not None else -1
    else:
        code = first_number(ad, "ExitCode", "ExitStatus")
        exit_code = int(code) if code is not None and completion > 0 else None

    record = ParsedRecord(
        kind=RecordKind.BATCH,
        natural_key=global_job_id,
        start=start,
        end=end,
        wall_seconds=wall,
        line=line,
        cores=int(cores) if cores and cores >= 1 else 1,
        memory_mb=int(memory) if memory and memory > 0 else None,
        gpus=int(gpus) if gpus and gpus > 0 else 0,
        cpu_user_seconds=number(ad, "RemoteUserCpu") or 0.0,
        cpu_sys_seconds=number(ad, "RemoteSysCpu") or 0.0,
        exit_code=exit_code,
        exit_signal=exit_signal,
        person=text(ad, "x509userproxysubject", "AuthTokenSubject"),
        vo=text(ad, "x509UserProxyVOName") or token_group(ad),
        fqan=text(ad, "x509UserProxyFirstFQAN"),
        project=text(ad, "ProjectName"),
        local_user=text(ad, "Owner"),
        site=text(ad, "MachineAttrGLIDEIN_Site0", "MATCH_EXP_JOBGLIDEIN_Site", "GLIDEIN_Site") or context.site,
        resource=text(ad, "MachineAttrGLIDEIN_ResourceName0", "MATCH_EXP_JOBGLIDEIN_ResourceName"),
    )

    if text(ad, "GlideinEntryName", "GlideinFactory") and (number(ad, "JobUniverse") or 0) == 9:
        return as_factory_pilot(record, ad, global_job_id)

    pilot_ref = pilot_link(ad)
    if pilot_ref or text(ad, "MachineAttrGLIDEIN_Site0", "MachineAttrGLIDEIN_ResourceName0"):
        record.kind = RecordKind.PAYLOAD
        record.pilot_ref = pilot_ref
    elif not record.resource:
        # A batch job's resource is the schedd that ran it (the CE, for a CE's history): its GlobalJobId's host.
        record.resource = global_job_id.partition("#")[0]
    return record


def pilot_link(ad: dict[str, str]) -> str:
    """The pilot a job ran in, as its ad names it: `schedd#cluster.proc`, else the glidein startd name; "" if none."""
    schedd = text(ad, "MATCH_EXP_JOB_GLIDEIN_Schedd")
    cluster = text(ad, "MATCH_EXP_JOB_GLIDEIN_ClusterId")
    proc = text(ad, "MATCH_EXP_JOB_GLIDEIN_ProcId")
    if schedd and cluster and proc:
        return f"{schedd}#{cluster}.{proc}"
    match = GLIDEIN_HOST.search(text(ad, "LastRemoteHost", "RemoteHost"))
    return match.group(1) if match else ""


def as_factory_pilot(record: ParsedRecord, ad: dict[str, str], global_job_id: str) -> ParsedRecord:
    """A glidein as its factory's schedd saw it: keyed `schedd#cluster.proc`, the id its payloads carry."""
    schedd, _, rest = global_job_id.partition("#")
    cluster_proc = rest.partition("#")[0]
    if not schedd or not cluster_proc:
        raise HistoryFormatError(f"GlobalJobId {global_job_id!r} is not schedd#cluster.proc#qdate")
    entry = text(ad, "GlideinEntryName")
    cores = first_number(ad, "GLIDEIN_CPUS", "xcount", "RequestCpus")
    memory = first_number(ad, "GLIDEIN_MaxMemMBs", "maxMemory", "RequestMemory")
    record.kind = RecordKind.PILOT
    record.natural_key = f"{schedd}#{cluster_proc}"
    record.cores = int(cores) if cores and cores >= 1 else record.cores
    record.memory_mb = int(memory) if memory and memory > 0 else record.memory_mb
    record.resource = text(ad, "GLIDEIN_ResourceName") or entry
    record.site = text(ad, "GLIDEIN_Site") or record.site
    record.pilot = PilotInfo(
        frontend_client=text(ad, "GlideinClient", "GlideinFrontendName"),
        entry=entry,
        cores=record.cores,
        memory_mb=record.memory_mb,
        gpus=record.gpus,
    )
    return record
