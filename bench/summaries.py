"""Benchmark of the summary rebuild (issue 4), printed in one run on the same data:

- full rebuild of the payload-only-refines summaries (set-based SQL) over 90 days;
- the floor: a plain INSERT ... SELECT ... GROUP BY day, site, vo, person, project over the payload table;
- their ratio (target: at most 3);
- one day rebuilt incrementally through the service (summaries + categories; target: under 1 s);
- classifying every pilot into the eight categories (target: under 60 s).

Data: 100,000 pilots and 1,000,000 payloads over 90 days, 60 sites, 20 VOs, 2,000 people, loaded with
PostgreSQL COPY into its own database (default gridledger_bench, dropped and re-created).

    .venv/bin/python bench/summaries.py [--pilots 100000] [--payloads-per-pilot 10] [--db gridledger_bench] [--reuse]
"""
from __future__ import annotations

import argparse
import random
import sys
import time
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.database import setup_django  # noqa: E402 - after the path is set

RECORD_COLUMNS = [
    "id", "kind", "natural_key", "record_hash", "source_format", "source_file", "site_id", "resource_id", "vo_id",
    "person_id", "fqan", "local_user", "pilot_ref", "start", '"end"', "wall_seconds", "cores", "gpus",
    "cpu_user_seconds", "cpu_sys_seconds", "exit_code", "void", "created", "updated",
]  # fmt: skip


def copy_rows(cursor, table: str, columns: list[str], rows) -> None:
    with cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)


def seed(n_pilots: int, per_pilot: int, first: date, days: int) -> tuple[int, int]:
    from django.db import connection

    rng = random.Random(1)
    t0 = datetime(first.year, first.month, first.day, tzinfo=timezone.utc)
    with connection.cursor() as cursor:
        raw = cursor.cursor
        copy_rows(raw, "accounting_site", ["id", "name", "facility"], ((i, f"SITE-{i:02d}", "") for i in range(1, 61)))
        copy_rows(raw, "accounting_resource", ["id", "name", "site_id"], ((i, f"CE-{i:02d}", i) for i in range(1, 61)))
        copy_rows(raw, "accounting_vo", ["id", "name"], ((i, f"vo{i:02d}") for i in range(1, 21)))
        copy_rows(raw, "accounting_person", ["id", "name"], ((i, f"/DC=org/CN=Person {i}") for i in range(1, 2001)))
        copy_rows(raw, "accounting_benchmarkfactor", ["resource_id", "benchmark", "value", "valid_from"],
                  ((i, "HS06", 8 + i % 12, first) for i in range(1, 55)))  # fmt: skip
        now = datetime.now(timezone.utc)
        payload_count = 0

        def records():
            nonlocal payload_count
            next_id = 1
            for p in range(n_pilots):
                site = rng.randint(1, 60)
                vo = rng.randint(1, 20)
                cores = rng.choice((1, 4, 8, 8))
                start = t0 + timedelta(seconds=rng.uniform(0, days * 86400 - 50 * 3600))
                life = rng.uniform(2, 48) * 3600
                key = f"schedd_glideins{p % 8}@factory#{p}.0"
                yield (next_id, "pilot", key, "x", "bench", "", site, site, vo, None, "", "", "", start,
                       start + timedelta(seconds=life), life, cores, 0, life * cores * 0.1, 0, 0, False, now, now)  # fmt: skip
                next_id += 1
                # Payloads fill about 80 % of the pilot's cores x life in `cores` parallel lanes (as in the demo);
                # 2 % of pilots are over-committed (1.5x), 3 % of payloads name a pilot that never arrives.
                lanes = [start + timedelta(seconds=rng.uniform(0, 600))] * cores
                over = 1.5 if rng.random() < 0.02 else 1.0
                share = 0.8 * over * life * cores / per_pilot
                end_of_life = start + timedelta(seconds=life)
                for j in range(per_pilot):
                    lane = j % cores
                    run_start = lanes[lane]
                    wall = max(0.0, min(share * rng.uniform(0.7, 1.3), (end_of_life - run_start).total_seconds() * over))
                    lanes[lane] = run_start + timedelta(seconds=wall)
                    ref = key if rng.random() > 0.03 else f"missing#{p}.{j}"
                    yield (next_id, "payload", f"ap{vo}#{p}.{j}#1", "x", "bench", "", site, site, vo, rng.randint(1, 2000),
                           "", "", ref, run_start, run_start + timedelta(seconds=wall), wall, 1, 0, wall * 0.8,
                           wall * 0.02, rng.choice((0, 0, 0, 1)), False, now, now)  # fmt: skip
                    next_id += 1
                    payload_count += 1
        copy_rows(raw, "accounting_usagerecord", RECORD_COLUMNS, records())
        cursor.execute("SELECT setval(pg_get_serial_sequence('accounting_usagerecord', 'id'), max(id)) FROM accounting_usagerecord")
        cursor.execute("""INSERT INTO accounting_pilotdetails (record_id, glidein_name, frontend_client, entry, cores, memory_mb, gpus,
                          condor_started, claims, metrics)
                          SELECT id, '', '', '', cores, cores * 2048, 0, true, NULL, '{}'::jsonb FROM accounting_usagerecord WHERE kind = 'pilot'""")
        cursor.execute("ANALYZE")
    return n_pilots, payload_count


