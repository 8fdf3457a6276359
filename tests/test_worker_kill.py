"""A worker killed in the middle of a bundle (issue 3, "Never lose, never double").

Real parts, as in test_worker_e2e.py: the upload API, Redis, `celery worker` processes on their own queue,
this test's PostgreSQL database. The first worker is SIGKILLed (its whole process group) while it is loading
the bundle, with some batches committed; a second worker is started. The task was never acknowledged
(acks_late), so Redis hands it to the second worker once its visibility timeout has passed (shortened for
the test through GRIDLEDGER_VISIBILITY_TIMEOUT, see portal/settings.py), which ingests the bundle again from
the start: the rows the first attempt committed are recognised as this bundle's own. The bundle ends `done`
with the right counts, one row per job, and summaries worth exactly the jobs' core-hours. A second test kills
only the prefork pool process running the task (what the OOM killer does): its parent puts the message back
(reject_on_worker_lost) and a new pool process completes the bundle the same way.
"""
import io
import os
import signal
import subprocess
import sys
import time
import uuid

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.db import connection
from django.db.models import Count, Sum
from django.urls import reverse

from accounting.models import DailyUsage, UsageRecord
from ingest.models import Bundle
from portal.celery import app as celery_app

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
JOBS = 50_000
VISIBILITY_TIMEOUT = 2  # seconds: the killed worker's task is handed on this long after it was delivered


def history() -> tuple[bytes, float]:
    """JOBS batch-job ads over four days of March 2024, and their core-hours."""
    ads, core_hours = [], 0.0
    for n in range(JOBS):
        wall, cores = 600 + n % 3000, 1 + n % 4
        core_hours += wall * cores / 3600
        ads.append(
            f'*** ClusterId = {n}\nGlobalJobId = "ap-kill.example.org#{n}.0#1710000000"\nOwner = "user{n % 50}"\n'
            f'x509UserProxyVOName = "ligo"\nRemoteWallClockTime = {wall}\nRequestCpus = {cores}\n'
            f"RemoteUserCpu = {wall // 2}\nCompletionDate = {1710000000 + n * 7}\n"
        )
    return "".join(ads).encode(), core_hours


def wait_for(predicate, timeout: float, what: str, interval: float = 0.05, explain=lambda: ""):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}\n{explain()}")


