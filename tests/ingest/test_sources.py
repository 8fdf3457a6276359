"""Pulled sources: globs below the allowed roots and HTTP(S) URLs, each new file its own Bundle, files
already ingested (by sha256) skipped, the beat PeriodicTask kept in step with the Source, admin management."""
import base64
import gzip
import http.client
import json
import os
import select
import shutil
import socket
import ssl
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse
from django.utils import timezone
from django_celery_beat.models import PeriodicTask

from accounting.models import DailyUsage, PilotJobRun, UsageRecord
from ingest.models import Bundle, Source
from ingest.services.bundles import create_bundle, create_bundle_from_path, ingest_bundle
from ingest.services.sources import TASK_NAME, merge_ranges, pull
from ingest.tasks import pull_source_task
from portal.celery import app as celery_app

pytestmark = pytest.mark.django_db

AD = """\
*** ClusterId = {n}
GlobalJobId = "ap1.example.org#{n}.0#1700000000"
Owner = "u{n}"
x509userproxysubject = "/DC=org/CN=User {n}"
x509UserProxyVOName = "osg"
RemoteWallClockTime = {wall}
RequestCpus = 1
RemoteUserCpu = 100
CompletionDate = {end}
ExitCode = 0
"""


def history(*jobs) -> str:
    return "".join(AD.format(n=n, wall=wall, end=end) for n, wall, end in jobs)


@pytest.fixture
def root(settings, tmp_path, bundle_store):
    """The one directory sources may read (GRIDLEDGER_SOURCE_ROOTS)."""
    logs = tmp_path / "logs"
    logs.mkdir()
    settings.GRIDLEDGER_SOURCE_ROOTS = [str(logs)]
    return logs


def put(path, content):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    return path


def bundles_of(source):
    return list(Bundle.objects.filter(source_label=source.name).order_by("pk"))


# --- glob sources ---


def test_glob_pull_makes_one_bundle_per_new_file_and_skips_files_already_ingested(root, tmp_path):
    put(root / "ap1" / "history.1", history((1, 3600, 1700003600)))
    put(root / "ap2" / "history.1", history((2, 7200, 1700010000), (3, 60, 1700010000)))
    # ingested before the source existed (an upload of the same bytes): skipped by sha256
    known = put(tmp_path / "upload" / "h", history((4, 60, 1700003600)))
    ingest_bundle(create_bundle_from_path(known).pk)
    put(root / "ap3" / "history.1", known.read_bytes())
    put(root / "ap4" / "notes.txt", "Dear admin, nothing to see here\n")
    put(root / "ap4" / "sub" / "deeper.txt", "not matched: one directory level only\n")
    source = Source.objects.create(name="APs", location=f"{root}/*/*.*", site_hint="CE1")

    result = pull(source.pk)

    bundles = bundles_of(source)
    assert [b.original_name for b in bundles] == [str(root / "ap1" / "history.1"), str(root / "ap2" / "history.1"), str(root / "ap4" / "notes.txt")]
    assert [(b.status, b.records_inserted) for b in bundles] == [("done", 1), ("done", 2), ("failed", 0)]
    assert {(b.source_label, b.site_hint) for b in bundles} == {("APs", "CE1")}
    assert (result.status, len(result.new_bundles), result.already) == ("ok", 3, 1)
    assert UsageRecord.objects.count() == 4
    source.refresh_from_db()
    assert source.last_pull_status == "ok" and source.last_pull_at and source.last_new_file_at
    assert "3 new file(s)" in source.last_pull_message and "1 already ingested" in source.last_pull_message

    # the next pull finds nothing new; a file that appears later is picked up alone
    again = pull(source.pk)
    assert (again.status, again.new_bundles, again.already) == ("ok", [], 4)
    put(root / "ap1" / "history.2", history((5, 600, 1700020000)))
    later = pull(source.pk)
    assert (len(later.new_bundles), later.already) == (1, 4)
    assert Bundle.objects.get(pk=later.new_bundles[0]).records_inserted == 1
    assert len(bundles_of(source)) == 4


def test_pull_task_queues_the_rebuild_of_the_touched_days(root, django_capture_on_commit_callbacks):
    put(root / "history", history((1, 7200, 1700010000)))
    source = Source.objects.create(name="one", location=str(root / "history"))
    with django_capture_on_commit_callbacks(execute=True):
        summary = pull_source_task.delay(source.pk).get()
    assert summary["status"] == "ok" and summary["ranges"] == [("2023-11-14", "2023-11-15")]
    assert sum(DailyUsage.objects.reported().values_list("wall_hours", flat=True)) == pytest.approx(2.0)


