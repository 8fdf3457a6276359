"""Pulling logs from sources (ingest.models.Source) and keeping their django-celery-beat schedule in step.

A pull lists the source's files (every regular file a glob matches below GRIDLEDGER_SOURCE_ROOTS, or the
one file behind a URL), skips each whose sha256 some Bundle already has, and turns each new one into its
own Bundle (source label = the source's name) ingested through `ingest.services.bundles.ingest_bundle`.
A glidein `X.out` is pulled together with the `X.err` beside it (a small tar of the two, the way a
directory bundle carries them), so its StartdHistoryLog is read too. The caller (the Celery task)
queues the rebuild of the days the new bundles touched.

Only one pull of a source runs at a time (a claim on the Source row; a redelivered task takes its own
claim back, an abandoned claim expires after PULL_STALE_AFTER). A pull first finishes the bundles an
interrupted pull of the same source left queued or running, so a killed worker loses nothing.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import stat
import tarfile
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import BinaryIO
from urllib.parse import urlsplit

from django.conf import settings
from django.db.models import F, Q
from django.utils import timezone

from ingest.models import Bundle, Source
from ingest.services.bundles import create_bundle, ingest_bundle, mark_failed

logger = logging.getLogger(__name__)

TASK_NAME = "ingest.tasks.pull_source_task"
PULL_STALE_AFTER = timedelta(hours=12)
URL_TIMEOUT_SECONDS = 60  # connect and each read
URL_DEADLINE_SECONDS = 30 * 60  # the whole download
CHUNK = 1024 * 1024
MAGIC = re.compile(r"[*?\[]")
MESSAGE_PROBLEMS = 10


class SourceRefused(ValueError):
    """The source's location may not be read (outside the allowed roots, not http(s), ...)."""


# --- where a source may read -------------------------------------------------------------------------


def allowed_roots() -> list[Path]:
    """GRIDLEDGER_SOURCE_ROOTS, resolved (symlinks followed), as the directories globs may read below."""
    return [Path(os.path.realpath(root)) for root in getattr(settings, "GRIDLEDGER_SOURCE_ROOTS", []) if str(root).strip()]


def inside(path: Path, roots: list[Path]) -> bool:
    return any(path == root or root in path.parents for root in roots)


def glob_base(pattern: str) -> str:
    """The directory part of a glob before its first wildcard component."""
    parts = pattern.split(os.sep)
    fixed = []
    for part in parts[:-1]:
        if MAGIC.search(part):
            break
        fixed.append(part)
    return os.sep.join(fixed) or os.sep


def check_location(location: str) -> None:
    """Refuse, with a reason an admin can act on, a location no pull may read."""
    location = location.strip()
    if not location:
        raise SourceRefused("a location is required: an absolute directory glob or an http(s) URL")
    if Source.kind_of(location) == Source.Kind.URL:
        if not urlsplit(location).hostname:
            raise SourceRefused(f"{location!r} has no host")
        return
    if "://" in location:
        raise SourceRefused(f"{location!r}: only http:// and https:// URLs, or an absolute directory glob")
    if not os.path.isabs(location):
        raise SourceRefused(f"{location!r}: a glob must be an absolute path")
    if ".." in location.split(os.sep):
        raise SourceRefused(f"{location!r}: '..' is not allowed in a glob")
    if any("**" in part and part != "**" for part in location.split(os.sep)):
        raise SourceRefused(f"{location!r}: '**' must be a whole path component (a/**/b)")
    roots = allowed_roots()
    if not roots:
        raise SourceRefused(f"{location!r}: no directory may be read (GRIDLEDGER_SOURCE_ROOTS is empty)")
    base = Path(os.path.realpath(glob_base(location)))
    if not inside(base, roots):
        raise SourceRefused(
            f"{location!r} is outside the allowed source roots ({', '.join(map(str, roots))}); "
            "the part before the first wildcard must lie inside one of GRIDLEDGER_SOURCE_ROOTS"
        )


