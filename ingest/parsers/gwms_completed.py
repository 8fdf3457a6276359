"""`gwms-completed`: a GlideinWMS factory's `completed_jobs_YYYYMMDD.log`, one finished glidein per line.

The format is the one `condorLogSummary.logCompleted` writes (glideinwms `factory/glideFactoryMonitoring.py`;
the numbers come from `get_completed_stats` there; seed 002, figure 9). Each line is one XML element, the
file has no root element; attributes are left-padded with blanks:

    <job terminated="2022-02-09T05:55:38-08:00" client="fermilab_okd_gpfe01_frontend" username="fefermilab"
     id="6767402.000" duration="1359" condor_started="True" condor_duration="1266"><user jobsnr="0"
     duration="0" goodput="0" terminated="0"/><wastemill validation="66" idle="1000" nosuccess="0"
     badput="1000"/></job>

What the values mean:
- `terminated`: when the factory *logged* the glidein (local time with its UTC offset): the factory's first
  monitoring cycle after Condor-G saw the glidein complete and its job.out came back (it waits up to an hour
  for that file). It is not the glidein's end.
- `client` / `username`: the frontend client the glidein served, and the factory user that submitted it.
- `id`: the glidein's Condor-G `cluster.proc` at the factory schedd (proc zero-padded, `6767402.000`).
  The schedd itself is not on the line.
- `duration`: the glidein's lifetime in seconds (job.out "Glidein ending ... after N", else the Condor-G
  running-to-completed time); -1 when the factory could not measure it.
- `condor_started` / `condor_duration`: whether the glidein's HTCondor started, and for how many seconds.
- `<user>`: `jobsnr` jobs ran, for `duration` seconds in all; of these seconds, `goodput` belong to jobs that
  exited 0 and `terminated` to jobs that ended by themselves (any exit code). Depending on the GlideinWMS
  version these job numbers are normalised to one core (divided by GLIDEIN_CPUS) or not.
- `<wastemill>`: integers in per-mille, each of its own denominator: `validation` and `badput` of the
  glidein's `duration`, `idle` of `condor_duration`, `nosuccess` of the jobs' time (`<user duration>`).
  A glidein whose HTCondor never started (or ran < 5 s) is written as validation=1000, badput=1000.

Choices:
- The record is a `pilot` keyed `<schedd>#<cluster>.<proc>` (proc without padding), the key that job.out
  (`condorg_schedd#condorg_cluster.condorg_subcluster`), the factory's schedd history and the payloads'
  `MATCH_EXP_JOB_GLIDEIN_Schedd/ClusterId/ProcId` give the same glidein. As the line has no schedd, it comes
  from an `id` already written `schedd#cluster.proc`, or from the caller (`parse(..., schedd=...)`: the
  schedd of the entry, e.g. from the factory's entry description). Without it the line is rejected: a key of
  `cluster.proc` alone is not unique across a factory's schedds and would count a glidein twice once its
  job.out arrives.
- end = `terminated`, start = end - `duration`. The log time is the only time on the line; it is later
  than the real end by the factory's reporting delay (usually minutes, at most about an hour), so hours near
  midnight may land on the next UTC day. A job.out of the same glidein gives the exact times.
- entry: the `entry_<name>` directory the log lies in (where the factory writes it), else unknown; the
  record's resource is the entry (no GLIDEIN_ResourceName here); the site is the caller's `--site`, if any.
- cores: a `cores` attribute if the line has one (the standard format has none), else 1.
- A negative or absurd `duration`, a line that is not a `<job>` element, not UTF-8, or holds a DTD or an
  entity declaration (XML is parsed with defusedxml, without entity expansion) is rejected on its own.

`record.extra` (for the accounting engine's "estimated" category mode; seconds are glidein seconds, the
per-mille ones rounded by the factory and clamped to 0-1000 here):
- `logged_at`: the `terminated` time (UTC datetime).
- `username`: the factory user.
- `jobs_count`, `jobs_seconds`, `goodput_seconds`, `terminated_seconds`: the `<user>` numbers as written
  (`goodput` = jobs that exited 0; `terminated` = jobs that ran to completion, any exit code, i.e. the
  DOMAIN.md "pilot goodput" category).
- `wastemill`: the four per-mille integers as written.
- `validation_seconds` (= PilotInfo.validation_seconds), `badput_seconds`: per-mille x `duration`;
  `idle_seconds`: per-mille x `condor_duration`; `nosuccess_seconds`: per-mille x `jobs_seconds`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import PurePath
from typing import BinaryIO
from xml.etree.ElementTree import Element, ParseError

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import fromstring

from accounting.choices import RecordKind
from ingest.parsers.base import (
    EARLIEST,
    MAX_WALL_SECONDS,
    ParseContext,
    ParsedRecord,
    Parser,
    PilotInfo,
    RecordInvalid,
    Rejection,
    check_record,
    iter_lines,
)

GLIDEIN_ID = re.compile(r"(?:(?P<schedd>[^#\s]+)#)?(?P<cluster>\d{1,18})\.(?P<proc>\d{1,18})\Z")
ENTRY_DIR = re.compile(r"entry_(?P<entry>.+)\Z")
WASTE_NAMES = ("validation", "idle", "nosuccess", "badput")
USER_NAMES = ("jobsnr", "duration", "goodput", "terminated")


class LineError(ValueError):
    """A completed_jobs line that cannot be read; the message says why."""


class GWMSCompletedParser(Parser):
    name = "gwms-completed"

    def detect(self, head: bytes, filename: str) -> bool:
        first = next((line.strip() for line in head.splitlines() if line.strip()), b"")
        return first.startswith(b"<job ") and b" terminated=" in first and b" id=" in first

    def parse(
        self, stream: BinaryIO, filename: str, context: ParseContext, *, schedd: str = ""
    ) -> Iterator[ParsedRecord | Rejection]:
        """One pilot record per `<job>` line; `schedd` is the factory schedd the entry submits to."""
        entry = entry_from_path(filename)
        seen = False
        for number, raw in iter_lines(stream):
            if raw is None:
                yield Rejection(number, "line longer than 1 MiB")
                continue
            if not raw.strip():
                continue
            seen = True
            try:
                record = line_to_record(raw, number, entry, schedd, context)
                check_record(record, context.now)
            except (LineError, RecordInvalid) as exc:
                yield Rejection(number, str(exc))
                continue
            yield record
        if not seen:
            yield Rejection(None, "empty file: no <job> lines")


def entry_from_path(filename: str) -> str:
    """The factory entry whose log directory (`.../entry_<name>/completed_jobs_*.log`) holds the file."""
    match = ENTRY_DIR.match(PurePath(filename).parent.name)
    return match.group("entry") if match else ""


def line_to_record(raw: bytes, number: int, entry: str, schedd: str, context: ParseContext) -> ParsedRecord:
    """Map one `<job>` line to a pilot record (see the module docstring for the meaning of each value)."""
    job = parse_element(decode(raw))
    user, waste = child(job, "user"), child(job, "wastemill")
    logged_at = logged_time(job.get("terminated"))
    duration = glidein_duration(job)
    condor_started = boolean(job, "condor_started")
    condor_duration = integer(job, "condor_duration")
    cores = integer(job, "cores") if "cores" in job.attrib else 1
    jobs = {name: integer(user, name) for name in USER_NAMES}
    mill = {name: integer(waste, name) for name in WASTE_NAMES}
    validation = per_mille(mill["validation"], duration)
    record = ParsedRecord(
        kind=RecordKind.PILOT,
        natural_key=pilot_key(job.get("id"), schedd),
        start=logged_at - timedelta(seconds=duration),
        end=logged_at,
        wall_seconds=float(duration),
        line=number,
        cores=cores,
        site=context.site,
        resource=entry,
    )
    record.pilot = PilotInfo(
        frontend_client=job.get("client", "").strip(),
        entry=entry,
        cores=cores,
        validation_seconds=validation,
        condor_started=condor_started,
        condor_seconds=float(condor_duration) if condor_started else None,
    )
    record.extra = {
        "logged_at": logged_at,
        "username": job.get("username", "").strip(),
        "jobs_count": jobs["jobsnr"],
        "jobs_seconds": jobs["duration"],
        "goodput_seconds": jobs["goodput"],
        "terminated_seconds": jobs["terminated"],
        "wastemill": mill,
        "validation_seconds": validation,
        "idle_seconds": per_mille(mill["idle"], condor_duration),
        "nosuccess_seconds": per_mille(mill["nosuccess"], jobs["duration"]),
        "badput_seconds": per_mille(mill["badput"], duration),
    }
    return record


def decode(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise LineError(f"not UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})") from None


def parse_element(text: str) -> Element:
    """The line's `<job>` element, parsed by defusedxml: a DTD or an entity declaration is refused."""
    try:
        element = fromstring(text, forbid_dtd=True)
    except DefusedXmlException as exc:
        raise LineError(f"refused XML construct ({type(exc).__name__}): entities are never expanded") from None
    except ParseError as exc:
        raise LineError(f"not a well-formed <job> element ({exc}): {text[:60]!r}") from None
    if element.tag != "job":
        raise LineError(f"not a completed_jobs <job> line (root element <{element.tag[:40]}>)")
    return element


