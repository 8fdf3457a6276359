"""A pulled source run by a real `celery beat` (issue 3): beat -> Redis -> a Celery worker process -> PostgreSQL.

Real parts, as in test_worker_e2e.py: `celery beat` with django-celery-beat's DatabaseScheduler and a `celery
worker`, both on this test's committed database and a queue of their own. A directory Source is added while beat
runs; beat reads the Source's PeriodicTask from the database, sends the pull, the worker ingests the new file
as a Bundle; the next firing finds the same file (same sha256) and makes nothing new.

The shortest schedule a Source allows is one minute (`every_minutes` >= 1, an IntervalSchedule in minutes), and
beat first runs a new interval task one interval after it was saved. Rather than wait two minutes, the test
moves the task's last run one interval back, which is what waiting out the interval does, and tells beat the
schedule changed (the PeriodicTasks row beat polls every --max-interval seconds). Beat still decides, from the
Source's own interval, that the pull is due, and sends it.
"""
import os
import socket
import subprocess
import sys
import time
import uuid
from datetime import timedelta

import pytest
from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone
from django_celery_beat.models import PeriodicTask, PeriodicTasks

from accounting.models import UsageRecord
from ingest.models import Bundle, Source
from portal.celery import app as celery_app

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INTERVAL = timedelta(minutes=1)  # the shortest a Source allows
HISTORY = b"".join(
    f'''*** ClusterId = {n}
GlobalJobId = "ap-beat.example.org#{n}.0#1710000000"
Owner = "u{n}"
x509UserProxyVOName = "osg"
RemoteWallClockTime = {wall}
RequestCpus = 2
RemoteUserCpu = 100
CompletionDate = 1710079200
ExitCode = 0
'''.encode()
    for n, wall in ((1, 3600), (2, 1800))
)


def wait_for(predicate, timeout: float, what: str, explain=lambda: ""):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.25)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}\n{explain()}")


class Celery:
    """`celery beat` (DatabaseScheduler) and `celery worker`, on this test's database and a queue of their own."""

    def __init__(self, bundle_store, roots, log_dir) -> None:
        self.log_dir = log_dir
        self.queue = f"test-beat-{uuid.uuid4().hex[:8]}"
        self.beat_name = f"beat-{self.queue}@{socket.gethostname()}"
        db = connection.settings_dict
        self.env = dict(os.environ)
        self.env.update(
            DJANGO_SETTINGS_MODULE="portal.settings",
            DJANGO_SECRET_KEY="beat-test",
            DATABASE_URL=f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
            REDIS_URL=settings.REDIS_URL,
            GRIDLEDGER_BUNDLE_STORE=str(bundle_store),
            GRIDLEDGER_CELERY_QUEUE=self.queue,  # beat sends to the default queue, the worker reads it
            GRIDLEDGER_SOURCE_ROOTS=os.pathsep.join(map(str, roots)),
        )
        self.processes: list[subprocess.Popen] = []

    def start(self, name: str, *args: str) -> subprocess.Popen:
        with (self.log_dir / f"{name}.log").open("wb") as log:
            process = subprocess.Popen(
                [sys.executable, "-m", "celery", "-A", "portal", *args, "-l", "info"],
                cwd=REPO, env=self.env, stdout=log, stderr=subprocess.STDOUT,
            )  # fmt: skip
        self.processes.append(process)
        return process

    def beat_ready(self) -> bool:
        """Beat answers a ping only once its scheduler has read the schedule from the database (and taken note
        of the last change), so a task saved from now on reaches it as a change."""
        replies = celery_app.control.ping(destination=[self.beat_name], timeout=0.5)
        return any(self.beat_name in reply for reply in replies)

    def logs(self) -> str:
        """The end of each process's log, for a failure message."""
        return "\n".join(f"--- {path.name}\n{path.read_text(errors='replace')[-3000:]}" for path in sorted(self.log_dir.glob("*.log")))

    def stop(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.terminate()
        for process in self.processes:
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)


@pytest.fixture
def watched(settings, tmp_path):
    """The directory the source watches, the one GRIDLEDGER_SOURCE_ROOTS allows."""
    logs = tmp_path / "logs"
    logs.mkdir()
    settings.GRIDLEDGER_SOURCE_ROOTS = [str(logs)]
    return logs


