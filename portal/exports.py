"""Streaming CSV: constant memory whatever the row count (CONTRACT.md: UTF-8, `.` decimals, header first).

Lines are sent in blocks of about 64 KiB (one write per block, not per row). Usage exports read the
aggregated rows as tuples (`usage_csv_rows`), with the same values `usage_rows` gives the JSON API.
"""
from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator
from itertools import islice

from django.db import connection, transaction
from django.db.models import Sum
from django.http import StreamingHttpResponse

from accounting.choices import REPORTED_DESIGNATIONS
from accounting.models import VO, DailyUsage, Person, Project, Resource, ScienceDomain, Site
from accounting.services.reports import DIMENSIONS, METRICS, TRUNC, UsageQuery, usage_queryset
from portal.models import MonthlyUsage
from portal.rollups import reported_base

BLOCK = 64 * 1024
CHUNK_SIZE = 5000


class _Echo:
    def write(self, value: str) -> str:
        return value


def csv_lines(columns: list[str], rows: Iterable[dict | list | tuple]) -> Iterator[str]:
    """The header, then one line per row (a dict by column name, or a sequence in column order)."""
    writer = csv.writer(_Echo(), lineterminator="\n")
    yield writer.writerow(columns)
    for row in rows:
        if isinstance(row, dict):
            row = ["" if row.get(name) is None else row.get(name) for name in columns]
        yield writer.writerow(row)


def blocks(lines: Iterable[str]) -> Iterator[bytes]:
    """Join lines into blocks of about BLOCK bytes, UTF-8 encoded."""
    pending: list[str] = []
    size = 0
    for line in lines:
        pending.append(line)
        size += len(line)
        if size >= BLOCK:
            yield "".join(pending).encode("utf-8")
            pending, size = [], 0
    if pending:
        yield "".join(pending).encode("utf-8")


