"""Benchmark of the gatekeeper's quota check, `GET /api/v1/quotas/check/` (issue 6): target p95 < 20 ms.

1. Seeds its own database (default gridledger_bench_quotas; created and migrated here): 50 VOs, 5,000 people,
   about 1,000,000 daily summary rows over the last 120 days (COPY), and 5,050 approved monthly quotas (one
   per VO, one per person counted in their VO). Times `check_quotas` (what runs after every rebuild and from
   beat): first over quotas never checked, then after a rebuild of today (every monthly window), which sums
   usage in bulk and evaluates only the quotas whose usage changed. A seed is reused (--reseed to seed again).
2. Runs gunicorn (2 sync workers) on 127.0.0.1 only, as production would.
3. From a second process, calls the check over keep-alive connections with a gatekeeper's token (the
   `view_quota` permission) and with a VO manager's token (their quotas only, scope resolved per request):
   random subjects, a mix of VO quotas, person quotas and subjects without a quota (or another VO's). Prints
   p50/p95/p99/max per kind, one client at a time and then 4 concurrent clients, and the machine's load.

    .venv/bin/python bench/quotas.py [--requests 2000] [--reseed] [--db gridledger_bench_quotas] [--port 8766]
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import statistics
import subprocess
import sys
import threading
import time
from datetime import date, timedelta
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.database import database_url, setup_django  # noqa: E402 - after the path is set
from bench.server import start_gunicorn  # noqa: E402

VOS, PEOPLE, SITES, DAYS, ROWS_PER_DAY = 50, 5000, 100, 120, 8400
SECRET = "bench-quotas-secret"  # noqa: S105 - a throwaway key for the local benchmark server
TARGET_MS = 20.0


def person_name(p: int) -> str:
    return f"/DC=org/DC=bench/CN=Person {p:04d}"


def seeded() -> bool:
    from accounting.models import Quota

    return Quota.objects.filter(status="approved").count() == VOS + PEOPLE and Quota.objects.filter(
        window_start=date.today().replace(day=1)
    ).exists()


def copy_lines(cursor, table: str, columns: list[str], lines) -> int:
    count = 0
    with cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
        for line in lines:
            copy.write(line)
            count += 1
    return count


def seed() -> int:
    """Mapping tables, daily summary rows of the last DAYS days, and the quotas (by COPY and bulk inserts)."""
    from django.db import connection, transaction

    from accounting.models import Quota

    rng = random.Random(6)
    first = date.today() - timedelta(days=DAYS - 1)
    tables = ["accounting_quotaalert", "accounting_notice", "accounting_quota", "accounting_dailyusage", "accounting_summaryrun",
              "accounting_site", "accounting_vo", "accounting_person"]  # fmt: skip
    with transaction.atomic(), connection.cursor() as cursor:
        raw = cursor.cursor
        raw.execute(f"TRUNCATE {', '.join(tables)} RESTART IDENTITY CASCADE")
        copy_lines(raw, "accounting_site", ["id", "name", "facility"], (f"{s}\tsite{s:03d}\t\n" for s in range(1, SITES + 1)))
        copy_lines(raw, "accounting_vo", ["id", "name"], (f"{v}\tvo{v:02d}\n" for v in range(1, VOS + 1)))
        copy_lines(raw, "accounting_person", ["id", "name"], (f"{p}\t{person_name(p)}\n" for p in range(1, PEOPLE + 1)))

        def rows():
            for n in range(DAYS):
                day = (first + timedelta(days=n)).isoformat()
                for person in rng.sample(range(1, PEOPLE + 1), ROWS_PER_DAY // 2) * 2:
                    vo = (person - 1) % VOS + 1
                    designation = rng.choice(("payload", "payload", "batch", "pilot_residual", "payload_unmatched"))
                    wall = rng.uniform(0.5, 40.0)
                    yield f"{day}\t{rng.randint(1, SITES)}\t{vo}\t{person}\tpayload\t{designation}\t1\t{wall:.4f}\t{wall * 0.8:.4f}\t{wall * 11:.4f}\t0\n"

        count = copy_lines(raw, "accounting_dailyusage", ["day", "site_id", "vo_id", "person_id", "kind", "designation", "jobs",
                                                           "wall_hours", "cpu_hours", "normalized_hours", "gpu_hours"], rows())  # fmt: skip
        common = {"metric": "core_hours", "period": "month", "period_start": date(2024, 1, 1), "status": "approved", "thresholds": [80, 100]}
        quotas = [Quota(subject_type="vo", subject=f"vo{v:02d}", vo_id=v, limit=rng.uniform(2e4, 2e5), **common) for v in range(1, VOS + 1)]
        quotas += [
            Quota(subject_type="user", subject=person_name(p), person_id=p, vo_id=(p - 1) % VOS + 1, limit=rng.uniform(50, 800), **common)
            for p in range(1, PEOPLE + 1)
        ]
        Quota.objects.bulk_create(quotas, batch_size=5000)
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE accounting_dailyusage")
        cursor.execute("VACUUM ANALYZE accounting_quota")
    return count


def after_a_rebuild_of_today() -> str:
    """What the hook does after an ingest of today's records: today's summary rows change (here 2 % of them,
    in place) under a new SummaryRun, then `check_quotas` re-sums every quota whose window holds today."""
    from django.db import connection
    from django.utils import timezone

    from accounting.models import SummaryRun
    from accounting.services import quota_alerts

    today = date.today()
    with connection.cursor() as cursor:
        cursor.execute("UPDATE accounting_dailyusage SET wall_hours = wall_hours + 1 WHERE day = %s AND id %% 50 = 0", [today])
    SummaryRun.objects.create(start=today, end=today, status="done", finished_at=timezone.now())
    began = time.monotonic()
    report = quota_alerts.check_all()
    return (f"{report.checked:,} quotas re-summed, {report.raised:,} crossings raised, {report.cleared:,} cleared, "
            f"in {time.monotonic() - began:.1f} s")  # fmt: skip


def tokens() -> tuple[str, str]:
    """A gatekeeper's token (`view_quota`: every quota) and the token of the manager of vo01."""
    from django.contrib.auth.models import Permission
    from rest_framework.authtoken.models import Token

    from portal.roles import grant_role

    gatekeeper, _ = grant_role("gatekeeper", "council")
    gatekeeper.user_permissions.add(Permission.objects.get(codename="view_quota"))
    manager, _ = grant_role("vo01-manager", "vo_manager", ["vo01"])
    return Token.objects.get_or_create(user=gatekeeper)[0].key, Token.objects.get_or_create(user=manager)[0].key


