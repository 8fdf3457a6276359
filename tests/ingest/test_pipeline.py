"""The ingest's writer thread: in order, on the caller's connection, bounded, errors raised in the caller."""
import threading

import pytest
from django.db import connections

from accounting.models import UsageRecord
from ingest.models import Bundle
from ingest.services import loader as loader_module
from ingest.services.bundles import create_bundle_from_path, ingest_bundle
from ingest.services.pipeline import Writer

pytestmark = pytest.mark.django_db

AD = 'GlobalJobId = "ap1.example.org#{n}.0#1"\nRemoteWallClockTime = 60\nCompletionDate = 1700000000\n\n'


def test_work_runs_in_order_on_another_thread_with_the_callers_connection():
    seen = []
    with Writer() as writer:
        for n in range(20):
            writer.submit(lambda n: seen.append((n, threading.get_ident(), connections["default"])), n)
    assert [n for n, _, _ in seen] == list(range(20))
    assert {ident for _, ident, _ in seen} != {threading.get_ident()}
    assert {id(conn) for _, _, conn in seen} == {id(connections["default"])}


def test_the_first_error_stops_the_writing_and_is_raised_in_the_caller():
    done = []

    def fail():
        raise ValueError("disk full")

    writer = Writer()
    with pytest.raises(ValueError, match="disk full"), writer:
        writer.submit(done.append, 1)
        writer.submit(fail)
        writer.submit(done.append, 2)
        writer.close()
    assert done == [1]
    assert not writer.thread.is_alive()


def test_the_queue_is_bounded():
    release = threading.Event()
    with Writer(depth=2) as writer:
        writer.submit(release.wait)  # the thread holds this one
        blocked = threading.Thread(target=lambda: [writer.submit(lambda: None) for _ in range(3)])
        blocked.start()
        blocked.join(timeout=0.5)
        assert blocked.is_alive()  # two queued, the third waits for room
        release.set()
        blocked.join(timeout=5)
        assert not blocked.is_alive()


def test_a_failed_batch_write_fails_the_ingest_and_keeps_the_batches_before_it(tmp_path, monkeypatch):
    path = tmp_path / "history"
    path.write_text("".join(AD.format(n=n) for n in range(25)))
    written = loader_module.RecordLoader._write
    calls = []

    def second_batch_fails(self, batch):
        calls.append(len(batch.latest))
        if len(calls) == 2:
            raise RuntimeError("connection lost")
        written(self, batch)

    monkeypatch.setattr(loader_module, "BATCH_SIZE", 10)
    monkeypatch.setattr(loader_module.RecordLoader, "_write", second_batch_fails)
    bundle = create_bundle_from_path(path)
    with pytest.raises(RuntimeError, match="connection lost"):
        ingest_bundle(bundle.pk)
    assert calls == [10, 10]  # nothing written after the failure
    assert UsageRecord.objects.count() == 10
    assert Bundle.objects.get(pk=bundle.pk).status == Bundle.Status.RUNNING  # the task marks it failed or retries


def test_switch_interval_and_garbage_collection_are_tuned_while_writing_and_restored():
    import gc
    import sys

    from ingest.services.pipeline import GC_THRESHOLD, SWITCH_INTERVAL

    def settings() -> tuple:
        return sys.getswitchinterval(), gc.get_threshold(), gc.get_freeze_count() > 0

    before = settings()
    assert before[2] is False  # nothing frozen outside an ingest
    tuned = (pytest.approx(SWITCH_INTERVAL), GC_THRESHOLD, True)
    seen = []
    with Writer() as writer:
        writer.submit(lambda: seen.append(settings()))
    assert seen == [tuned]
    assert settings() == before
    first, second = Writer(), Writer()  # two ingests of one process that overlap, ending in either order
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)
    assert settings() == tuned
    second.__exit__(None, None, None)
    assert settings() == before
    gc.freeze()  # frozen by something else (a worker after fork, say): left frozen
    try:
        with Writer():
            pass
        assert gc.get_freeze_count() > 0  # gc.unfreeze() would have made it 0
    finally:
        gc.unfreeze()


def synchronous_commit() -> str:
    with connections["default"].cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        return cursor.fetchone()[0]


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(connections["default"].vendor != "postgresql", reason="PostgreSQL setting")
def test_an_ingest_commits_without_flushes_but_never_a_callers_transaction():
    from django.db import transaction

    from ingest.services.pipeline import unflushed_commits

    with unflushed_commits():  # an ingest's batches and progress
        assert synchronous_commit() == "off"
        with transaction.atomic():
            assert synchronous_commit() == "off"
    assert synchronous_commit() == "on"  # back before the bundle's final update, which flushes them all
    with transaction.atomic(), unflushed_commits():  # inside someone else's transaction: left alone
        assert synchronous_commit() == "on"
    with pytest.raises(RuntimeError), unflushed_commits():  # a failed ingest puts it back too
        raise RuntimeError("batch failed")
    assert synchronous_commit() == "on"
