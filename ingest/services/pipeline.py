"""Writing while parsing: one ingest's database work runs in order on a second thread.

psycopg releases the GIL while PostgreSQL works, and PostgreSQL runs on another core, so the parser can
read batch N+1 while batch N is copied and upserted; the wall time of an ingest is then about the larger of
parsing and loading rather than their sum (issue 3). Nothing else changes:

- the thread uses the caller's own connection (Django's thread sharing), so the advisory lock, an outer
  transaction and every batch's own transaction are exactly what they were;
- all the database work of the ingest loop (batch writes, rejected lines, progress) goes through the one
  queue and runs in the order it was submitted, while the caller does not touch the database;
- the queue is bounded (the parser never runs more than `depth` batches ahead: memory stays bounded);
- the first error stops the writing: later work is dropped and the error is raised in the caller, at its
  next submit or when the writer is closed, as it would have been raised by the write itself.
"""
from __future__ import annotations

import gc
import queue
import sys
import threading
from collections.abc import Callable
from contextlib import contextmanager

from django.db import DEFAULT_DB_ALIAS, DatabaseError, InterfaceError, connection, connections

DEPTH = 2
# After each reply from PostgreSQL the writer thread waits for the GIL, which the parsing thread gives up only
# every "switch interval" (5 ms by default): several times per batch, during which PostgreSQL sits idle. A
# shorter interval while the writer runs (the process does nothing else then) keeps the server busier.
SWITCH_INTERVAL = 0.0005
# Python's cyclic garbage collector looks at every young container object each 700 allocations, and at all
# objects from time to time; an ingest allocates millions (ads, records, rows) that die with their batch,
# without cycles. While a writer runs, it collects 30 times less often and leaves the objects that existed
# before (Django, the application: long-lived) out of its passes (gc.freeze): 15-25 % less CPU per ad.
GC_THRESHOLD = (20_000, 10, 10)
_STOP = object()


# writers running in this process; the settings before the first; whether it froze (not if something else had)
_tuned = {"writers": 0, "interval": 0.0, "gc": (700, 10, 10), "froze": False}
_tuned_lock = threading.Lock()


def _tune_for_bulk() -> None:
    with _tuned_lock:
        if _tuned["writers"] == 0:
            _tuned["interval"], _tuned["gc"] = sys.getswitchinterval(), gc.get_threshold()
            _tuned["froze"] = gc.get_freeze_count() == 0
            sys.setswitchinterval(SWITCH_INTERVAL)
            if _tuned["froze"]:
                gc.freeze()
            gc.set_threshold(*GC_THRESHOLD)
        _tuned["writers"] += 1


def _restore_settings() -> None:
    """Back to the settings of before, when the last writer of the process ends (ingests may overlap)."""
    with _tuned_lock:
        _tuned["writers"] -= 1
        if _tuned["writers"] == 0:
            sys.setswitchinterval(_tuned["interval"])
            gc.set_threshold(*_tuned["gc"])
            if _tuned["froze"]:
                gc.unfreeze()


class Writer:
    """Runs submitted callables one after the other on a thread sharing the caller's database connection.

    Use as a context manager; `close()` (or leaving the block) waits for the work submitted so far and
    raises the first error it met."""

    def __init__(self, depth: int = DEPTH, alias: str = DEFAULT_DB_ALIAS) -> None:
        self.alias = alias
        self.connection = connections[alias]
        self.queue: queue.Queue = queue.Queue(maxsize=depth)
        self.error: BaseException | None = None  # the first error of the thread; kept, raised to the caller
        self.thread = threading.Thread(target=self._run, name="ingest-writer", daemon=True)
        self.closed = False

    def __enter__(self) -> Writer:
        self.connection.inc_thread_sharing()
        _tune_for_bulk()
        self.thread.start()
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            self.close(raise_error=exc is None)
        finally:
            _restore_settings()
            self.connection.dec_thread_sharing()

    def submit(self, work: Callable, *args) -> None:
        """Queue `work(*args)`; blocks while `depth` items wait. Raises the writer's error, if any."""
        if self.closed:
            raise RuntimeError("the writer is closed")
        self._raise()
        self.queue.put((work, args))

    def close(self, raise_error: bool = True) -> None:
        """Wait for everything submitted, then stop the thread; raise its first error."""
        if not self.closed:
            self.closed = True
            self.queue.put(_STOP)
            self.thread.join()
        if raise_error:
            self._raise()

    def _raise(self) -> None:
        if self.error is not None:
            raise self.error

    def _run(self) -> None:
        connections[self.alias] = self.connection  # this thread's Django connection is the caller's
        while True:
            item = self.queue.get()
            if item is _STOP:
                return
            if self.error is not None:
                continue  # after an error nothing more is written; keep draining so the caller never blocks
            work, args = item
            try:
                work(*args)
            except BaseException as exc:  # noqa: BLE001 - handed to the caller, which raises it
                self.error = exc


@contextmanager
def unflushed_commits():
    """While an ingest writes (PostgreSQL): its batches and progress commit without waiting for their WAL to
    reach the disk (synchronous_commit off for the session). Each used to wait ~10 ms for a flush, and its
    BEGIN + SET LOCAL for the GIL, while PostgreSQL had nothing else to do. The setting is back before the
    bundle's final update, which commits synchronously and so flushes every batch before it; a crash before
    that leaves the bundle unfinished, and its ingest runs again (idempotent). Inside a caller's own
    transaction nothing changes."""
    if connection.vendor != "postgresql" or connection.in_atomic_block:
        yield
        return
    with connection.cursor() as cursor:
        cursor.execute("SET synchronous_commit = off")
    try:
        yield
    finally:
        try:
            with connection.cursor() as cursor:
                cursor.execute("RESET synchronous_commit")
        except (DatabaseError, InterfaceError):
            pass  # the connection is gone, and its session with it