def test_what_beat_sends_runs_the_pull(root):
    put(root / "history", history((1, 3600, 1700003600)))
    source = Source.objects.create(name="beat", location=str(root / "*"))
    task = PeriodicTask.objects.get(pk=source.periodic_task_id)
    celery_app.tasks[task.task].apply(args=json.loads(task.args), kwargs=json.loads(task.kwargs))
    assert [b.status for b in bundles_of(source)] == ["done"]


def glidein_out(cluster: int) -> str:
    return (
        "Starting glidein_startup.sh at Tue Mar  5 10:00:00 UTC 2024 (1709632800)\n"
        f"condorg_cluster   = '{cluster}'\ncondorg_subcluster= '0'\n"
        "condorg_schedd    = 'schedd_glideins4@gfactory-1.example.org'\n"
        "glidein_entry     = 'OSG_US_Example_ce1'\nclient_name       = 'osg-frontend.main'\n"
        "GLIDEIN_Site Example\nGLIDEIN_ResourceName Example-CE1\n"
        "Tue Mar  5 10:00:41 UTC 2024 Setting GLIDEIN_CPUS=4\n"
        "=== Last script starting Tue Mar  5 10:01:00 UTC 2024 (1709632860) after validating for 60 ===\n"
        "=== Condor starting Tue Mar  5 10:01:02 UTC 2024 (1709632862) ===\n"
        "=== Condor ended Tue Mar  5 12:01:02 UTC 2024 (1709640062) after 7200 ===\n"
        "=== Glidein ending Tue Mar  5 12:01:10 UTC 2024 (1709640070) with code 0 after 7270 ===\n"
    )


def glidein_err(global_job_id: str) -> bytes:
    cluster, proc = global_job_id.split("#")[1].split(".")
    ad = (
        f'MyType = "Job"\nGlobalJobId = "{global_job_id}"\nClusterId = {cluster}\nProcId = {proc}\n'
        "JobCurrentStartDate = 1709633000\nRemoteWallClockTime = 3600.0\nCompletionDate = 1709636600\nRequestCpus = 2\n"
        f'*** Offset = 0 ClusterId = {cluster} ProcId = {proc} Owner = "u" CompletionDate = 1709636600\n'
    ).encode()
    body = base64.encodebytes(gzip.compress(ad))
    return b"StartdHistoryLog\n======== gzip | uuencode =============\nbegin-base64 644 -\n" + body + b"====\n"


def test_a_glidein_out_is_pulled_with_the_err_beside_it(root):
    entry = root / "user_fe" / "glidein_gf" / "entry_ce1"
    put(entry / "job.4242.0.out", glidein_out(4242))
    put(entry / "job.4242.0.err", glidein_err("ap.example.org#17.0#1709632000"))
    put(entry / "job.4243.0.out", glidein_out(4243))  # no .err (yet)
    source = Source.objects.create(name="factory", location=f"{root}/user_*/glidein_*/entry_*/job.*")

    result = pull(source.pk)

    assert (result.status, len(result.new_bundles)) == ("ok", 2)  # the .err travels with its .out
    assert [(b.format, b.status, b.records_inserted, b.rejected) for b in bundles_of(source)] == [("gwms-glidein", "done", 1, 0)] * 2
    pilot = UsageRecord.objects.get(natural_key="schedd_glideins4@gfactory-1.example.org#4242.0")
    assert list(PilotJobRun.objects.filter(pilot=pilot).values_list("global_job_id", flat=True)) == ["ap.example.org#17.0#1709632000"]
    # the same pair again is the same sha256 (deterministic tar): nothing new
    assert (pull(source.pk).new_bundles, pull(source.pk).already) == ([], 2)
    # the .err of the second glidein arrives: the pair is new, its .out row is the same job (no new record)
    put(entry / "job.4243.0.err", glidein_err("ap.example.org#18.0#1709632000"))
    third = pull(source.pk)
    assert len(third.new_bundles) == 1
    assert UsageRecord.objects.filter(kind="pilot").count() == 2
    assert PilotJobRun.objects.count() == 2