# The floor writes into a table like the summary table (same columns and indexes, logged), so both sides pay
# the same cost of storing rows; FLOOR_TEMP is the same query into an unlogged, unindexed temp table.
FLOOR_SELECT = """
SELECT ("end" AT TIME ZONE 'UTC')::date AS day, site_id, vo_id, person_id, project_id, 'payload' AS kind,
       'payload' AS designation, count(*) AS jobs, sum(wall_seconds * cores / 3600.0) AS wall_hours,
       sum((cpu_user_seconds + cpu_sys_seconds) / 3600.0) AS cpu_hours, 0 AS normalized_hours, 0 AS gpu_hours
FROM accounting_usagerecord WHERE kind = 'payload'
GROUP BY 1, 2, 3, 4, 5
"""
FLOOR = [
    "DROP TABLE IF EXISTS bench_floor",
    "CREATE TABLE bench_floor (LIKE accounting_dailyusage INCLUDING ALL)",
    "INSERT INTO bench_floor (day, site_id, vo_id, person_id, project_id, kind, designation, jobs, wall_hours, cpu_hours, "
    "normalized_hours, gpu_hours)" + FLOOR_SELECT,
]
FLOOR_TEMP = ["DROP TABLE IF EXISTS floor_temp", "CREATE TEMP TABLE floor_temp AS" + FLOOR_SELECT]


def ingest_on(day: date, count: int) -> int:
    """Records as an ingest would add them, all on `day`: `count` / 2 batch jobs and as many payloads
    running in pilots alive that day (the incremental rebuild then has real changes to write)."""
    from django.db import connection

    from accounting.services.refine import day_start

    rng = random.Random(7)
    lo = day_start(day)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT natural_key, site_id, vo_id FROM accounting_usagerecord WHERE kind = 'pilot' AND start < %s "
            "AND \"end\" > %s ORDER BY id LIMIT 500", [lo + timedelta(hours=20), lo + timedelta(hours=4)],
        )  # fmt: skip
        pilots = cursor.fetchall()
        cursor.execute("SELECT max(id) FROM accounting_usagerecord")
        next_id = cursor.fetchone()[0] + 1
        now = datetime.now(timezone.utc)
        rows = []
        for n in range(count):
            start = lo + timedelta(seconds=rng.uniform(4 * 3600, 18 * 3600))
            wall = rng.uniform(600, 4 * 3600)
            if n % 2 and pilots:
                key, site, vo = rng.choice(pilots)
                kind, ref = "payload", key
            else:
                kind, ref, site, vo = "batch", "", rng.randint(1, 60), rng.randint(1, 20)
            rows.append((next_id + n, kind, f"new#{day}#{n}", "x", "bench", "", site, site, vo, rng.randint(1, 2000), "", "",
                         ref, start, start + timedelta(seconds=wall), wall, 1, 0, wall * 0.8, 0, 0, False, now, now))  # fmt: skip
        copy_rows(cursor.cursor, "accounting_usagerecord", RECORD_COLUMNS, rows)
    return len(rows)


