"""Creating bundles and ingesting them: the one path behind `manage.py ingest`, the upload API and pulls."""
from __future__ import annotations

import io
import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from django.db import connection
from django.utils import timezone

from ingest.models import Bundle, BundleError
from ingest.parsers import DETECT_BYTES, ParseContext, ParsedRecord, PilotRuns, Rejection, detect_format, get_parser
from ingest.services import store
from ingest.services.loader import RecordLoader, Run, call
from ingest.services.members import ArchiveRejected, Member, close_archives, open_member, plan
from ingest.services.pipeline import Writer, unflushed_commits
from ingest.services.side_loader import SideLoader, handles

logger = logging.getLogger(__name__)
MAX_ERRORS_KEPT = 10_000
MAX_ERR_BYTES = 64 * 1024 * 1024
BUNDLE_LOCK_CLASS = 0x62756E64  # "bund": advisory-lock namespace of bundle ingests
PROGRESS_EVERY = 5000  # records between progress reports (the command line's bar)
# The bundle's counts so far are saved for its page and the API at most this often: once per batch, that was one
# more statement and commit per 5,000 records while PostgreSQL waited for the writer thread.
PROGRESS_SECONDS = 1.0

Progress = Callable[[int, int], None]  # (bytes done, bytes total)


def create_bundle(
    stream: BinaryIO,
    name: str,
    *,
    fmt: str = "",
    source: str = "",
    site: str = "",
    schedd: str = "",
    user=None,
    max_bytes: int | None = None,
) -> Bundle:
    """Keep the file in the bundle store and queue a Bundle row for it (not yet ingested)."""
    if fmt:
        get_parser(fmt)  # unknown names fail here, before anything is stored
    relative, sha, size = store.save_stream(stream, max_bytes=max_bytes)
    return Bundle.objects.create(
        original_name=name[:500],
        stored_path=relative,
        sha256=sha,
        size_bytes=size,
        requested_format=fmt,
        source_label=source[:200],
        site_hint=site[:200],
        schedd_hint=schedd[:255],
        created_by=user if user is not None and user.is_authenticated else None,
    )


def create_bundle_from_path(path: Path, **kwargs) -> Bundle:
    """A bundle of a local file, archive or directory (a directory is kept as a tar of its files)."""
    if path.is_dir():
        relative, sha, size = store.save_path(path)
        fmt = kwargs.get("fmt", "")
        if fmt:
            get_parser(fmt)
        return Bundle.objects.create(
            original_name=str(path)[:500],
            stored_path=relative,
            sha256=sha,
            size_bytes=size,
            requested_format=fmt,
            source_label=kwargs.get("source", "")[:200],
            site_hint=kwargs.get("site", "")[:200],
            schedd_hint=kwargs.get("schedd", "")[:255],
        )
    with path.open("rb") as handle:
        return create_bundle(handle, str(path), **kwargs)


class _ErrorSink:
    """Collects rejections of one bundle and writes them in bulk (the first MAX_ERRORS_KEPT of them)."""

    def __init__(self, bundle: Bundle, run: Run = call) -> None:
        self.bundle = bundle
        self.run = run
        self.pending: list[BundleError] = []
        self.count = 0

    def add(self, file: str, line: int | None, reason: str) -> None:
        self.count += 1
        if self.count <= MAX_ERRORS_KEPT:
            self.pending.append(BundleError(bundle=self.bundle, file=file[:500], line=line, reason=reason[:2000]))
        if len(self.pending) >= 1000:
            self.flush()

    def flush(self) -> None:
        if self.pending:
            self.run(BundleError.objects.bulk_create, self.pending)
            self.pending = []


def ingest_bundle(bundle_id: int, progress: Progress | None = None) -> Bundle:
    """Read every file of the bundle, load its records and record its rejections; return the bundle.

    Idempotent: running it again (e.g. after a worker died half-way) starts the counts afresh, and rows
    the earlier attempt wrote are recognised as this bundle's own. Ends `done` when any record was read,
    `failed` when nothing could be read. A second delivery while a worker is still ingesting the same
    bundle (PostgreSQL advisory lock held) returns at once and leaves that run alone.
    """
    with _claim(bundle_id) as claimed:
        if not claimed:
            logger.warning("bundle %s is being ingested by another worker; this delivery does nothing", bundle_id)
            return Bundle.objects.get(pk=bundle_id)
        try:
            return _ingest(bundle_id, progress)
        finally:
            close_archives()


