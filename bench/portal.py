"""Benchmark of the reports (issue 5): explorer pages and API queries on a big grid, served by gunicorn.

1. Seeds its own database (default gridledger_bench_portal; created and migrated here) with 3 years of a
   100-site, 50-VO, 5,000-person grid: at least 5,000,000 daily summary rows, loaded with COPY, then the
   month rollup (`manage.py refresh_rollups`). An existing seed of the right size is reused (--reseed).
2. Runs gunicorn (2 sync workers) on 127.0.0.1 only.
3. From a second process, fires a fixed mix of explorer pages and API queries, a bounded number of times
   each, and prints p50/p95 latency per query type (targets: p95 < 300 ms).
4. Streams one CSV export of at least 1,000,000 rows and prints rows/s and the serving worker's peak
   memory (VmHWM; targets: >= 100,000 rows/s, < 200 MB).

    .venv/bin/python bench/portal.py [--rows 5000000] [--requests 30] [--reseed] [--db gridledger_bench_portal]
"""
from __future__ import annotations

import argparse
import http.client
import io
import json
import random
import statistics
import subprocess
import sys
import time
from datetime import date, timedelta
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.database import database_url, setup_django  # noqa: E402 - after the path is set
from bench.server import start_gunicorn  # noqa: E402

FIRST_DAY = date(2023, 1, 1)
DAYS = 1096  # 2023-01-01 .. 2025-12-31
SITES, VOS, PEOPLE, DOMAINS, PROJECTS_PER_VO = 100, 50, 5000, 20, 10
SITES_PER_VO, RESOURCES_PER_PERSON = 25, 2
SECRET = "bench-portal-secret"  # noqa: S105 - a throwaway key for the local benchmark server

Q_YEAR = {"start": "2025-01-01", "end": "2026-01-01", "period": "month", "group_by": "site,vo"}
Q_QUARTER = {"start": "2025-07-01", "end": "2025-10-01", "period": "day", "group_by": "user", "vo": "vo07"}
Q_DOMAINS = {"start": "2023-01-01", "end": "2026-01-01", "period": "total", "group_by": "science_domain"}
VIEW = {"metric": "wall_hours", "chart": "bar", "top": "10"}
MIX = {
    "api month x site x VO, 1 year": "/api/v1/usage/?" + urlencode(Q_YEAR),
    "explorer month x site x VO, 1 year": "/explore/?" + urlencode(Q_YEAR | VIEW),
    "api day x person, 1 VO, 1 quarter": "/api/v1/usage/?" + urlencode(Q_QUARTER),
    "explorer day x person, 1 VO, 1 quarter": "/explore/?" + urlencode(Q_QUARTER | VIEW),
    "api totals by science domain, 3 years": "/api/v1/usage/?" + urlencode(Q_DOMAINS),
    "dashboard": "/",
}
CSV_QUERY = {"start": "2025-01-01", "end": "2025-10-01", "period": "day", "group_by": "site,vo,user", "format": "csv"}


def seeded_rows() -> int:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT reltuples::bigint FROM pg_class WHERE relname = 'accounting_dailyusage'")
        estimate = cursor.fetchone()[0]
        cursor.execute("SELECT count(*) FROM accounting_site WHERE name = 'site000'")
        marked = cursor.fetchone()[0]
    return estimate if marked else 0


def copy_lines(cursor, table: str, columns: list[str], lines) -> int:
    """COPY tab-separated lines into a table, 50,000 at a time."""
    count = 0
    with cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
        batch = []
        for line in lines:
            batch.append(line)
            if len(batch) >= 50000:
                copy.write("".join(batch))
                count += len(batch)
                batch = []
        copy.write("".join(batch))
        count += len(batch)
    return count