def csv_response(columns: list[str], rows: Iterable, filename: str) -> StreamingHttpResponse:
    response = StreamingHttpResponse(blocks(csv_lines(columns, rows)), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


# dimension -> (column of the summary rows, model whose `name` the dimension shows); kind has no table
KEYS = {
    "site": ("site_id", Site), "resource": ("resource_id", Resource), "vo": ("vo_id", VO),
    "user": ("person_id", Person), "project": ("project_id", Project),
    "science_domain": ("science_domain_id", ScienceDomain), "kind": ("kind", None),
}  # fmt: skip


def _sql_by_ids(query: UsageQuery, base) -> tuple[str, list]:
    """SQL giving the rows of `usage_queryset(query, base)`, same columns, order and values, summed by
    ids first and named after: the names (unique) are joined to the summed rows and sorted there,
    not to every summary row before the GROUP BY. The WHERE is the report query's (designation, range,
    filters by name); tests/portal/test_exports.py pins the rows to `usage_rows`."""
    qs = reported_base(query, base)  # the month rollup's grain already summed over the reported designations
    if qs is None:
        qs = base if base is not None else DailyUsage.objects.all()
        if query.designation == "reported":
            qs = qs.filter(designation__in=REPORTED_DESIGNATIONS)
        elif query.designation != "all":
            qs = qs.filter(designation=query.designation)
    qs = qs.filter(day__gte=query.start, day__lt=query.end)
    for name, values in query.filters.items():
        qs = qs.filter(**{f"{DIMENSIONS[name]}__in": values})
    keys = [KEYS[name][0] for name in query.group_by]
    if query.period != "total":
        # The month rollup's `day` is already its month's first day: no date_trunc per row there.
        if query.period == "day" or (query.period == "month" and qs.model is MonthlyUsage):
            keys.insert(0, "day")  # a column, so GROUP BY day first (an annotation would come last)
        else:
            qs = qs.annotate(period=TRUNC[query.period]("day"))
            keys.insert(0, "period")
    inner, params = qs.values(*keys).annotate(**{name: Sum(name) for name in METRICS}).order_by().query.sql_with_params()
    select, joins, order = [], [], []
    if query.period != "total":
        select.append(f"to_char(u.{keys[0]}, 'YYYY-MM-DD')")  # ISO whatever the DateStyle
        order.append(f"u.{keys[0]}")
    for n, name in enumerate(query.group_by):
        column, model = KEYS[name]
        if model is None:
            select.append(f"u.{column}")
        else:
            joins.append(f"LEFT JOIN {model._meta.db_table} d{n} ON d{n}.id = u.{column}")
            select.append(f"d{n}.name")
        order.append(select[-1])
    select += [f"u.{name}" for name in METRICS]
    sql = f"SELECT {', '.join(select)} FROM ({inner}) u {' '.join(joins)} ORDER BY {', '.join(order)}"
    return sql, list(params)


def _raw_chunks(query: UsageQuery, base, fields: list[str], period: bool, bulk: bool) -> Iterator[list[tuple]]:
    """The report rows as plain tuples, in lists of up to CHUNK_SIZE, over a server-side cursor.

    On PostgreSQL the SQL of `_sql_by_ids` runs on Django's chunked cursor (logged and counted like any
    query) inside a transaction, so the cursor is not WITH HOLD (which copies the whole result on the
    server before the first row). For a `bulk` read (a CSV export) `jit` is off (1.7 s of JIT compilation
    in a 12.8 s export) and the plan is made for reading every row (`cursor_tuple_fraction` 1: a cursor's
    default fast-start plan took 6.3 s instead of 3.5 s for the 1.58 M-row export); one statement more,
    so not for pages. Rows are read without the ORM's per-row converters (the period comes as ISO text
    from the SQL). Elsewhere (SQLite, the demo), and for a single grand total, the ORM's iterator reads
    them."""
    if connection.vendor != "postgresql" or not (query.group_by or period):
        rows = usage_queryset(query, base).values_list(*fields).iterator(chunk_size=CHUNK_SIZE)
        hours = len(METRICS) - 1  # the last columns: floats, whatever type the backend sums them to
        while chunk := list(islice(rows, CHUNK_SIZE)):
            chunk = [(*row[:-hours], *(float(v or 0.0) for v in row[-hours:])) for row in chunk]
            if period:
                chunk = [(_iso(row[0]), *row[1:]) for row in chunk]
            yield chunk
        return
    sql, params = _sql_by_ids(query, base)
    with transaction.atomic(savepoint=False), connection.chunked_cursor() as cursor:
        if bulk:
            with connection.cursor() as settings:
                settings.execute("SET LOCAL jit = off; SET LOCAL cursor_tuple_fraction = 1.0")
        cursor.execute(sql, params)
        while chunk := cursor.fetchmany(CHUNK_SIZE):
            yield chunk


def _iso(value) -> str:
    return (value if isinstance(value, str) else value.isoformat())[:10]


def usage_chunks(query: UsageQuery, base=None, *, bulk: bool = False) -> Iterator[list[tuple]]:
    """`usage_rows(query, base)` as tuples in column order, in lists of up to CHUNK_SIZE rows: the same
    values (ISO periods, hours rounded to 6 decimals, whole jobs, None for a missing dimension), with
    one list comprehension per chunk instead of a generator step per row."""
    columns = query.columns()
    fields = [DIMENSIONS.get(name, name) for name in columns]
    period = bool(columns) and columns[0] == "period"
    m = len(columns) - len(METRICS)  # the first metric, jobs; then four hour columns
    for chunk in _raw_chunks(query, base, fields, period, bulk):
        yield [
            (*r[:m], int(r[m] or 0), round(r[m + 1] or 0.0, 6), round(r[m + 2] or 0.0, 6),
             round(r[m + 3] or 0.0, 6), round(r[m + 4] or 0.0, 6))
            for r in chunk
        ]  # fmt: skip


def usage_values(query: UsageQuery, base=None, *, blank: object = None) -> Iterator[tuple]:
    """`usage_rows(query, base)` as tuples in column order (`usage_chunks`, one row at a time).
    Missing dimension values read `blank` (None for JSON, "" for CSV)."""
    for chunk in usage_chunks(query, base):
        if blank is None:
            yield from chunk
            continue
        for row in chunk:
            yield tuple(blank if value is None else value for value in row)


def usage_csv_rows(query: UsageQuery, base=None) -> Iterator[tuple]:
    return usage_values(query, base, blank="")


def usage_csv_response(query: UsageQuery, base, filename: str) -> StreamingHttpResponse:
    """The usage rows as a streamed CSV, written a chunk at a time (csv writes None as empty)."""

    def chunk_blocks() -> Iterator[bytes]:
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(query.columns())
        for rows in usage_chunks(query, base, bulk=True):
            writer.writerows(rows)
            if buffer.tell() >= BLOCK:
                yield buffer.getvalue().encode("utf-8")
                buffer.seek(0)
                buffer.truncate()
        yield buffer.getvalue().encode("utf-8")

    response = StreamingHttpResponse(chunk_blocks(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def usage_dicts(query: UsageQuery, base=None) -> Iterator[dict]:
    """The rows of `usage_rows(query, base)`, equal to them, built from tuples."""
    columns = query.columns()
    for row in usage_values(query, base):
        yield dict(zip(columns, row, strict=True))