# --- the beat schedule ---------------------------------------------------------------------------------


def cron_fields(expression: str) -> dict[str, str]:
    """'m h dom mon dow' -> CrontabSchedule fields; ValueError names what is wrong."""
    from celery.schedules import ParseException, crontab

    parts = expression.split()
    if len(parts) != 5:
        raise ValueError("a crontab has five fields: minute hour day-of-month month day-of-week, e.g. '*/30 * * * *'")
    fields = dict(zip(("minute", "hour", "day_of_month", "month_of_year", "day_of_week"), parts, strict=True))
    try:
        crontab(**fields)
    except (ValueError, ParseException) as exc:
        raise ValueError(f"not a valid crontab: {exc}") from None
    return fields


def sync_schedule(source: Source):
    """Create or update the source's PeriodicTask (called on every Source save; see the model)."""
    from django_celery_beat.models import CrontabSchedule, IntervalSchedule, PeriodicTask

    interval = crontab = None
    if source.cron.strip():
        fields = cron_fields(source.cron)
        crontab = CrontabSchedule.objects.filter(**fields, timezone="UTC").first() or CrontabSchedule.objects.create(
            **fields, timezone="UTC"
        )
    else:
        every = max(1, source.every_minutes or 60)
        interval = IntervalSchedule.objects.filter(every=every, period=IntervalSchedule.MINUTES).first()
        interval = interval or IntervalSchedule.objects.create(every=every, period=IntervalSchedule.MINUTES)
    name = f"pull source {source.pk}: {source.name}"[:200]
    task = None
    if source.periodic_task_id:
        task = PeriodicTask.objects.filter(pk=source.periodic_task_id).first()
    task = task or PeriodicTask.objects.filter(name=name).first() or PeriodicTask()
    task.name = name
    task.task = TASK_NAME
    task.args = json.dumps([source.pk])
    task.kwargs = "{}"
    task.interval, task.crontab, task.solar, task.clocked = interval, crontab, None, None
    task.one_off = False
    task.enabled = source.enabled
    task.description = f"Pulls {source.location} (ingest source {source.pk}). Managed by the source: edit the source, not this task."
    task.save()
    if source.periodic_task_id != task.pk:
        Source.objects.filter(pk=source.pk).update(periodic_task=task)
        source.periodic_task = task
    return task


def drop_schedule(source: Source) -> None:
    """Delete the source's PeriodicTask (called when the source is deleted)."""
    from django_celery_beat.models import PeriodicTask

    if source.periodic_task_id:
        task = PeriodicTask.objects.filter(pk=source.periodic_task_id).first()
        if task is not None:
            task.delete()  # the instance delete tells beat the schedule changed


# --- pulling -------------------------------------------------------------------------------------------


@dataclass
class PullResult:
    """What one pull did. `status`: ok, partial (some files failed), failed (nothing could be pulled),
    skipped (another pull of the source is running)."""

    source_id: int
    status: str = "ok"
    new_bundles: list[int] = field(default_factory=list)
    resumed_bundles: list[int] = field(default_factory=list)
    already: int = 0
    problems: list[str] = field(default_factory=list)
    ranges: list[tuple[date, date]] = field(default_factory=list)
    matched: int = 0

    @property
    def message(self) -> str:
        if self.status == "skipped":
            return "a pull of this source is already running"
        parts = [f"{len(self.new_bundles)} new file(s)"]
        if self.new_bundles:
            parts[0] += " (bundles " + ", ".join(map(str, self.new_bundles[:20])) + (", ..." if len(self.new_bundles) > 20 else "") + ")"
        parts.append(f"{self.already} already ingested")
        if self.resumed_bundles:
            parts.append("finished interrupted bundles " + ", ".join(map(str, self.resumed_bundles)))
        if self.problems:
            parts.append(f"{len(self.problems)} problem(s): " + "; ".join(self.problems[:MESSAGE_PROBLEMS]))
        return ", ".join(parts)

    def as_dict(self) -> dict:
        return {
            "source": self.source_id, "status": self.status, "new_bundles": self.new_bundles, "already": self.already,
            "problems": len(self.problems), "ranges": [(a.isoformat(), b.isoformat()) for a, b in self.ranges],
        }  # fmt: skip


