"""Benchmark of the ingest path (issue 3), printed in one run on the same data:

- N synthetic HTCondor history ads of realistic size (about 80 attributes, 2-3 KB each);
- floor 1: a plain Python line split of the file (every line split into name and value);
- floor 2: PostgreSQL COPY of the final usage-record rows;
- end to end: the real ingest path (bundle store, format detection, parser, loader) into PostgreSQL,
  for one worker process (the parser in one thread, the database writes in a second); records/s for each.
  Targets: >= 20,000 ads/s end to end, and >= half of floor 1.
- for reference: the parser alone without a database (the Python share of the end-to-end time), also with
  its pure-Python reference loops instead of the compiled ones; and the CPU time per ad of this process and
  of its PostgreSQL backend during the end-to-end run (the two run on the two cores at once: the larger
  bounds the end-to-end rate).

    .venv/bin/python bench/ingest.py [--ads 200000] [--db gridledger_bench_ingest]
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from contextlib import nullcontext
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.database import setup_django  # noqa: E402 - after the path is set


def line_split(path: Path) -> int:
    ads = 0
    with path.open("rb") as handle:
        for line in handle:
            name, _, value = line.partition(b" = ")
            if not value and line.startswith(b"***"):
                ads += 1
    return ads


def parse_only(path: Path, compiled: bool = True) -> int:
    """The parser alone, no database: how much of the end-to-end time is Python (for reading the figures)."""
    from unittest import mock

    from ingest.parsers import ParseContext, Rejection
    from ingest.parsers import htcondor_history as history

    loops = nullcontext() if compiled else mock.patch.multiple(
        history, _adlines=None, PICKER=history.AttributePicker(history.MAPPED_ATTRIBUTES, compiled=False)
    )
    with path.open("rb") as handle, loops:
        return sum(1 for item in history.HTCondorHistoryParser().parse(handle, path.name, ParseContext()) if not isinstance(item, Rejection))


def backend_cpu_seconds() -> float | None:
    """CPU seconds used so far by this connection's PostgreSQL backend (Linux, server on this machine), else None."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        (pid,) = cursor.fetchone()
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def copy_floor(fields: list[str], rows: list[tuple]) -> None:
    """COPY the rows into a table like the records table (same columns and indexes)."""
    from django.db import connection, transaction

    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("DROP TABLE IF EXISTS floor_records")
        cursor.execute("CREATE TABLE floor_records (LIKE accounting_usagerecord INCLUDING ALL)")
        columns = ", ".join(f'"{name}"' for name in fields)
        with cursor.cursor.copy(f"COPY floor_records ({columns}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)


def timed(label: str, count: int, func):
    start = time.perf_counter()
    result = func()
    seconds = time.perf_counter() - start
    print(f"{label:<48} {seconds:8.2f} s {count / seconds:12,.0f} records/s", flush=True)
    return count / seconds, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ads", type=int, default=200_000)
    parser.add_argument("--db", default="gridledger_bench_ingest")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="gl-bench-ingest-"))
    try:
        run(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)  # the generated history and the bundle store (~1.3 GB at 200,000 ads)


def run(args: argparse.Namespace, work: Path) -> None:
    setup_django(args.db, "bench", fresh=True, env={"GRIDLEDGER_BUNDLE_STORE": str(work / "store")})
    from ingest.synthetic import write_payload_ads

    path = work / "history"
    start = time.perf_counter()
    size = write_payload_ads(path, args.ads, seed=7, padding=True)
    print(f"generated {args.ads} ads, {size / 1e6:.0f} MB ({size / args.ads:.0f} B/ad, "
          f"{sum(1 for _ in path.open('rb')) / args.ads:.0f} lines/ad) in {time.perf_counter() - start:.1f} s")  # fmt: skip

    from django.db import connection
    from django.utils import timezone

    from accounting.models import UsageRecord
    from ingest.services.bundles import create_bundle_from_path, ingest_bundle

    split_rate, _ = timed("floor 1: Python line split", args.ads, lambda: line_split(path))
    timed("parser alone, no database (for reference)", args.ads, lambda: parse_only(path))
    timed("  the same with its pure-Python reference loops", args.ads, lambda: parse_only(path, compiled=False))
    bundle = create_bundle_from_path(path, fmt="")
    backend, process = backend_cpu_seconds(), time.process_time()
    e2e_rate, bundle = timed("end to end: real ingest path (1 process)", args.ads, lambda: ingest_bundle(bundle.pk))
    process = time.process_time() - process
    backend = backend_cpu_seconds() - backend if backend is not None else None
    print(f"  CPU per ad: this process {process / args.ads * 1e6:.0f} us, its PostgreSQL backend "
          + (f"{backend / args.ads * 1e6:.0f} us" if backend is not None else "not readable"))  # fmt: skip
    print(f"  bundle: status={bundle.status} read={bundle.records_read} inserted={bundle.records_inserted} rejected={bundle.rejected}")
    now = timezone.now()
    fields = [f.attname for f in UsageRecord._meta.concrete_fields]
    rows = [tuple(now if name in ("created", "updated") else value for name, value in zip(fields, row, strict=True))
            for row in UsageRecord.objects.values_list(*fields).iterator(chunk_size=20000)]  # fmt: skip
    copy_rate, _ = timed("floor 2: PostgreSQL COPY of the final rows", len(rows), lambda: copy_floor(fields, rows))
    print(f"{'end to end / line split':<48} {e2e_rate / split_rate:8.2f}   (target >= 0.5)")
    print(f"{'end to end / COPY':<48} {e2e_rate / copy_rate:8.2f}")
    print(f"{'target >= 20,000 ads/s end to end':<48} {'met' if e2e_rate >= 20000 else 'NOT met'}")
    connection.close()


if __name__ == "__main__":
    main()