def seeded(db: str, pilots: int, per_pilot: int) -> bool:
    """Whether `db` holds a seed of these sizes (with --reuse: skip the minutes of seeding)."""
    import psycopg

    from bench.database import database_url

    try:
        with psycopg.connect(database_url(db)) as conn:
            count = conn.execute("SELECT count(*), count(*) FILTER (WHERE kind = 'pilot') FROM accounting_usagerecord "
                                 "WHERE natural_key NOT LIKE 'new#%'").fetchone()  # fmt: skip
    except psycopg.Error:
        return False
    return count is not None and tuple(count) == (pilots * (1 + per_pilot), pilots)


def timed(label: str, func):
    start = time.perf_counter()
    result = func()
    seconds = time.perf_counter() - start
    print(f"{label:<55} {seconds:8.2f} s", flush=True)
    return seconds, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pilots", type=int, default=100_000)
    parser.add_argument("--payloads-per-pilot", type=int, default=10)
    parser.add_argument("--days", type=int, default=90)
    parser.add_argument("--db", default="gridledger_bench")
    parser.add_argument("--reuse", action="store_true", help="reuse the seed of an earlier run with the same sizes")
    args = parser.parse_args()
    first = date(2024, 1, 1)
    last = first + timedelta(days=args.days - 1)
    if args.reuse and seeded(args.db, args.pilots, args.payloads_per_pilot):
        setup_django(args.db, "bench")
        pilots, payloads = args.pilots, args.pilots * args.payloads_per_pilot
        print(f"reusing the seed in {args.db}; dropping its summaries")
        from django.db import connection

        with connection.cursor() as cursor:  # empty, as after a fresh seed (no dead rows left behind)
            cursor.execute("TRUNCATE accounting_dailyusage, accounting_categorydaily, accounting_summaryrun")
            cursor.execute("DELETE FROM accounting_usagerecord WHERE natural_key LIKE 'new#%%'")  # the last run's ingest
    else:
        setup_django(args.db, "bench", fresh=True)
        _, (pilots, payloads) = timed("seed (COPY)", lambda: seed(args.pilots, args.payloads_per_pilot, first, args.days))
    print(f"data: {pilots} pilots, {payloads} payloads, {args.days} days, 60 sites, 20 VOs, 2000 people")

    from django.db import connection, transaction

    from accounting.models import CategoryDaily, DailyUsage
    from accounting.services.categories import rebuild_categories
    from accounting.services.summaries import SQL_CHUNK_DAYS, rebuild
    from accounting.services.summary_sql import rebuild_chunk_sql

    def full_sql():
        with transaction.atomic():
            day = first
            while day <= last:
                chunk_last = min(last, day + timedelta(days=SQL_CHUNK_DAYS - 1))
                rebuild_chunk_sql(day, chunk_last)
                day = chunk_last + timedelta(days=1)

    def run(statements):
        with transaction.atomic(), connection.cursor() as cursor:
            for statement in statements:
                cursor.execute(statement)

    timed("floor into a temp table (unlogged, no index), for reference", lambda: run(FLOOR_TEMP))
    floor_s, _ = timed("floor: INSERT ... SELECT ... GROUP BY over payloads", lambda: run(FLOOR))
    full_s, _ = timed("full rebuild, payload-only-refines (SQL, 90 days)", full_sql)
    print(f"{'ratio full / floor':<55} {full_s / floor_s:8.2f} x   (target <= 3)")
    print(f"summary rows: {DailyUsage.objects.count()}")
    categories_s, _ = timed("categories for all pilots (90 days)", lambda: transaction.atomic()(rebuild_categories)(first, last))
    print(f"category rows: {CategoryDaily.objects.count()}   (target < 60 s)")
    mid = first + timedelta(days=args.days // 2)
    added = ingest_on(mid, 1000)
    day_s, _ = timed(f"one day incrementally ({mid}: summaries + categories)", lambda: rebuild(mid, mid))
    print(f"  (after an ingest of {added} new jobs on that day: half batch jobs, half payloads in its pilots)")
    print(f"{'targets met':<55} ratio={'yes' if full_s <= 3 * floor_s else 'NO'} "
          f"day={'yes' if day_s < 1 else 'NO'} categories={'yes' if categories_s < 60 else 'NO'}")  # fmt: skip


if __name__ == "__main__":
    main()