@contextmanager
def _claim(bundle_id: int):
    """A session-level advisory lock on the bundle (released when the run ends or its worker dies)."""
    if connection.vendor != "postgresql":
        yield True
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", [BUNDLE_LOCK_CLASS, bundle_id])
        claimed = cursor.fetchone()[0]
    try:
        yield claimed
    finally:
        if claimed:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [BUNDLE_LOCK_CLASS, bundle_id])


def _ingest(bundle_id: int, progress: Progress | None) -> Bundle:
    bundle = Bundle.objects.get(pk=bundle_id)
    Bundle.objects.filter(pk=bundle_id).update(
        status=Bundle.Status.RUNNING, started_at=timezone.now(), finished_at=None, records_read=0,
        records_inserted=0, records_updated=0, duplicates=0, rejected=0, bytes_done=0, message="",
    )  # fmt: skip
    BundleError.objects.filter(bundle_id=bundle_id).delete()
    bundle.refresh_from_db()
    # the database work of the loop, on a second thread while this one parses, its commits not flushed one by one
    with unflushed_commits(), Writer() as writer:
        errors = _ErrorSink(bundle, writer.submit)
        formats: list[str] = []
        loaders: dict[str, RecordLoader | SideLoader] = {}
        read = 0
        done_bytes = 0
        next_save = 0.0  # time.monotonic() of the next progress save
        context = ParseContext(site=bundle.site_hint, schedd=bundle.schedd_hint)
        path = store.absolute(bundle.stored_path)
        try:
            kind, members = plan(path)
        except (ArchiveRejected, OSError) as exc:
            errors.add(bundle.original_name, None, str(exc))
            members, kind = [], "file"
        display_prefix = "" if kind == "file" else f"{bundle.original_name}:"
        by_name = {member.name: member for member in members}
        for member in members:
            if member.name.endswith(".err") and member.name[: -len(".err")] + ".out" in by_name:
                continue  # read with its job.N.M.out by the glidein parser
            display = bundle.original_name if kind == "file" else f"{display_prefix}{member.name}"
            if member.problem:
                errors.add(display, None, member.problem)
                continue
            try:
                with open_member(path, kind, member) as stream:
                    head = stream.read(DETECT_BYTES)
                    parser = get_parser(bundle.requested_format) if bundle.requested_format else detect_format(head, member.name)
                    if parser is None:
                        errors.add(display, None, "unrecognised format (not any of the known log formats)")
                        continue
                    if parser.name not in formats:
                        formats.append(parser.name)
                    loader = loaders.setdefault(parser.name, RecordLoader(bundle.pk, parser.name, run=writer.submit))
                    side = loaders.setdefault(f"{parser.name}:side", SideLoader(bundle.pk, run=writer.submit))
                    stream = _Rewound(head, stream)
                    extras = parser_extras(path, kind, member, parser, context, by_name)
                    for item in _contained(parser.parse(stream, member.name, context, **extras), errors, display):
                        if type(item) is ParsedRecord:  # the common case first
                            loader.add(item, display)
                        elif isinstance(item, Rejection):
                            errors.add(display, item.line, item.reason)
                            continue
                        elif isinstance(item, PilotRuns):
                            loader.add_runs(item, display)
                            continue  # not a record: the runs of records read
                        elif handles(item):
                            side.add(item)
                        else:
                            loader.add(item, display)
                        read += 1
                        if read % PROGRESS_EVERY == 0:
                            position = done_bytes + stream.position
                            if (now := time.monotonic()) >= next_save:
                                errors.flush()
                                writer.submit(_save_progress, bundle, read, errors.count, list(loaders.values()), position)
                                next_save = now + PROGRESS_SECONDS
                            if progress:
                                progress(position, bundle.size_bytes)
            except (ArchiveRejected, OSError, EOFError) as exc:
                errors.add(display, None, f"could not read: {exc}")
            done_bytes += member.size
            if progress:
                progress(min(done_bytes, bundle.size_bytes), bundle.size_bytes)
        for loader in loaders.values():
            loader.flush()
        errors.flush()
    errors.run = call  # the writer is closed: this thread writes again
    for loader in loaders.values():
        if isinstance(loader, RecordLoader):
            for file, line, reason in loader.attach_runs():
                errors.add(file, line, reason)
    errors.flush()
    counts = [loader.counts for loader in loaders.values()]
    firsts = [c.first_day for c in counts if c.first_day]
    lasts = [c.last_day for c in counts if c.last_day]
    status = Bundle.Status.DONE if read else Bundle.Status.FAILED
    Bundle.objects.filter(pk=bundle_id).update(
        status=status,
        format=",".join(formats)[:100],
        records_read=read,
        records_inserted=sum(c.inserted for c in counts),
        records_updated=sum(c.updated for c in counts),
        duplicates=sum(c.duplicates for c in counts),
        rejected=errors.count,
        bytes_done=bundle.size_bytes,
        first_day=min(firsts) if firsts else None,
        last_day=max(lasts) if lasts else None,
        finished_at=timezone.now(),
        message="" if read else "nothing could be read; see the errors",
    )
    bundle.refresh_from_db()
    return bundle