def pull(source_id: int, token: str | None = None) -> PullResult:
    """Pull one source now (see the module docstring); records the outcome on the Source row.

    `token` identifies this pull (the Celery task id: a redelivered task resumes its own claim).
    Raises Source.DoesNotExist for an unknown id.
    """
    token = (token or uuid.uuid4().hex)[:64]
    result = PullResult(source_id)
    if not _claim(source_id, token):
        Source.objects.get(pk=source_id)  # an unknown id raises rather than reporting "running"
        result.status = "skipped"
        return result
    ranges: list[tuple[date, date]] = []
    try:
        source = Source.objects.get(pk=source_id)
        for bundle in Bundle.objects.filter(
            source_label=source.name[:200], status__in=[Bundle.Status.QUEUED, Bundle.Status.RUNNING], created_by__isnull=True
        ).order_by("pk"):
            result.resumed_bundles.append(bundle.pk)
            _ingest(bundle.pk, bundle.original_name, result, ranges)
        try:
            check_location(source.location)
            if source.kind == Source.Kind.URL:
                _pull_url(source, result, ranges)
            else:
                _pull_glob(source, result, ranges)
        except (SourceRefused, OSError) as exc:
            result.status = "failed"
            result.problems.insert(0, f"{source.location}: {exc}")
        if result.status == "ok" and result.problems:
            result.status = "partial"
    except Exception as exc:  # recorded on the source; the bundles made so far still get their rebuild
        logger.exception("pull of source %s crashed", source_id)
        result.status = "failed"
        result.problems.insert(0, f"pull crashed: {exc!r}")
    except BaseException as exc:
        result.status = "failed"
        result.problems.insert(0, f"pull interrupted: {exc!r}")
        raise
    finally:
        result.ranges = merge_ranges(ranges)
        _finish(source_id, token, result)
    return result


def _claim(source_id: int, token: str) -> bool:
    now = timezone.now()
    free = ~Q(last_pull_status=Source.PullStatus.RUNNING) | Q(last_pull_started_at__lt=now - PULL_STALE_AFTER) | Q(pull_token=token)
    return bool(
        Source.objects.filter(free, pk=source_id).update(last_pull_status=Source.PullStatus.RUNNING, last_pull_started_at=now, pull_token=token)
    )


def _finish(source_id: int, token: str, result: PullResult) -> None:
    now = timezone.now()
    Source.objects.filter(pk=source_id, pull_token=token).update(
        last_pull_status=result.status,
        last_pull_at=now,
        last_pull_message=result.message[:4000],
        last_new_file_at=now if result.new_bundles else F("last_new_file_at"),
        pull_token="",
    )


def merge_ranges(ranges: list[tuple[date, date]]) -> list[tuple[date, date]]:
    """Overlapping or adjacent day ranges merged, so a pull queues few rebuilds."""
    merged: list[tuple[date, date]] = []
    for first, last in sorted(ranges):
        if merged and first <= merged[-1][1] + timedelta(days=1):
            merged[-1] = (merged[-1][0], max(merged[-1][1], last))
        else:
            merged.append((first, last))
    return merged


def _known(sha: str) -> bool:
    return Bundle.objects.filter(sha256=sha).exists()


def _new_bundle(source: Source, stream: BinaryIO, name: str, result: PullResult, ranges: list, max_bytes: int | None = None) -> None:
    bundle = create_bundle(
        stream, name, fmt=source.format, source=source.name, site=source.site_hint, schedd=source.schedd_hint, max_bytes=max_bytes
    )
    result.new_bundles.append(bundle.pk)
    _ingest(bundle.pk, name, result, ranges)