def child(job: Element, tag: str) -> Element:
    found = job.find(tag)
    if found is None:
        raise LineError(f"no <{tag}> element in <job>")
    return found


def logged_time(value: str | None) -> datetime:
    """The `terminated` attribute: an ISO 8601 time with a UTC offset, returned in UTC."""
    if not value:
        raise LineError("no terminated time")
    try:
        moment = datetime.fromisoformat(value.strip())
        utc = moment.astimezone(UTC) if moment.tzinfo else None
    except (ValueError, OverflowError):
        raise LineError(f"terminated is not an ISO 8601 time: {value[:40]!r}") from None
    if utc is None:
        raise LineError(f"terminated time {value[:40]!r} has no UTC offset")
    if utc < EARLIEST:
        raise LineError(f"terminated time {value[:40]!r} is before 1995")
    return utc


def glidein_duration(job: Element) -> int:
    duration = integer(job, "duration")
    if duration < 0:
        raise LineError(f"negative glidein duration ({duration} s): the factory could not measure its lifetime")
    if duration > MAX_WALL_SECONDS:
        raise LineError(f"absurd glidein duration ({duration} s, more than a year)")
    return duration


def integer(element: Element, name: str) -> int:
    raw = element.get(name)
    if raw is None:
        raise LineError(f"no {name} in <{element.tag}>")
    try:
        return int(raw.strip())
    except ValueError:
        raise LineError(f"{name} in <{element.tag}> is not an integer: {raw[:40]!r}") from None


def boolean(element: Element, name: str) -> bool:
    raw = (element.get(name) or "").strip()
    if raw not in ("True", "False"):
        raise LineError(f"{name} is neither True nor False: {raw[:40]!r}")
    return raw == "True"


def per_mille(mill: int, denominator: int) -> float:
    """Seconds that `mill` per-mille of `denominator` seconds stand for (the per-mille clamped to 0-1000)."""
    return min(max(mill, 0), 1000) * denominator / 1000.0


def pilot_key(glidein_id: str | None, schedd: str) -> str:
    """`schedd#cluster.proc` from the line's id and the factory schedd (see the module docstring)."""
    match = GLIDEIN_ID.match((glidein_id or "").strip())
    if not match:
        raise LineError(f"id is not a glidein cluster.proc: {(glidein_id or '')[:60]!r}")
    schedd = match.group("schedd") or schedd.strip()
    if not schedd:
        raise LineError(
            f"factory schedd unknown for glidein {glidein_id.strip()}: completed_jobs lines carry only "
            "cluster.proc; ingest the file with the entry's schedd"
        )
    return f"{schedd}#{int(match.group('cluster'))}.{int(match.group('proc'))}"
