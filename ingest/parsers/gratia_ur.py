"""`gratia-ur`: OGF usage records as OSG's Gratia probes send them (JobUsageRecord / UsageRecord XML).

Three containers, all read with one streaming parse in bounded memory (one record's tree at a time):
- a single record document, `<JobUsageRecord>` or `<UsageRecord>`;
- a probe upload, `<RecordEnvelope>` holding many records;
- a Gratia replication bundle, `replication|<xml>|<rawxml>|<extraxml>|` repeated. As GRACC's collector does,
  the bundle is split at each `|` outside a quoted attribute value and only `<xml>` (the collector's own
  rendering of the record) is read; `<rawxml>` (the probe's original) and `<extraxml>` are skipped.

The XML is parsed with defusedxml's SAX driver and nothing else: a DTD is refused, so an entity bomb or an
external entity reference becomes a Rejection and is never expanded or fetched. Names are matched by local
name (the prefix is dropped) because real records mix `urwg:`, `urf:` and prefixes never declared (the condor
probe's README examples use `urwg:` attributes without the namespace declaration).

Mapping (in brackets the field names of GRACC's raw records, the `.json` renderings of the samples):
- kind: `Resource[@description=ResourceType]` [ResourceType] `Batch` or absent -> batch (a CE cannot tell a
  pilot from an ordinary job, DOMAIN.md); `BatchPilot` [Payload] or `Payload` -> payload; any other type
  (AWSVM, GridMonitor...) -> batch, the type kept in `extra["resource_type"]`.
- site `SiteName` (else the `--site` of the context); resource of a batch record the CE: `ResourceName` when
  a probe sends one, else the host part of `ProbeName` (`condor:ce.example.org` -> `ce.example.org`), which is
  what the sites mapping lists. A payload's resource is the `Host` description, where the condor probe writes
  the glidein's GLIDEIN_ResourceName; its site is left to the sites mapping of that resource, because a
  payload's `SiteName` is its submit host's site, not where it ran (kept in `extra["submit_site"]`).
- VO `ReportableVOName`, else `VOName` when it is a plain name, else the first group of the FQAN; FQAN
  `VOName` when it starts with `/`; person `DN`, else `GlobalUsername` (the condor probe's `user@host`);
  project `ProjectName`; local user `LocalUserId`.
- `WallDuration`; `CpuDuration` by `usageType` user / system (an untyped one is the total and counts as user
  time); ISO 8601 durations (`PT1M5.32S`, `P1DT2H`), a malformed one rejects the record (GRACC reads it as 0).
  A missing WallDuration is EndTime - StartTime.
- `StartTime` / `EndTime`: ISO date-times with `Z` or an offset, to UTC; a missing one is derived from the
  other and the wall time (GRACC leaves it empty).
- cores `Processors` (0 or absent -> 1), `GPUs`, `Memory` converted from its `storageUnit` (no unit: not
  guessed, None); exit code `Status` when it is an integer, or the signal when `Resource[ExitBySignal]` is true.
- natural key `GlobalJobId`, else `ProbeName|LocalJobId|EndTime`.
- a payload's pilot link, written as `htcondor_history` writes it: the `MATCH_EXP_JOB_GLIDEIN_Schedd`,
  `_ClusterId`, `_ProcId` resources as `schedd#cluster.proc`, else the `glidein_<pid>_<rand>@host` of a
  `LastRemoteHost` / `RemoteHost` resource (both only present when the probe's ExtraAttributes lists them).
`StorageElement` and `StorageElementRecord` (storage accounting, not jobs) are rejected by name.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from itertools import chain, islice
from typing import BinaryIO
from xml.sax import SAXParseException
from xml.sax.handler import ContentHandler

from defusedxml import DefusedXmlException
from defusedxml.expatreader import create_parser

from accounting.choices import RecordKind
from ingest.parsers.base import ParseContext, ParsedRecord, Parser, RecordInvalid, Rejection, check_record
from ingest.parsers.htcondor_history import GLIDEIN_HOST

CHUNK_BYTES = 64 * 1024
# Characters (text, names, attribute values) one record may hold; a real one has a few thousand.
MAX_RECORD_CHARS = 1024 * 1024
# One `|`-separated field of a replication bundle; longer ones are read through and rejected.
MAX_FIELD_BYTES = 16 * 1024 * 1024
ENVELOPE = "RecordEnvelope"
JOB_RECORDS = ("JobUsageRecord", "UsageRecord")
PAYLOAD_TYPES = ("BatchPilot", "Payload")
REPLICATION = b"replication"
LEADING_SPACE = b"\xef\xbb\xbf \t\r\n"
DETECT_ROOT = re.compile(rb"<(?:[\w.-]+:)?(?:JobUsageRecord|UsageRecord|RecordEnvelope)[\s/>]")
BUNDLE_SPECIAL = re.compile(rb"[|<>\"']")
DURATION = re.compile(
    r"P(?=\d|T\d)(?:(?P<weeks>\d{1,9})W)?(?:(?P<days>\d{1,9})D)?"
    r"(?:T(?=\d)(?:(?P<hours>\d{1,9})H)?(?:(?P<minutes>\d{1,9})M)?(?:(?P<seconds>\d{1,12}(?:[.,]\d{1,9})?)S)?)?"
)
DURATION_SECONDS = {"weeks": 7 * 86400, "days": 86400, "hours": 3600, "minutes": 60, "seconds": 1}
DATETIME = re.compile(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:[.,](\d{1,9}))?(Z|[+-]\d\d:?\d\d)")
WHOLE = re.compile(r"\d{1,9}(?:\.0*)?")
DECIMAL = re.compile(r"\d{1,15}(?:\.\d*)?|\.\d{1,15}")
SIGNED = re.compile(r"-?\d{1,9}")
GLIDEIN_SLOT = ("schedd", "clusterid", "procid")
# Megabytes per OGF `storageUnit` (bytes and their binary multiples, as Gratia writes them).
STORAGE_UNIT_MB = {"B": 1 / 2**20, "KB": 1 / 2**10, "MB": 1, "GB": 2**10, "TB": 2**20, "PB": 2**30}


class RecordFormatError(ValueError):
    """A usage record whose content cannot be mapped (missing identity, malformed duration...)."""


@dataclass(slots=True)
class Element:
    """An XML element by local name: the small tree one usage record is read into."""

    name: str
    attrs: dict[str, str]
    parts: list[str] = field(default_factory=list)
    children: list[Element] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "".join(self.parts).strip()

    def all(self, name: str) -> list[Element]:
        return [child for child in self.children if child.name == name]

    def first(self, name: str) -> Element | None:
        return next((child for child in self.children if child.name == name), None)

    def text_of(self, name: str) -> str:
        child = self.first(name)
        return child.text if child is not None else ""


def local_name(qname: str) -> str:
    return qname.rpartition(":")[2]


class RecordCollector(ContentHandler):
    """SAX handler that builds one `Element` tree per usage record: the document element, or each child of
    a `RecordEnvelope`. Finished records wait in `ready` as (line of their start tag, tree); a record over
    MAX_RECORD_CHARS waits as a Rejection, its content dropped as it streams by."""

    def __init__(self, parser, first_line: int) -> None:
        super().__init__()
        self.parser = parser
        self.first_line = first_line
        self.ready: list[tuple[int, Element] | Rejection] = []
        self.depth = 0
        self.record_depth = 0
        self.record_line = 0
        self.stack: list[Element] = []
        self.size = 0

    def line(self, expat_line: int) -> int:
        return self.first_line + expat_line - 1

    def take(self) -> list[tuple[int, Element] | Rejection]:
        ready, self.ready = self.ready, []
        return ready

    def spend(self, chars: int) -> bool:
        """Count `chars` against the record's budget; False once it is exceeded."""
        self.size += chars
        return self.size <= MAX_RECORD_CHARS

    def startElement(self, name, attrs):
        self.depth += 1
        element = Element(local_name(name), {local_name(key): value for key, value in attrs.items()})
        if not self.record_depth:
            if self.depth == 1 and element.name == ENVELOPE:
                return
            self.record_depth, self.record_line = self.depth, self.line(self.parser.getLineNumber())
            self.stack, self.size = [element], 0
            return
        if self.size > MAX_RECORD_CHARS:
            return
        if self.spend(len(element.name) + sum(map(len, element.attrs.values()))):
            self.stack[-1].children.append(element)
            self.stack.append(element)

    def endElement(self, name):
        if self.record_depth == self.depth:
            if self.size > MAX_RECORD_CHARS:
                self.ready.append(Rejection(self.record_line, f"record larger than {MAX_RECORD_CHARS} characters"))
            else:
                self.ready.append((self.record_line, self.stack[0]))
            self.record_depth, self.stack = 0, []
        elif self.record_depth and self.size <= MAX_RECORD_CHARS:
            self.stack.pop()
        self.depth -= 1

    def characters(self, content):
        if self.record_depth and self.size <= MAX_RECORD_CHARS and self.spend(len(content)):
            self.stack[-1].parts.append(content)

    def failure(self, expat_line: int, problem: str) -> Rejection:
        """The Rejection for a fatal XML error: at the start of the record it broke, else where it is."""
        where = self.line(expat_line)
        lost = "the XML document is not read past this point"
        if self.record_depth:
            return Rejection(self.record_line, f"{problem} at line {where}: this record is lost and {lost}")
        return Rejection(where, f"{problem}: {lost}")