@pytest.fixture
def celery(transactional_db, bundle_store, watched, tmp_path):
    """A worker and beat (beat looking at its schedule every second); both stopped, then killed, afterwards."""
    log_dir = tmp_path / "celery-logs"
    log_dir.mkdir()
    parts = Celery(bundle_store, [watched], log_dir)
    try:
        parts.start(
            "worker", "worker", "-Q", parts.queue, "--pool", "solo", "--without-heartbeat", "--without-mingle",
            "--without-gossip", "-n", f"{parts.queue}@%h",
        )  # fmt: skip
        parts.start(
            "beat", "beat", "-S", "django_celery_beat.schedulers:DatabaseScheduler", "--max-interval", "1",
            "-s", str(tmp_path / "celerybeat-schedule"), "--enable-remote-control", "-n", parts.beat_name,
        )  # fmt: skip
        yield parts
    finally:
        parts.stop()


def one_interval_ago(task_id: int) -> None:
    """Move the task's last run one interval back (what waiting out the interval does) and tell beat that its
    schedule changed, so it re-reads the task from the database."""
    task = PeriodicTask.objects.get(pk=task_id)
    PeriodicTask.objects.filter(pk=task_id).update(last_run_at=(task.last_run_at or timezone.now()) - INTERVAL)
    PeriodicTasks.update_changed()


@pytest.mark.worker
def test_beat_pulls_a_directory_source_and_the_next_firing_skips_the_same_file(celery, watched):
    wait_for(celery.beat_ready, 30, "beat to start", celery.logs)
    (watched / "history.1").write_bytes(HISTORY)
    with transaction.atomic():  # beat sees the new task and its last run together
        source = Source(name="AP beat", location=f"{watched}/*", every_minutes=1)
        source.full_clean()
        source.save()
        one_interval_ago(source.periodic_task_id)

    source = wait_for(
        lambda: Source.objects.filter(pk=source.pk, last_pull_status="ok").first(), 30, "beat to fire and the worker to pull", celery.logs
    )
    assert source.last_pull_message.startswith("1 new file(s)"), source.last_pull_message
    (bundle,) = Bundle.objects.filter(source_label="AP beat")
    assert (bundle.status, bundle.format, bundle.original_name) == ("done", "htcondor-history", str(watched / "history.1"))
    assert (bundle.records_read, bundle.records_inserted, bundle.rejected) == (2, 2, 0)
    records = UsageRecord.objects.order_by("natural_key")
    assert [(r.natural_key, r.wall_seconds, r.cores, r.vo.name, r.bundle_id) for r in records] == [
        ("ap-beat.example.org#1.0#1710000000", 3600, 2, "osg", bundle.pk),
        ("ap-beat.example.org#2.0#1710000000", 1800, 2, "osg", bundle.pk),
    ]

    # Beat writes its runs down when its schedule changes (else every 3 minutes): the pull was beat's first firing.
    # Only once that is written may the last run be moved back, or beat's write would undo the move.
    PeriodicTasks.update_changed()
    task = wait_for(
        lambda: PeriodicTask.objects.filter(pk=source.periodic_task_id, total_run_count__gte=1).first(), 10,
        "beat to record its run", celery.logs,
    )  # fmt: skip
    assert (task.total_run_count, task.last_run_at > source.created_at) == (1, True)

    # The next firing: the same file (same sha256) is skipped, no new bundle, no second row.
    one_interval_ago(task.pk)
    source = wait_for(
        lambda: Source.objects.filter(pk=source.pk, last_pull_status="ok", last_pull_at__gt=source.last_pull_at).first(), 20,
        "beat to fire again and the worker to pull", celery.logs,
    )  # fmt: skip
    assert source.last_pull_message == "0 new file(s), 1 already ingested", source.last_pull_message
    assert list(Bundle.objects.filter(source_label="AP beat")) == [bundle]
    assert UsageRecord.objects.count() == 2
    PeriodicTasks.update_changed()
    wait_for(lambda: PeriodicTask.objects.filter(pk=task.pk, total_run_count=2).exists(), 10, "beat to record its second run", celery.logs)