def start_server(db: str, port: int) -> subprocess.Popen:
    return start_gunicorn(database_url(db), port, SECRET, timeout=120)


def requests_for(kind: str, rng: random.Random) -> tuple[str, int]:
    """(path, expected number of quotas in the answer: 1, or 0 for none) of one check of `kind`."""
    if kind == "vo quota":
        params, status = {"subject_type": "vo", "subject": f"vo{rng.randint(1, VOS):02d}"}, 1
    elif kind == "person quota":
        params, status = {"subject_type": "user", "subject": person_name(rng.randint(1, PEOPLE))}, 1
    elif kind == "vo01 manager, own person":
        params, status = {"subject_type": "user", "subject": person_name(1 + VOS * rng.randrange(PEOPLE // VOS))}, 1
    elif kind == "vo01 manager, other VO's person (none visible)":
        params, status = {"subject_type": "user", "subject": person_name(2 + VOS * rng.randrange(PEOPLE // VOS))}, 0
    else:
        params, status = {"subject_type": "user", "subject": f"/CN=nobody {rng.randint(1, 10**6)}"}, 0
    return "/api/v1/quotas/check/?" + urlencode(params), status


KINDS = {
    "vo quota": "gatekeeper", "person quota": "gatekeeper", "unknown subject (no quota)": "gatekeeper",
    "vo01 manager, own person": "manager", "vo01 manager, other VO's person (none visible)": "manager",
}  # fmt: skip


def timed_calls(port: int, token: str, kinds: list[str], count: int, seed: int) -> dict[str, list[float]]:
    rng = random.Random(seed)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"Authorization": f"Token {token}"}
    timings: dict[str, list[float]] = {kind: [] for kind in kinds}
    for n in range(count):
        kind = kinds[n % len(kinds)]
        path, expected = requests_for(kind, rng)
        began = time.perf_counter()
        conn.request("GET", path, headers=headers)
        response = conn.getresponse()
        body = response.read()
        elapsed = (time.perf_counter() - began) * 1000
        if response.status != 200 or len(json.loads(body)["quotas"]) != expected:
            raise SystemExit(f"{kind}: HTTP {response.status}, expected {expected} quota(s): {body[:300]!r}")
        timings[kind].append(elapsed)
    return timings


def client(port: int, gatekeeper: str, manager: str, requests: int) -> dict:
    """The second process: warm-up, then `requests` checks per kind, one client; then 4 concurrent clients."""
    by_role = {"gatekeeper": gatekeeper, "manager": manager}
    results: dict = {"single": {}, "concurrent": None}
    for role, token in by_role.items():
        kinds = [k for k, r in KINDS.items() if r == role]
        timed_calls(port, token, kinds, 100, seed=1)  # warm-up: connections, worker imports
        results["single"].update(timed_calls(port, token, kinds, requests * len(kinds), seed=2))
    merged: list[float] = []
    lock = threading.Lock()

    def worker(n: int) -> None:
        kinds = [k for k, r in KINDS.items() if r == "gatekeeper"]
        timings = timed_calls(port, gatekeeper, kinds, requests, seed=10 + n)
        with lock:
            for values in timings.values():
                merged.extend(values)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    began = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    results["concurrent"] = {"timings": merged, "seconds": time.perf_counter() - began}
    return results


def summary(values: list[float]) -> dict:
    ordered = sorted(values)
    centiles = statistics.quantiles(ordered, n=100)
    return {"n": len(ordered), "p50": centiles[49], "p95": centiles[94], "p99": centiles[98], "max": ordered[-1]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", default="gridledger_bench_quotas")
    parser.add_argument("--requests", type=int, default=2000, help="timed checks per kind")
    parser.add_argument("--port", type=int, default=8766)
    parser.add_argument("--reseed", action="store_true")
    parser.add_argument("--client", nargs=3, metavar=("PORT", "GATEKEEPER", "MANAGER"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.client:
        port, gatekeeper, manager = args.client
        print(json.dumps(client(int(port), gatekeeper, manager, args.requests)))
        return

    setup_django(args.db, SECRET, env={"DJANGO_EMAIL_BACKEND": "django.core.mail.backends.locmem.EmailBackend"})
    from django.db import connection

    from accounting.services import quota_alerts

    if args.reseed or not seeded():
        began = time.monotonic()
        rows = seed()
        print(f"seeded {rows:,} daily summary rows and {VOS + PEOPLE:,} quotas in {time.monotonic() - began:.0f} s")
        began = time.monotonic()
        report = quota_alerts.check_all()
        print(f"check_quotas (after a rebuild / beat): {report.checked:,} quotas refreshed, {report.raised:,} crossings, "
              f"in {time.monotonic() - began:.1f} s")  # fmt: skip
    else:
        print(f"reusing the seed in {args.db} (--reseed to seed again)")
    rebuilt = after_a_rebuild_of_today()
    print(f"check_quotas after a rebuild of today (every monthly quota's window): {rebuilt}")
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM accounting_dailyusage")
        print(f"daily summary rows: {cursor.fetchone()[0]:,}")
    gatekeeper, manager = tokens()
    connection.close()

    server = start_server(args.db, args.port)
    load_before = " ".join(open("/proc/loadavg").read().split()[:3])
    try:
        run = subprocess.run(
            [sys.executable, __file__, "--requests", str(args.requests), "--client", str(args.port), gatekeeper, manager],
            capture_output=True, text=True, timeout=3600,
        )  # fmt: skip
        if run.returncode != 0:
            raise SystemExit(f"client failed:\n{run.stderr}{run.stdout}")
        results = json.loads(run.stdout)
    finally:
        server.terminate()
        server.wait(timeout=30)

    print(f"\n{'GET /api/v1/quotas/check/ (gunicorn, 2 workers; a second process)':<58} {'n':>6} {'p50 ms':>7} {'p95 ms':>7} {'p99 ms':>7} {'max ms':>7}")
    worst = 0.0
    for kind in KINDS:
        s = summary(results["single"][kind])
        worst = max(worst, s["p95"])
        print(f"{kind:<58} {s['n']:>6} {s['p50']:>7.2f} {s['p95']:>7.2f} {s['p99']:>7.2f} {s['max']:>7.2f}")
    everything = [v for values in results["single"].values() for v in values]
    s = summary(everything)
    print(f"{'all kinds, one client':<58} {s['n']:>6} {s['p50']:>7.2f} {s['p95']:>7.2f} {s['p99']:>7.2f} {s['max']:>7.2f}")
    c = results["concurrent"]
    s = summary(c["timings"])
    rate = s["n"] / c["seconds"]
    print(f"{'4 concurrent clients (gatekeeper mix)':<58} {s['n']:>6} {s['p50']:>7.2f} {s['p95']:>7.2f} {s['p99']:>7.2f} {s['max']:>7.2f}  ({rate:,.0f} checks/s)")
    verdict = "ok" if max(worst, s["p95"]) < TARGET_MS else "MISSED"
    print(f"\ntarget p95 < {TARGET_MS:.0f} ms: {verdict} (worst p95 of a kind {worst:.2f} ms; concurrent {s['p95']:.2f} ms)")
    print(f"load average during the run: {load_before} before, {' '.join(open('/proc/loadavg').read().split()[:3])} after; {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