def iter_document(chunks: Iterable[bytes], first_line: int) -> Iterator[tuple[int, Element] | Rejection]:
    """The usage records of one XML document, streamed; a fatal XML error ends it with a Rejection."""
    parser = create_parser(forbid_dtd=True)  # entities and external references are refused by default
    collector = RecordCollector(parser, first_line)
    parser.setContentHandler(collector)
    try:
        parser.feed(b"")  # so that an empty document is reported as one
        for chunk in chunks:
            parser.feed(chunk)
            yield from collector.take()
        parser.close()
    except SAXParseException as exc:
        yield from collector.take()
        yield collector.failure(exc.getLineNumber(), f"not well-formed XML ({exc.getMessage()})")
        return
    except DefusedXmlException as exc:
        yield from collector.take()
        problem = f"XML with a DTD, entity or external reference refused ({exc})"
        yield collector.failure(parser.getLineNumber(), problem)
        return
    except (LookupError, ValueError) as exc:  # the codec of an encoding expat leaves to Python
        yield from collector.take()
        yield collector.failure(parser.getLineNumber(), f"XML in an unreadable encoding ({exc})")
        return
    yield from collector.take()


class BundleSplitter:
    """Splits a replication bundle into its `|`-separated fields, as GRACC's ScanBundle does, except that
    only a `|` inside a quoted attribute value is protected (text content cannot hide an unbalanced quote)."""

    def __init__(self, first_line: int) -> None:
        self.line = first_line
        self.start_line = first_line
        self.parts: list[bytes] = []
        self.size = 0
        self.in_tag = False
        self.quote = b""

    def feed(self, chunk: bytes) -> Iterator[tuple[int, bytes | None]]:
        start = 0
        for match in BUNDLE_SPECIAL.finditer(chunk):
            char = match.group()
            if self.quote:
                self.quote = b"" if char == self.quote else self.quote
            elif char == b"|":
                self.keep(chunk[start : match.start()])
                start = match.end()
                yield self.take()
            elif char in (b"<", b">"):
                self.in_tag = char == b"<"
            elif self.in_tag:
                self.quote = char
        self.keep(chunk[start:])

    def keep(self, piece: bytes) -> None:
        self.line += piece.count(b"\n")
        self.size += len(piece)
        if self.size <= MAX_FIELD_BYTES:
            self.parts.append(piece)

    def take(self) -> tuple[int, bytes | None]:
        """(first line, bytes) of the field just ended; None for a field over MAX_FIELD_BYTES."""
        item = (self.start_line, b"".join(self.parts) if self.size <= MAX_FIELD_BYTES else None)
        self.start_line, self.parts, self.size, self.in_tag, self.quote = self.line, [], 0, False, b""
        return item

    def fields(self, chunks: Iterable[bytes]) -> Iterator[tuple[int, bytes | None]]:
        for chunk in chunks:
            yield from self.feed(chunk)
        if self.size:
            yield self.take()


