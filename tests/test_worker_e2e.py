"""End to end with real parts: upload through the API -> Redis -> a Celery worker process -> PostgreSQL."""
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
from django.urls import reverse

from accounting.models import DailyUsage, UsageRecord
from ingest.models import Bundle
from portal.celery import app as celery_app

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HISTORY = b"".join(
    f'''*** ClusterId = {n}
GlobalJobId = "ap9.example.org#{n}.0#1"
x509UserProxyVOName = "ligo"
RemoteWallClockTime = 5400
RequestCpus = 4
CompletionDate = 1710079200
'''.encode()
    for n in range(1, 4)
)


def wait_for(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.25)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


@pytest.fixture
def worker(bundle_store):
    """A real `celery worker` process on its own queue, using this test's database and bundle store."""
    queue = f"test-{uuid.uuid4().hex[:8]}"
    db = connection.settings_dict
    env = dict(os.environ)
    env.update(
        DJANGO_SETTINGS_MODULE="portal.settings",
        DJANGO_SECRET_KEY="worker-test",
        DATABASE_URL=f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        REDIS_URL=settings.REDIS_URL,
        GRIDLEDGER_BUNDLE_STORE=str(bundle_store),
        GRIDLEDGER_CELERY_QUEUE=queue,
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "portal", "worker", "-Q", queue, "--pool", "solo",
         "--without-heartbeat", "--without-mingle", "--without-gossip", "-l", "warning"],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip
    eager, default_queue = celery_app.conf.task_always_eager, celery_app.conf.task_default_queue
    celery_app.conf.task_always_eager = False
    celery_app.conf.task_default_queue = queue
    try:
        yield process
    finally:
        celery_app.conf.task_always_eager, celery_app.conf.task_default_queue = eager, default_queue
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_upload_is_ingested_and_summarised_by_a_real_worker(client, worker):
    user = User.objects.create_user("loader", password="pw", is_staff=True, is_superuser=True)
    client.force_login(user)
    upload = io.BytesIO(HISTORY)
    upload.name = "history.ligo"
    response = client.post(reverse("api-bundles"), {"file": upload})
    assert response.status_code == 202
    url = response.json()["url"]

    def finished():
        body = client.get(url).json()
        return body if body["status"] in ("done", "failed") else None

    body = wait_for(finished, 90, "the worker to finish the bundle")
    assert (body["status"], body["records_read"], body["records_inserted"], body["rejected"]) == ("done", 3, 3, 0)
    assert UsageRecord.objects.filter(vo__name="ligo").count() == 3
    # The rebuild runs as its own task on the worker after the ingest commits.
    wait_for(lambda: DailyUsage.objects.exists(), 60, "the summary rebuild")
    (row,) = DailyUsage.objects.all()
    assert (row.designation, row.jobs, row.wall_hours) == ("batch", 3, 3 * 1.5 * 4)
    assert Bundle.objects.get().started_at is not None