def _ingest(bundle_id: int, name: str, result: PullResult, ranges: list) -> None:
    try:
        bundle = ingest_bundle(bundle_id)
    except Exception as exc:  # one file's crash must not stop the pull; the bundle keeps the reason
        logger.exception("pull: ingest of bundle %s failed", bundle_id)
        mark_failed(bundle_id, f"ingest failed: {exc}; re-parse it with manage.py reingest {bundle_id}")
        result.problems.append(f"{name}: bundle {bundle_id} failed: {exc}")
        return
    if bundle.first_day and bundle.last_day:
        ranges.append((bundle.first_day, bundle.last_day))


# --- glob sources --------------------------------------------------------------------------------------


def glob_matches(pattern: str) -> list[str]:
    """What a glob pattern names, sorted. `**` spans directories but never descends through a symbolic
    link (glob.glob would, and two looping links make it run for ever); names starting with a dot match
    only a pattern component that starts with one, as in the shell. Nothing is checked yet."""
    base = glob_base(pattern)
    rest = os.path.relpath(pattern, base)
    if rest in (".", "") or pattern.endswith(os.sep):
        return []
    dotted = any(part.startswith(".") for part in rest.split(os.sep))
    matches = []
    for path in Path(base).glob(rest):
        relative = path.relative_to(base).parts
        if not dotted and any(part.startswith(".") for part in relative):
            continue
        matches.append(str(path))
    return sorted(matches)