def skip_leading_space(data: bytes, line: int) -> tuple[bytes, int]:
    """`data` without leading blanks (an XML declaration must come first) and the line it then starts on."""
    stripped = data.lstrip(LEADING_SPACE)
    return stripped, line + data[: len(data) - len(stripped)].count(b"\n")


def iter_replication(chunks: Iterable[bytes], first_line: int) -> Iterator[tuple[int, Element] | Rejection]:
    """The records of a replication bundle: for each `replication` entry, the usage record of its `<xml>`."""
    fields = BundleSplitter(first_line).fields(chunks)
    for line, data in fields:
        if data is None:
            yield Rejection(line, f"bundle field longer than {MAX_FIELD_BYTES} bytes")
            continue
        word = data.strip(LEADING_SPACE)
        if not word:
            continue
        if word != REPLICATION:
            yield Rejection(line, f"expected a 'replication|' entry, found {word[:60].decode('utf-8', 'replace')!r}")
            continue
        entry = list(islice(fields, 3))  # <xml>, <rawxml>, <extraxml>
        if not entry:
            yield Rejection(line, "replication entry without its record (bundle truncated)")
            continue
        record_line, record = entry[0]
        if record is None:
            yield Rejection(record_line, f"bundle field longer than {MAX_FIELD_BYTES} bytes")
            continue
        record, record_line = skip_leading_space(record, record_line)
        yield from iter_document([record], record_line)