def parser_extras(path: Path, kind: str, member: Member, parser, context: ParseContext, by_name: dict) -> dict:
    """What a parser reads beside its file: the glidein's `.err` next to its `job.N.M.out`; the factory
    schedd for `completed_jobs` lines."""
    if parser.name == "gwms-completed":
        return {"schedd": context.schedd}
    if parser.name != "gwms-glidein" or not member.name.endswith(".out") or kind == "file":
        return {}  # a single uploaded file has no siblings; directories and archives do
    err = by_name.get(member.name[: -len(".out")] + ".err")
    if err is None or err.problem:
        return {}
    try:
        with open_member(path, kind, err) as handle:
            return {"sibling_err": io.BytesIO(handle.read(MAX_ERR_BYTES))}
    except (ArchiveRejected, OSError, EOFError):
        return {}


def _contained(items: Iterator, errors: _ErrorSink, display: str) -> Iterator:
    """A parser's items; a parser bug ends that one file with a rejection instead of sinking the bundle."""
    try:
        yield from items
    except Exception as exc:  # noqa: BLE001 - any parser failure is reported and the bundle goes on
        logger.exception("parser failed on %s", display)
        errors.add(display, None, f"internal error reading this file ({type(exc).__name__}: {exc}); the records before it were kept")


def mark_failed(bundle_id: int, message: str) -> None:
    Bundle.objects.filter(pk=bundle_id).update(status=Bundle.Status.FAILED, message=message[:2000], finished_at=timezone.now())


def _save_progress(bundle: Bundle, read: int, rejected: int, loaders: list, position: int) -> None:
    """Counts so far (run on the writer thread after the batches before it, so its counts are up to date)."""
    counts = [loader.counts for loader in loaders]
    Bundle.objects.filter(pk=bundle.pk).update(
        records_read=read,
        records_inserted=sum(c.inserted for c in counts),
        records_updated=sum(c.updated for c in counts),
        duplicates=sum(c.duplicates for c in counts),
        rejected=rejected,
        bytes_done=min(position, bundle.size_bytes),
    )


class _Rewound:
    """A stream that replays the bytes already read for format detection, then continues; counts position."""

    def __init__(self, head: bytes, stream: BinaryIO) -> None:
        import io

        self._head = io.BytesIO(head)
        self._stream = stream
        self.position = 0

    def readline(self, limit: int = -1) -> bytes:
        line = self._head.readline(limit)
        if line and (line.endswith(b"\n") or (limit > 0 and len(line) >= limit)):
            self.position += len(line)
            return line
        rest = self._stream.readline(limit - len(line) if limit > 0 else -1)
        line += rest
        self.position += len(line)
        return line

    def readinto(self, buffer) -> int:
        """Into `buffer` (a writable memoryview): the history parser reads its blocks so, into one buffer."""
        count = self._head.readinto(buffer)
        if count == 0:
            count = self._stream.readinto(buffer) or 0
        self.position += count
        return count

    def read(self, size: int = -1) -> bytes:
        data = self._head.read(size)
        if size < 0:
            data += self._stream.read()
        elif len(data) < size:
            data += self._stream.read(size - len(data))
        self.position += len(data)
        return data

    def __iter__(self):
        while line := self.readline():
            yield line