@contextmanager
def open_inside(path: str, roots: list[Path]) -> Iterator[BinaryIO]:
    """Open a regular file whose real path lies inside `roots`; SourceRefused otherwise.

    The check is made on the opened descriptor (its /proc path where there is one), so a symlink swapped
    in between the check and the open cannot lead outside the roots.
    """
    real = os.path.realpath(path)
    if not inside(Path(real), roots):
        raise SourceRefused("resolves outside the allowed source roots (a symbolic link?)")
    fd = os.open(real, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise SourceRefused("not a regular file")
        proc = f"/proc/self/fd/{fd}"
        if os.path.islink(proc) and not inside(Path(os.readlink(proc)), roots):
            raise SourceRefused("resolves outside the allowed source roots")
        handle = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with handle:
        yield handle


def _pull_glob(source: Source, result: PullResult, ranges: list) -> None:
    roots = allowed_roots()
    matches = glob_matches(source.location)
    names = set(matches)
    for path in matches:
        if os.path.isdir(path):
            continue
        if path.endswith(".err") and path[: -len(".err")] + ".out" in names:
            continue  # pulled with its .out
        result.matched += 1
        err = path[: -len(".out")] + ".err" if path.endswith(".out") else ""
        try:
            if err and os.path.lexists(err):
                _pull_pair(source, path, err, roots, result, ranges)
            else:
                with open_inside(path, roots) as handle:
                    sha = hashlib.file_digest(handle, "sha256").hexdigest()
                    if _known(sha):
                        result.already += 1
                        continue
                    handle.seek(0)
                    _new_bundle(source, handle, path, result, ranges)
        except (SourceRefused, OSError, ValueError, tarfile.TarError) as exc:
            result.problems.append(f"{path}: {exc}")


class _HashSink:
    """A write-only file that only hashes what is written to it."""

    def __init__(self) -> None:
        self.digest = hashlib.sha256()

    def write(self, data: bytes) -> int:
        self.digest.update(data)
        return len(data)


def _write_pair(out: BinaryIO, err: BinaryIO, out_name: str, err_name: str, target) -> None:
    """A deterministic tar of the two files (fixed metadata), so the same contents give the same sha256."""
    with tarfile.open(fileobj=target, mode="w|", format=tarfile.GNU_FORMAT) as tar:
        for handle, name in ((out, out_name), (err, err_name)):
            handle.seek(0)
            info = tarfile.TarInfo(name)
            info.size = os.fstat(handle.fileno()).st_size
            info.mode = 0o644
            info.mtime = 0
            tar.addfile(info, handle)


def _pull_pair(source: Source, out_path: str, err_path: str, roots: list[Path], result: PullResult, ranges: list) -> None:
    out_name, err_name = os.path.basename(out_path), os.path.basename(err_path)
    with ExitStack() as stack:
        out = stack.enter_context(open_inside(out_path, roots))
        try:
            err = stack.enter_context(open_inside(err_path, roots))
        except (SourceRefused, OSError) as exc:
            result.problems.append(f"{err_path}: {exc} (its .out is pulled alone)")
            sha = hashlib.file_digest(out, "sha256").hexdigest()
            if _known(sha):
                result.already += 1
                return
            out.seek(0)
            _new_bundle(source, out, out_path, result, ranges)
            return
        sink = _HashSink()
        _write_pair(out, err, out_name, err_name, sink)
        if _known(sink.digest.hexdigest()):
            result.already += 1
            return
        with tempfile.TemporaryFile() as tmp:
            _write_pair(out, err, out_name, err_name, tmp)
            tmp.seek(0)
            _new_bundle(source, tmp, out_path, result, ranges)


# --- URL sources ---------------------------------------------------------------------------------------


class _HTTPOnlyRedirects(urllib.request.HTTPRedirectHandler):
    """Follow redirects to http(s) only (urllib alone would also follow one to ftp://)."""

    max_redirections = 5

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        if urlsplit(newurl).scheme.lower() not in ("http", "https"):
            raise SourceRefused(f"redirect to {newurl!r} refused: only http and https")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def _opener() -> urllib.request.OpenerDirector:
    """http and https only (no file://, ftp:// or data: handlers), proxies from the environment."""
    opener = urllib.request.OpenerDirector()
    for handler in (
        urllib.request.ProxyHandler(),
        urllib.request.UnknownHandler(),
        urllib.request.HTTPHandler(),
        urllib.request.HTTPSHandler(),
        urllib.request.HTTPDefaultErrorHandler(),
        _HTTPOnlyRedirects(),
        urllib.request.HTTPErrorProcessor(),
    ):
        opener.add_handler(handler)
    return opener


def download(url: str, target: BinaryIO, max_bytes: int, timeout: float = URL_TIMEOUT_SECONDS) -> str:
    """Copy the body of `url` into `target`; return its sha256. SourceRefused over `max_bytes`, on a
    non-http(s) redirect or past the deadline; OSError (URLError, HTTPError, timeouts) when it cannot be fetched."""
    digest = hashlib.sha256()
    size = 0
    deadline = time.monotonic() + URL_DEADLINE_SECONDS
    # the opener has http and https handlers only, and refuses redirects elsewhere
    request = urllib.request.Request(url, headers={"User-Agent": "GridLedger source pull"})  # noqa: S310
    with _opener().open(request, timeout=timeout) as response:
        declared = response.headers.get("Content-Length")
        if declared and declared.isdigit() and int(declared) > max_bytes:
            raise SourceRefused(f"{declared} bytes, over the limit of {max_bytes} bytes")
        while chunk := response.read(CHUNK):
            size += len(chunk)
            if size > max_bytes:
                raise SourceRefused(f"larger than the limit of {max_bytes} bytes")
            if time.monotonic() > deadline:
                raise SourceRefused(f"download took longer than {URL_DEADLINE_SECONDS} s")
            digest.update(chunk)
            target.write(chunk)
    return digest.hexdigest()


def _pull_url(source: Source, result: PullResult, ranges: list) -> None:
    max_bytes = int(settings.BUNDLE_MAX_UPLOAD_BYTES)
    result.matched = 1
    with tempfile.TemporaryFile() as tmp:
        try:
            sha = download(source.location, tmp, max_bytes)
        except urllib.error.HTTPError as exc:
            raise SourceRefused(f"HTTP {exc.code} {exc.reason}") from None
        except urllib.error.URLError as exc:
            raise SourceRefused(f"cannot fetch: {exc.reason}") from None
        if _known(sha):
            result.already += 1
            return
        tmp.seek(0)
        _new_bundle(source, tmp, source.location, result, ranges, max_bytes=max_bytes)