def iso_duration(text: str, name: str) -> float:
    """Seconds of an ISO 8601 duration (`PT910S`, `P1DT2H`, `PT1M5.32S`). Strict: no sign, no years or
    months (they have no fixed length), a fraction only on the seconds."""
    match = DURATION.fullmatch(text.strip())
    if match is None:
        raise RecordFormatError(f"{name} is not an ISO 8601 duration: {text.strip()[:40]!r}")
    return sum(
        float(value.replace(",", ".")) * DURATION_SECONDS[unit] for unit, value in match.groupdict().items() if value
    )


def iso_datetime(text: str, name: str) -> datetime:
    """An ISO 8601 date-time with `Z` or an offset, in UTC. One without a time zone is refused."""
    match = DATETIME.fullmatch(text.strip())
    if match is None:
        raise RecordFormatError(f"{name} is not an ISO 8601 date-time with a time zone: {text.strip()[:40]!r}")
    year, month, day, hour, minute, second, fraction, zone = match.groups()
    try:
        offset = timedelta(0)
        if zone != "Z":
            offset = timedelta(hours=int(zone[1:3]), minutes=int(zone[-2:])) * (-1 if zone[0] == "-" else 1)
        microsecond = int((fraction or "0")[:6].ljust(6, "0"))
        moment = datetime(int(year), int(month), int(day), int(hour), int(minute), int(second), microsecond,
                          tzinfo=timezone(offset))  # fmt: skip
        return moment.astimezone(UTC)
    except (ValueError, OverflowError):
        raise RecordFormatError(f"{name} is not a valid date-time: {text.strip()[:40]!r}") from None