class Workers:
    """Starts `celery worker` processes, each in its own process group, on one queue of its own."""

    def __init__(self, bundle_store, log_dir) -> None:
        self.log_dir = log_dir
        self.queue = f"test-kill-{uuid.uuid4().hex[:8]}"
        db = connection.settings_dict
        self.env = dict(os.environ)
        self.env.update(
            DJANGO_SETTINGS_MODULE="portal.settings",
            DJANGO_SECRET_KEY="worker-test",
            DATABASE_URL=f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
            REDIS_URL=settings.REDIS_URL,
            GRIDLEDGER_BUNDLE_STORE=str(bundle_store),
            GRIDLEDGER_CELERY_QUEUE=self.queue,
            GRIDLEDGER_VISIBILITY_TIMEOUT=str(VISIBILITY_TIMEOUT),
        )
        self.processes: list[subprocess.Popen] = []

    def start(self, pool: str = "solo") -> subprocess.Popen:
        log = (self.log_dir / f"worker-{len(self.processes)}.log").open("wb")
        process = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "portal", "worker", "-Q", self.queue, "--pool", pool, "--concurrency", "1",
             "--without-heartbeat", "--without-mingle", "--without-gossip", "-l", "warning",
             "-n", f"{self.queue}-{len(self.processes)}@%h"],
            cwd=REPO, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        log.close()
        self.processes.append(process)
        return process

    def logs(self) -> str:
        """The end of each worker's log, for a failure message."""
        return "\n".join(f"--- {path.name}\n{path.read_text(errors='replace')[-3000:]}" for path in sorted(self.log_dir.glob("*.log")))

    @staticmethod
    def kill(process: subprocess.Popen) -> None:
        os.killpg(process.pid, signal.SIGKILL)  # the worker and anything it started: no chance to clean up
        process.wait(timeout=10)

    def stop(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
                try:
                    process.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    self.kill(process)


@pytest.fixture
def workers(transactional_db, bundle_store, tmp_path):
    pool = Workers(bundle_store, tmp_path)
    eager, default_queue = celery_app.conf.task_always_eager, celery_app.conf.task_default_queue
    celery_app.conf.task_always_eager = False
    celery_app.conf.task_default_queue = pool.queue
    try:
        yield pool
    finally:
        celery_app.conf.task_always_eager, celery_app.conf.task_default_queue = eager, default_queue
        pool.stop()


def upload(client, content: bytes) -> int:
    client.force_login(User.objects.create_user("loader", password="pw", is_staff=True, is_superuser=True))
    file = io.BytesIO(content)
    file.name = "history.kill"
    response = client.post(reverse("api-bundles"), {"file": file})
    assert response.status_code == 202
    return response.json()["id"]


def wait_for_some_batches(workers: Workers, bundle_id: int) -> None:
    """Until the ingest has committed some batches, well before the end."""
    wait_for(lambda: UsageRecord.objects.count() >= 4000, 40, "the first worker to commit some batches", explain=workers.logs)


def assert_killed_mid_bundle(bundle_id: int) -> None:
    loaded = UsageRecord.objects.count()
    bundle = Bundle.objects.get(pk=bundle_id)
    assert bundle.status == "running" and 0 < loaded < JOBS, (bundle.status, loaded)


@pytest.mark.worker
def test_a_worker_killed_mid_bundle_is_replaced_and_the_bundle_completes_once(client, workers):
    content, core_hours = history()
    first = workers.start()
    bundle_id = upload(client, content)
    wait_for_some_batches(workers, bundle_id)
    workers.kill(first)
    assert_killed_mid_bundle(bundle_id)

    workers.start()
    assert_completed_once(workers, bundle_id, core_hours)


@pytest.mark.worker
def test_a_prefork_child_killed_mid_bundle_is_replaced_by_its_parent_and_the_bundle_completes_once(client, workers):
    """The OOM killer's case: only the pool process running the task dies. Its parent sees it lost, rejects
    the message back to the queue (reject_on_worker_lost) and starts a new pool process, which runs it again
    at once: the dead process's database session (and its advisory lock on the bundle) may still be closing."""
    content, core_hours = history()
    parent = workers.start(pool="prefork")
    bundle_id = upload(client, content)
    wait_for_some_batches(workers, bundle_id)
    (child,) = subprocess.run(["pgrep", "-P", str(parent.pid)], capture_output=True, text=True, check=True).stdout.split()
    os.kill(int(child), signal.SIGKILL)
    assert_killed_mid_bundle(bundle_id)
    assert parent.poll() is None  # the parent lives on and replaces its child
    assert_completed_once(workers, bundle_id, core_hours)
    assert "exited with 'signal 9 (SIGKILL)'" in workers.logs()  # the parent saw its child lost


def assert_completed_once(workers: Workers, bundle_id: int, core_hours: float) -> None:
    bundle = wait_for(
        lambda: Bundle.objects.filter(pk=bundle_id, status__in=["done", "failed"]).first(), 40,
        "the second worker to finish the bundle", interval=0.25, explain=workers.logs,
    )  # fmt: skip
    assert (bundle.status, bundle.records_read, bundle.records_inserted, bundle.records_updated) == ("done", JOBS, JOBS, 0)
    assert (bundle.duplicates, bundle.rejected, bundle.format) == (0, 0, "htcondor-history")
    assert UsageRecord.objects.count() == JOBS
    assert UsageRecord.objects.values("natural_key").distinct().count() == JOBS
    assert not UsageRecord.objects.values("natural_key").annotate(n=Count("id")).filter(n__gt=1).exists()
    assert set(UsageRecord.objects.values_list("bundle_id", flat=True).distinct()) == {bundle_id}

    # The rebuild the second attempt queued: every core-hour once, as batch work.
    def summarised():
        total = DailyUsage.objects.aggregate(hours=Sum("wall_hours"), jobs=Sum("jobs"))
        return total if total["hours"] and abs(total["hours"] - core_hours) < 1e-6 * core_hours else None

    total = wait_for(summarised, 30, "the summary rebuild", interval=0.25, explain=workers.logs)
    assert total["hours"] == pytest.approx(core_hours, rel=1e-9)
    assert set(DailyUsage.objects.values_list("designation", flat=True)) == {"batch"}
    assert DailyUsage.objects.reported().aggregate(hours=Sum("wall_hours"))["hours"] == pytest.approx(core_hours, rel=1e-9)