def test_every_bundle_of_a_pull_has_its_own_status_and_a_crash_in_one_does_not_stop_the_others(root, monkeypatch):
    put(root / "a.history", history((1, 3600, 1700003600)))
    put(root / "b.history", history((2, 3600, 1700003600)))
    source = Source.objects.create(name="crashy", location=str(root / "*.history"))
    from ingest.services import sources

    real = sources.ingest_bundle

    def flaky(bundle_id, progress=None):
        if Bundle.objects.get(pk=bundle_id).original_name.endswith("a.history"):
            raise RuntimeError("database hiccup")
        return real(bundle_id, progress)

    monkeypatch.setattr(sources, "ingest_bundle", flaky)
    result = pull(source.pk)
    a, b = bundles_of(source)
    assert (a.status, b.status) == ("failed", "done")
    assert "database hiccup" in a.message and f"reingest {a.pk}" in a.message
    assert result.status == "partial"
    source.refresh_from_db()
    assert source.last_pull_status == "partial" and "database hiccup" in source.last_pull_message


def test_a_pull_finishes_the_bundles_an_interrupted_pull_left_behind(root):
    source = Source.objects.create(name="resumable", location=str(root / "*.history"))
    path = put(root / "x.history", history((1, 3600, 1700003600)))
    with path.open("rb") as handle:  # a worker died after storing the file, before its ingest finished
        left = create_bundle(handle, str(path), source=source.name)
    Bundle.objects.filter(pk=left.pk).update(status=Bundle.Status.RUNNING)
    result = pull(source.pk)
    assert result.resumed_bundles == [left.pk] and result.already == 1 and result.new_bundles == []
    left.refresh_from_db()
    assert (left.status, left.records_inserted) == ("done", 1)


def test_a_crashed_pull_is_recorded_and_still_reports_the_days_to_rebuild(root, monkeypatch):
    from ingest.services import sources

    source = Source.objects.create(name="fragile", location=str(root / "*.history"))
    path = put(root / "x.history", history((1, 3600, 1700003600)))
    with path.open("rb") as handle:
        create_bundle(handle, str(path), source=source.name)  # left queued by an interrupted pull

    def broken(*args):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(sources, "_pull_glob", broken)
    result = pull(source.pk)
    assert result.status == "failed" and "disk on fire" in result.message
    assert len(result.ranges) == 1  # the resumed bundle's days are still rebuilt by the task
    source.refresh_from_db()
    assert (source.last_pull_status, source.pull_token) == ("failed", "")


def test_only_one_pull_of_a_source_runs_at_a_time_and_an_abandoned_claim_expires(root):
    put(root / "x.history", history((1, 3600, 1700003600)))
    source = Source.objects.create(name="busy", location=str(root / "*.history"))
    Source.objects.filter(pk=source.pk).update(last_pull_status="running", last_pull_started_at=timezone.now(), pull_token="other-task")
    assert pull(source.pk).status == "skipped"
    assert bundles_of(source) == []
    assert pull(source.pk, token="other-task").status == "ok"  # the same task, redelivered, takes its claim back
    Source.objects.filter(pk=source.pk).update(
        last_pull_status="running", last_pull_started_at=timezone.now() - timedelta(hours=13), pull_token="dead"
    )
    assert pull(source.pk).status == "ok"


# --- where a glob may read ---


@pytest.mark.parametrize(
    "location, reason",
    [
        ("/etc/*.conf", "outside the allowed source roots"),
        ("{root}/../*", "'..' is not allowed"),
        ("relative/*.log", "must be an absolute path"),
        ("file:///etc/passwd", "only http:// and https://"),
        ("ftp://example.org/x", "only http:// and https://"),
    ],
)
def test_locations_outside_the_allowed_roots_are_refused(root, location, reason):
    location = location.format(root=root)
    source = Source(name="bad", location=location)
    with pytest.raises(ValidationError) as error:
        source.full_clean()
    assert reason in str(error.value)
    source.save()  # saved without the form's checks, a pull still refuses it
    result = pull(source.pk)
    assert result.status == "failed" and reason in result.message
    assert Bundle.objects.count() == 0
    source.refresh_from_db()
    assert source.last_pull_status == "failed" and reason in source.last_pull_message


def test_without_roots_no_glob_may_read_anything(settings, tmp_path, bundle_store):
    settings.GRIDLEDGER_SOURCE_ROOTS = []
    put(tmp_path / "h.history", history((1, 3600, 1700003600)))
    source = Source.objects.create(name="none", location=str(tmp_path / "*.history"))
    result = pull(source.pk)
    assert result.status == "failed" and "GRIDLEDGER_SOURCE_ROOTS is empty" in result.message
    assert Bundle.objects.count() == 0