def job_times(element: Element) -> tuple[datetime, datetime, float]:
    """(start, end, wall seconds); a missing StartTime or EndTime is derived from the other and the wall."""
    start = iso_datetime(element.text_of("StartTime"), "StartTime") if element.text_of("StartTime") else None
    end = iso_datetime(element.text_of("EndTime"), "EndTime") if element.text_of("EndTime") else None
    if start is None and end is None:
        raise RecordFormatError("no EndTime or StartTime")
    if element.text_of("WallDuration"):
        wall = iso_duration(element.text_of("WallDuration"), "WallDuration")
    elif start is not None and end is not None:
        wall = (end - start).total_seconds()
    else:
        raise RecordFormatError("no WallDuration (and not both StartTime and EndTime)")
    try:
        start = start if start is not None else end - timedelta(seconds=wall)
        end = end if end is not None else start + timedelta(seconds=wall)
    except OverflowError:
        raise RecordFormatError(f"absurd WallDuration ({wall:g} s)") from None
    return start, end, wall


def cpu_seconds(element: Element) -> tuple[float, float]:
    """(user, system) CPU seconds from the `CpuDuration`s; without typed ones, the untyped total is user time."""
    typed = {"user": 0.0, "system": 0.0}
    total = 0.0
    seen_typed = False
    for cpu in element.all("CpuDuration"):
        seconds = iso_duration(cpu.text, "CpuDuration")
        usage = cpu.attrs.get("usageType", "")
        if usage in typed:
            typed[usage] += seconds
            seen_typed = True
        else:
            total += seconds
    return (typed["user"], typed["system"]) if seen_typed else (total, 0.0)


def whole_number(element: Element, name: str) -> int | None:
    text = element.text_of(name)
    if not text:
        return None
    if not WHOLE.fullmatch(text):
        raise RecordFormatError(f"{name} is not a whole number: {text[:40]!r}")
    return int(float(text))


def memory_mb(memory: Element | None) -> int | None:
    """Megabytes of the first `Memory`; None without a value or with no (or an unknown) storageUnit."""
    if memory is None or not memory.text:
        return None
    if not DECIMAL.fullmatch(memory.text):
        raise RecordFormatError(f"Memory is not a number: {memory.text[:40]!r}")
    factor = STORAGE_UNIT_MB.get(memory.attrs.get("storageUnit", ""))
    megabytes = round(float(memory.text) * factor) if factor else 0
    return megabytes if megabytes > 0 else None


def described_resources(element: Element) -> dict[str, str]:
    """The `<Resource description="...">value</Resource>` pairs, by lower-case description."""
    return {res.attrs.get("description", "").lower(): res.text for res in element.all("Resource")}


def exit_status(element: Element, resources: dict[str, str]) -> tuple[int | None, int | None]:
    """(exit code, signal): the signal when ExitBySignal is true (-1 if its number is missing), else `Status`
    when it is an integer (old records say `completed`)."""
    if resources.get("exitbysignal", "").lower() == "true":
        signal = resources.get("exitsignal", "")
        return None, int(signal) if SIGNED.fullmatch(signal) else -1
    status = element.text_of("Status")
    return (int(status) if SIGNED.fullmatch(status) else None), None


def user_identity(user: Element | None) -> tuple[str, str, str, str]:
    """(VO, FQAN, person, local user) from `UserIdentity` (see the module docstring)."""
    if user is None:
        return "", "", "", ""
    vo_name = user.text_of("VOName")
    fqan = vo_name if vo_name.startswith("/") else ""
    vo = user.text_of("ReportableVOName") or (fqan.split("/")[1] if fqan else vo_name)
    person = user.text_of("DN") or user.text_of("GlobalUsername")
    return vo, fqan, person, user.text_of("LocalUserId")


def natural_key(element: Element, probe: str, end: datetime) -> str:
    job = element.first("JobIdentity")
    global_id = job.text_of("GlobalJobId") if job is not None else ""
    if global_id:
        # Gratia's condor probe sends "condor." + HTCondor's GlobalJobId: the same job as the history's.
        return global_id.removeprefix("condor.")
    local_id = job.text_of("LocalJobId") if job is not None else ""
    if not local_id:
        raise RecordFormatError("no GlobalJobId or LocalJobId in JobIdentity")
    return f"{probe}|{local_id}|{end:%Y-%m-%dT%H:%M:%SZ}"