def seed(target_rows: int, deadline: float) -> int:
    """The grid's mapping tables and `target_rows` or more daily summary rows, by COPY."""
    from django.db import connection, transaction

    rng = random.Random(5)
    tables = [
        "accounting_dailyusage", "portal_monthlyusage", "portal_rollupstate", "accounting_summaryrun",
        "accounting_site", "accounting_resource", "accounting_vo", "accounting_person", "accounting_project",
        "accounting_sciencedomain",
    ]  # fmt: skip
    vo_sites = {v: rng.sample(range(1, SITES + 1), SITES_PER_VO) for v in range(1, VOS + 1)}
    vo_domain = {v: rng.randint(1, DOMAINS) for v in range(1, VOS + 1)}
    projects = {}  # id -> (vo, domain)
    for v in range(1, VOS + 1):
        for k in range(PROJECTS_PER_VO):
            domain = vo_domain[v] if rng.random() < 0.7 else rng.randint(1, DOMAINS)
            projects[(v - 1) * PROJECTS_PER_VO + k + 1] = (v, domain)
    people = []  # (person id, vo, project, [resource ids])
    for p in range(1, PEOPLE + 1):
        v = (p - 1) % VOS + 1
        project = (v - 1) * PROJECTS_PER_VO + rng.randrange(PROJECTS_PER_VO) + 1
        sites = rng.sample(vo_sites[v], RESOURCES_PER_PERSON)
        people.append((p, v, project, [2 * s - rng.randint(0, 1) for s in sites]))
    per_day = -(-target_rows // DAYS)
    with transaction.atomic(), connection.cursor() as cursor:
        raw = cursor.cursor
        raw.execute(f"TRUNCATE {', '.join(tables)} RESTART IDENTITY CASCADE")
        copy_lines(raw, "accounting_sciencedomain", ["id", "name"], (f"{d}\tdomain{d:02d}\n" for d in range(1, DOMAINS + 1)))
        copy_lines(raw, "accounting_site", ["id", "name", "facility"], (f"{s}\tsite{s - 1:03d}\tfacility{s % 7}\n" for s in range(1, SITES + 1)))
        copy_lines(raw, "accounting_resource", ["id", "name", "site_id"], (f"{r}\tce{r:03d}.example.org\t{(r + 1) // 2}\n" for r in range(1, 2 * SITES + 1)))
        copy_lines(raw, "accounting_vo", ["id", "name", "field_of_science_id"], (f"{v}\tvo{v - 1:02d}\t{vo_domain[v]}\n" for v in range(1, VOS + 1)))
        copy_lines(raw, "accounting_project", ["id", "name", "field_of_science_id", "pi", "institution"], (
            f"{p}\tproject{p:03d}\t{d}\tPI {p}\tInstitute {p % 40}\n" for p, (v, d) in projects.items()
        ))  # fmt: skip
        copy_lines(raw, "accounting_person", ["id", "name"], (f"{p}\t/DC=org/DC=bench/CN=Person {p:04d}\n" for p, *_ in people))

        columns = [
            "day", "site_id", "resource_id", "vo_id", "person_id", "project_id", "science_domain_id", "kind",
            "designation", "jobs", "wall_hours", "cpu_hours", "normalized_hours", "gpu_hours",
        ]  # fmt: skip

        def rows():
            for n in range(DAYS):
                if time.monotonic() > deadline:
                    raise SystemExit("seeding took longer than --seed-timeout; nothing was committed")
                day = (FIRST_DAY + timedelta(days=n)).isoformat()
                seen = set()
                for person, vo, project, resources in rng.sample(people, min(per_day, len(people))):
                    resource = resources[0] if rng.random() < 0.6 else resources[1]
                    site = (resource + 1) // 2
                    domain = projects[project][1]
                    kind = "payload" if rng.random() < 0.85 else "batch"
                    wall = rng.uniform(0.5, 400.0)
                    cpu = wall * rng.uniform(0.5, 0.98)
                    seen.add((site, vo))
                    yield (f"{day}\t{site}\t{resource}\t{vo}\t{person}\t{project}\t{domain}\t{kind}\t{kind}\t"
                           f"{rng.randint(1, 40)}\t{wall:.4f}\t{cpu:.4f}\t{wall * 11.5:.4f}\t0\n")
                for site, vo in seen:  # the pilots' residual per (site, VO): no person
                    wall = rng.uniform(1.0, 50.0)
                    yield f"{day}\t{site}\t{2 * site}\t{vo}\t\\N\t\\N\t{vo_domain[vo]}\tpilot\tpilot_residual\t0\t{wall:.4f}\t{wall * 0.1:.4f}\t{wall * 11.5:.4f}\t0\n"

        count = copy_lines(raw, "accounting_dailyusage", columns, rows())
        last = FIRST_DAY + timedelta(days=DAYS - 1)
        raw.execute(
            "INSERT INTO accounting_summaryrun (start, \"end\", status, rows, started_at, finished_at, error) "
            "VALUES (%s, %s, 'done', %s, now(), now(), '')",
            [FIRST_DAY, last, count],
        )
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE accounting_dailyusage")
    return count


def bench_user():
    """An admin (sees person-level rows, no VO restriction) with a session cookie and an API token."""
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.sessions.backends.db import SessionStore
    from rest_framework.authtoken.models import Token

    from portal.roles import grant_role

    user, _ = grant_role("bench", "admin")
    token, _ = Token.objects.get_or_create(user=user)
    session = SessionStore()
    session[SESSION_KEY] = str(user.pk)
    session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    session.create()
    return token.key, session.session_key


def start_server(db: str, port: int) -> subprocess.Popen:
    return start_gunicorn(database_url(db), port, SECRET, timeout=300)


def worker_pids(master: int) -> list[int]:
    children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
    return [int(pid) for pid in children]


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def reset_peak_rss(pid: int) -> None:
    """Reset VmHWM to the current RSS (Linux: `5` to /proc/<pid>/clear_refs), so the next peak is one phase's."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def cpu_ticks(pid: int) -> int:
    """utime + stime of a process (clock ticks), to tell which worker served a request."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def client(port: int, token: str, session: str, requests: int, phase: str) -> dict:
    """The second process: `mix`: the fixed mix, `requests` timed runs of each after two warm-ups;
    `csv`: the CSV export."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    headers = {"Cookie": f"sessionid={session}", "Authorization": f"Token {token}"}

    def get(path: str) -> tuple[int, bytes, float]:
        began = time.perf_counter()
        conn.request("GET", path, headers=headers if path.startswith("/api/") else {"Cookie": headers["Cookie"]})
        response = conn.getresponse()
        body = response.read()
        return response.status, body, time.perf_counter() - began

    results = {}
    if phase == "csv":
        return csv_export(conn, headers)
    for name, path in MIX.items():
        for _ in range(2):
            status, body, _ = get(path)
            if status != 200:
                raise SystemExit(f"{name}: HTTP {status}: {body[:300]!r}")
        timings = [get(path)[2] * 1000 for _ in range(requests)]
        rows = json.loads(body)["count"] if path.startswith("/api/") else None
        results[name] = {"p50": statistics.median(timings), "p95": statistics.quantiles(timings, n=20)[18], "rows": rows}
    return results


def csv_export(conn: http.client.HTTPConnection, headers: dict) -> dict:
    began = time.perf_counter()
    conn.request("GET", "/api/v1/usage/?" + urlencode(CSV_QUERY), headers=headers)
    response = conn.getresponse()
    lines = 0
    tail = b""
    while chunk := response.read(1 << 20):
        lines += chunk.count(b"\n")
        tail = chunk[-200:]
    elapsed = time.perf_counter() - began
    return {"rows": lines - 1, "seconds": elapsed, "status": response.status, "tail": tail.decode(errors="replace")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", default="gridledger_bench_portal")
    parser.add_argument("--rows", type=int, default=5_000_000, help="daily summary rows to seed (at least)")
    parser.add_argument("--requests", type=int, default=30, help="timed requests per query type")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--reseed", action="store_true", help="seed again even when a seed of this size exists")
    parser.add_argument("--seed-timeout", type=float, default=1200, help="give up seeding after this many seconds")
    parser.add_argument("--client", nargs=4, metavar=("PHASE", "PORT", "TOKEN", "SESSION"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.client:
        phase, port, token, session = args.client
        print(json.dumps(client(int(port), token, session, args.requests, phase)))
        return

    setup_django(args.db, SECRET)
    from django.core.management import call_command

    existing = seeded_rows()
    if args.reseed or existing < args.rows:
        began = time.monotonic()
        count = seed(args.rows, began + args.seed_timeout)
        print(f"seeded {count:,} daily summary rows with COPY in {time.monotonic() - began:.0f} s")
        began = time.monotonic()
        out = io.StringIO()
        call_command("refresh_rollups", "--full", stdout=out)
        print(f"month rollup refreshed in {time.monotonic() - began:.0f} s ({out.getvalue().strip()})")
    else:
        print(f"reusing the seed in {args.db} (~{existing:,} daily summary rows; --reseed to seed again)")
        from portal.rollups import rollup_is_fresh

        if not rollup_is_fresh():
            began = time.monotonic()
            out = io.StringIO()
            call_command("refresh_rollups", "--full", stdout=out)
            print(f"month rollup refreshed in {time.monotonic() - began:.0f} s ({out.getvalue().strip()})")
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM accounting_dailyusage")
        daily = cursor.fetchone()[0]
        cursor.execute("SELECT count(*) FROM portal_monthlyusage")
        monthly = cursor.fetchone()[0]
    print(f"daily summary rows: {daily:,}; month rollup rows: {monthly:,}")
    token, session = bench_user()
    connection.close()

    server = start_server(args.db, args.port)
    try:
        workers = worker_pids(server.pid)

        def run_client(phase: str) -> dict:
            run = subprocess.run(
                [sys.executable, __file__, "--requests", str(args.requests), "--client", phase, str(args.port), token, session],
                capture_output=True, text=True, timeout=3600,
            )  # fmt: skip
            if run.returncode != 0:
                raise SystemExit(f"client failed:\n{run.stderr}")
            return json.loads(run.stdout)

        results = run_client("mix")
        mix_peaks = {pid: peak_rss_mb(pid) for pid in workers}
        for pid in workers:
            reset_peak_rss(pid)
        before_csv = {pid: rss_mb(pid) for pid in workers}
        ticks = {pid: cpu_ticks(pid) for pid in workers}
        csv = run_client("csv")
        served = max(workers, key=lambda pid: cpu_ticks(pid) - ticks[pid])
        csv_peaks = {pid: peak_rss_mb(pid) for pid in workers}
    finally:
        server.terminate()
        server.wait(timeout=30)

    print(f"\n{'query (gunicorn, 2 workers; ' + str(args.requests) + ' timed requests each)':<58} {'rows':>8} {'p50 ms':>8} {'p95 ms':>8}  target p95 < 300 ms")
    for name in MIX:
        r = results[name]
        rows = "" if r["rows"] is None else f"{r['rows']:,}"
        print(f"{name:<58} {rows:>8} {r['p50']:>8.0f} {r['p95']:>8.0f}  {'ok' if r['p95'] < 300 else 'MISSED'}")
    rate = csv["rows"] / csv["seconds"]
    print(
        f"\nCSV export (period=day, group_by=site,vo,user, 9 months): HTTP {csv['status']}, {csv['rows']:,} rows in "
        f"{csv['seconds']:.1f} s = {rate:,.0f} rows/s (target >= 100,000: {'ok' if rate >= 100_000 else 'MISSED'})"
    )
    print(
        f"peak memory of the worker serving the CSV (VmHWM reset just before it): {csv_peaks[served]:.0f} MB "
        f"(resident before: {before_csv[served]:.0f} MB; target < 200 MB: {'ok' if csv_peaks[served] < 200 else 'MISSED'})"
    )
    overall = {pid: max(mix_peaks[pid], csv_peaks[pid]) for pid in workers}
    print(
        "peak memory of each gunicorn worker over the whole run (VmHWM; queries, then the CSV): "
        + ", ".join(f"{overall[pid]:.0f} MB (queries {mix_peaks[pid]:.0f}, CSV {csv_peaks[pid]:.0f})" for pid in workers)
    )


if __name__ == "__main__":
    main()