def test_symlinks_leading_outside_the_roots_are_not_followed(root, tmp_path):
    outside = put(tmp_path / "secret" / "h.history", history((9, 3600, 1700003600)))
    put(root / "ok.history", history((1, 3600, 1700003600)))
    os.symlink(outside, root / "link.history")
    os.symlink(outside.parent, root / "linkdir")
    inner = put(root / "real" / "inner.history", history((2, 3600, 1700003600)))
    os.symlink(inner, root / "inner-link.history")  # a link that stays inside is fine
    os.symlink(root, root / "real" / "loop")  # two loops: glob.glob's ** would walk them for ever
    os.symlink(root / "real", root / "real" / "loop2")
    put(root / ".hidden.history", history((3, 3600, 1700003600)))  # a dot file, as in the shell: not matched

    deep = pull(Source.objects.create(name="deep", location=f"{root}/**/*.history").pk)
    assert deep.status == "partial"
    assert sorted(b.original_name for b in Bundle.objects.filter(pk__in=deep.new_bundles)) == [
        str(root / "inner-link.history"), str(root / "ok.history"),
    ]  # fmt: skip
    assert deep.already == 1  # real/inner.history: the same bytes as inner-link.history
    assert f"{root}/link.history: resolves outside the allowed source roots" in deep.message

    shallow = pull(Source.objects.create(name="shallow", location=f"{root}/*/*.history").pk)
    assert f"{root}/linkdir/h.history: resolves outside the allowed source roots" in shallow.message
    assert shallow.new_bundles == [] and shallow.already == 1
    keys = set(UsageRecord.objects.values_list("natural_key", flat=True))
    assert keys == {"ap1.example.org#1.0#1700000000", "ap1.example.org#2.0#1700000000"}


# --- URL sources (a local server on 127.0.0.1 only) ---


def route_handler(routes: dict[str, tuple[int, dict, bytes]], hits: list[str]) -> type[BaseHTTPRequestHandler]:
    """A handler serving `routes[path] = (status, headers, body)` and noting each path asked for in `hits`."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            hits.append(self.path)
            if self.path not in routes:
                self.send_error(404, "no such log")
                return
            status, headers, body = routes[self.path]
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            if "Content-Length" not in headers and not headers.get("X-No-Length"):
                self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    return Handler


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler], tls: ssl.SSLContext | None = None) -> Iterator[int]:
    """Serve on 127.0.0.1 in a thread (over TLS with `tls`); yields the port."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def no_proxy_env(monkeypatch):
    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy", "SSL_CERT_FILE", "SSL_CERT_DIR"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)


@pytest.fixture
def http_server(no_proxy_env):
    """An HTTP server on 127.0.0.1 in a thread; `routes[path] = (status, headers, body)`."""
    routes: dict[str, tuple[int, dict, bytes]] = {}
    hits: list[str] = []
    with serving(route_handler(routes, hits)) as port:
        yield f"http://127.0.0.1:{port}", routes, hits