def pilot_ref(resources: dict[str, str]) -> str:
    """The payload's pilot id, in the form `htcondor_history` gives it, when the record carries one."""
    schedd, cluster, proc = (resources.get(f"match_exp_job_glidein_{name}", "") for name in GLIDEIN_SLOT)
    if schedd and cluster and proc:
        return f"{schedd}#{cluster}.{proc}"
    match = GLIDEIN_HOST.search(resources.get("lastremotehost") or resources.get("remotehost") or "")
    return match.group(1) if match else ""


def to_record(element: Element, line: int, context: ParseContext) -> ParsedRecord:
    """Map one usage record (see the module docstring for the choices)."""
    if element.name not in JOB_RECORDS:
        raise RecordFormatError(f"{element.name} is not a job usage record (storage or other accounting): not ingested")
    resources = described_resources(element)
    resource_type = resources.get("resourcetype") or "Batch"
    start, end, wall = job_times(element)
    user_cpu, sys_cpu = cpu_seconds(element)
    exit_code, exit_signal = exit_status(element, resources)
    vo, fqan, person, local_user = user_identity(element.first("UserIdentity"))
    probe = element.text_of("ProbeName")
    site_name = element.text_of("SiteName")
    host = element.first("Host")
    identity = element.first("RecordIdentity")
    record = ParsedRecord(
        kind=RecordKind.BATCH,
        natural_key=natural_key(element, probe, end),
        start=start,
        end=end,
        wall_seconds=wall,
        line=line,
        cores=whole_number(element, "Processors") or 1,
        memory_mb=memory_mb(element.first("Memory")),
        gpus=whole_number(element, "GPUs") or 0,
        cpu_user_seconds=user_cpu,
        cpu_sys_seconds=sys_cpu,
        exit_code=exit_code,
        exit_signal=exit_signal,
        site=site_name or context.site,
        resource=element.text_of("ResourceName") or probe.partition(":")[2] or probe,
        vo=vo,
        person=person,
        project=element.text_of("ProjectName"),
        fqan=fqan,
        local_user=local_user,
        extra={
            "resource_type": resource_type,
            "record_id": identity.attrs.get("recordId", "") if identity is not None else "",
            "probe": probe,
            "host": host.text if host is not None else "",
        },
    )
    if resource_type in PAYLOAD_TYPES:
        record.kind = RecordKind.PAYLOAD
        record.resource = host.attrs.get("description", "") if host is not None else ""
        record.site = ""
        record.extra["submit_site"] = site_name
        record.pilot_ref = pilot_ref(resources)
    return record


class GratiaURParser(Parser):
    name = "gratia-ur"

    def detect(self, head: bytes, filename: str) -> bool:
        text = head.lstrip(LEADING_SPACE)
        if text.startswith(REPLICATION + b"|"):
            return True
        return text.startswith(b"<") and DETECT_ROOT.search(text, 0, 8192) is not None

    def parse(self, stream: BinaryIO, filename: str, context: ParseContext) -> Iterator[ParsedRecord | Rejection]:
        first, line = skip_leading_space(stream.read(CHUNK_BYTES), 1)
        chunks = chain([first], iter(lambda: stream.read(CHUNK_BYTES), b""))
        if first.startswith(REPLICATION + b"|"):
            items = iter_replication(chunks, line)
        else:
            items = iter_document(chunks, line)
        for item in items:
            if isinstance(item, Rejection):
                yield item
                continue
            record_line, element = item
            try:
                record = to_record(element, record_line, context)
                check_record(record, context.now)
            except (RecordFormatError, RecordInvalid) as exc:
                yield Rejection(record_line, str(exc))
                continue
            yield record