@pytest.fixture
def https_server(no_proxy_env, tmp_path):
    """The same over HTTPS with a self-signed certificate for 127.0.0.1; also yields that certificate's file."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is needed to make a test certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)  # fmt: skip
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert, key)
    routes: dict[str, tuple[int, dict, bytes]] = {}
    hits: list[str] = []
    with serving(route_handler(routes, hits), tls) as port:
        yield f"https://127.0.0.1:{port}", routes, str(cert)


@pytest.fixture
def proxy(no_proxy_env):
    """A forward proxy on 127.0.0.1: plain GETs by absolute URL, and CONNECT tunnels for https; notes each
    request as (method, target)."""
    seen: list[tuple[str, str]] = []

    class Proxy(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            seen.append(("GET", self.path))
            target = urlsplit(self.path)
            upstream = http.client.HTTPConnection(target.hostname, target.port, timeout=10)
            upstream.request("GET", target.path, headers={"User-Agent": self.headers.get("User-Agent", "")})
            response = upstream.getresponse()
            body = response.read()
            self.send_response(response.status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            upstream.close()

        def do_CONNECT(self):  # noqa: N802
            seen.append(("CONNECT", self.path))
            host, _, port = self.path.rpartition(":")
            with socket.create_connection((host, int(port)), timeout=10) as upstream:
                self.send_response(200, "Connection established")
                self.end_headers()
                ends = [self.connection, upstream]
                while True:
                    ready, _, _ = select.select(ends, [], [], 10)
                    if not ready:
                        return
                    for end in ready:
                        data = end.recv(65536)
                        if not data:
                            return
                        (upstream if end is self.connection else self.connection).sendall(data)

        def log_message(self, *args):
            pass

    with serving(Proxy) as port:
        yield f"http://127.0.0.1:{port}", seen


def test_url_source_downloads_ingests_and_skips_what_it_already_has(bundle_store, http_server):
    base, routes, hits = http_server
    routes["/ce/history"] = (200, {}, history((1, 3600, 1700003600), (2, 60, 1700003600)).encode())
    source = Source.objects.create(name="CE dump", location=f"{base}/ce/history", site_hint="CE1")
    source.full_clean()

    first = pull(source.pk)
    (bundle,) = bundles_of(source)
    assert (first.status, bundle.status, bundle.records_inserted, bundle.site_hint) == ("ok", "done", 2, "CE1")
    assert bundle.original_name == f"{base}/ce/history"

    second = pull(source.pk)
    assert (second.status, second.new_bundles, second.already) == ("ok", [], 1)
    routes["/ce/history"] = (200, {}, history((1, 3600, 1700003600), (2, 60, 1700003600), (3, 60, 1700003600)).encode())
    third = pull(source.pk)
    assert len(third.new_bundles) == 1
    assert Bundle.objects.get(pk=third.new_bundles[0]).records_inserted == 1
    assert hits == ["/ce/history"] * 3


def test_url_errors_size_cap_and_redirects_away_from_http_fail_the_pull(settings, bundle_store, http_server):
    base, routes, _ = http_server
    settings.BUNDLE_MAX_UPLOAD_BYTES = 100
    big = history((1, 3600, 1700003600)).encode()
    assert len(big) > 100
    routes["/declared"] = (200, {}, big)
    routes["/undeclared"] = (200, {"X-No-Length": "1"}, big)
    routes["/to-file"] = (302, {"Location": "file:///etc/passwd"}, b"")  # urllib refuses this one itself
    routes["/to-ftp"] = (302, {"Location": "ftp://127.0.0.1/x"}, b"")  # urllib alone would follow this one
    cases = {
        "/missing": "HTTP 404",
        "/declared": "over the limit of 100 bytes",
        "/undeclared": "larger than the limit of 100 bytes",
        "/to-file": "Redirection to url 'file:///etc/passwd' is not allowed",
        "/to-ftp": "redirect to 'ftp://127.0.0.1/x' refused: only http and https",
    }
    for path, reason in cases.items():
        source = Source.objects.create(name=path, location=base + path)
        result = pull(source.pk)
        assert result.status == "failed" and reason in result.message, (path, result.message)
    assert Bundle.objects.count() == 0
    assert not [p for p in bundle_store.rglob("*") if p.is_file()]  # nothing kept


def test_https_sources_check_the_server_certificate(bundle_store, https_server, monkeypatch):
    base, routes, certificate = https_server
    routes["/ce/history"] = (200, {}, history((1, 3600, 1700003600)).encode())
    untrusted = pull(Source.objects.create(name="untrusted", location=f"{base}/ce/history").pk)
    assert untrusted.status == "failed" and "CERTIFICATE_VERIFY_FAILED" in untrusted.message
    assert Bundle.objects.count() == 0
    monkeypatch.setenv("SSL_CERT_FILE", certificate)  # the site's CA, as OpenSSL reads it from the environment
    trusted = pull(Source.objects.create(name="trusted", location=f"{base}/ce/history").pk)
    (bundle,) = Bundle.objects.all()
    assert (trusted.status, bundle.status, bundle.records_inserted) == ("ok", "done", 1)


def test_url_sources_go_through_the_proxy_the_environment_names(bundle_store, http_server, https_server, proxy, monkeypatch):
    plain, plain_routes, _ = http_server
    secure, secure_routes, certificate = https_server
    proxy_url, seen = proxy
    plain_routes["/a"] = (200, {}, history((1, 3600, 1700003600)).encode())
    secure_routes["/b"] = (200, {}, history((2, 3600, 1700003600)).encode())
    for name in ("http_proxy", "https_proxy"):
        monkeypatch.setenv(name, proxy_url)
    monkeypatch.setenv("SSL_CERT_FILE", certificate)
    for location in (f"{plain}/a", f"{secure}/b"):
        assert pull(Source.objects.create(name=location, location=location).pk).status == "ok"
    assert seen == [("GET", f"{plain}/a"), ("CONNECT", secure.removeprefix("https://"))]
    assert UsageRecord.objects.count() == 2


def test_merge_ranges_joins_overlapping_and_adjacent_days():
    from datetime import date

    d = date.fromisoformat
    assert merge_ranges([(d("2024-03-04"), d("2024-03-06")), (d("2024-03-01"), d("2024-03-02")), (d("2024-03-03"), d("2024-03-03")),
                         (d("2024-03-08"), d("2024-03-11"))]) == [(d("2024-03-01"), d("2024-03-06")), (d("2024-03-08"), d("2024-03-11"))]  # fmt: skip


# --- the beat schedule follows the source ---


def test_the_periodic_task_is_created_updated_and_removed_with_the_source(root):
    source = Source.objects.create(name="factory", location=f"{root}/*.out", every_minutes=15)
    task = PeriodicTask.objects.get(pk=source.periodic_task_id)
    assert (task.task, json.loads(task.args), task.enabled) == (TASK_NAME, [source.pk], True)
    assert TASK_NAME in celery_app.tasks
    assert (task.interval.every, task.interval.period, task.crontab) == (15, "minutes", None)

    source.cron = "*/30 2 * * 1"
    source.save()
    task.refresh_from_db()
    assert task.interval is None
    crontab = task.crontab
    assert (crontab.minute, crontab.hour, crontab.day_of_month, crontab.month_of_year, crontab.day_of_week) == ("*/30", "2", "*", "*", "1")
    assert str(crontab.timezone) == "UTC"

    source.enabled = False
    source.save()
    task.refresh_from_db()
    assert task.enabled is False
    assert PeriodicTask.objects.filter(task=TASK_NAME).count() == 1  # updated in place, never a second one

    source.delete()
    assert not PeriodicTask.objects.filter(pk=task.pk).exists()


def test_deleting_sources_in_bulk_removes_their_tasks_and_bad_crontabs_are_refused(root):
    for n in range(3):
        Source.objects.create(name=f"s{n}", location=f"{root}/{n}/*")
    assert PeriodicTask.objects.filter(task=TASK_NAME).count() == 3
    Source.objects.all().delete()
    assert PeriodicTask.objects.filter(task=TASK_NAME).count() == 0
    with pytest.raises(ValidationError) as error:
        Source(name="x", location=f"{root}/*", cron="61 * * * *").full_clean()
    assert "cron" in error.value.message_dict
    with pytest.raises(ValidationError):
        Source(name="x", location=f"{root}/*", cron="* * *").full_clean()


# --- Django admin ---


def test_admin_lists_sources_refuses_bad_globs_and_pulls_now(root, admin_client, django_capture_on_commit_callbacks):
    put(root / "h.history", history((1, 3600, 1700003600)))
    changelist = reverse("admin:ingest_source_changelist")
    response = admin_client.post(
        reverse("admin:ingest_source_add"),
        {"name": "outside", "location": "/etc/*.conf", "format": "", "every_minutes": 60, "cron": "", "enabled": "on", "silent_after_days": 3},
    )
    assert response.status_code == 200 and "outside the allowed source roots" in response.content.decode()
    response = admin_client.post(
        reverse("admin:ingest_source_add"),
        {"name": "AP history", "location": f"{root}/*.history", "format": "htcondor-history", "every_minutes": 30, "cron": "",
         "enabled": "on", "silent_after_days": 3},
    )  # fmt: skip
    assert response.status_code == 302
    source = Source.objects.get(name="AP history")
    assert PeriodicTask.objects.get(pk=source.periodic_task_id).interval.every == 30

    assert admin_client.get(changelist, {"q": "AP", "enabled__exact": "1", "last_pull_status__exact": "never"}).status_code == 200
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(changelist, {"action": "pull_now", "_selected_action": [source.pk]})
    assert response.status_code == 302
    source.refresh_from_db()
    assert source.last_pull_status == "ok"
    assert [(b.status, b.format) for b in bundles_of(source)] == [("done", "htcondor-history")]
    page = admin_client.get(reverse("admin:ingest_source_change", args=[source.pk])).content.decode()
    assert "1 bundle(s)" in page and "pull source" in page
    bundles = admin_client.get(reverse("admin:ingest_bundle_changelist"), {"source_label__exact": "AP history"})
    assert bundles.status_code == 200 and "h.history" in bundles.content.decode()
