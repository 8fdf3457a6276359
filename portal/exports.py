"""Streaming CSV: constant memory whatever the row count (CONTRACT.md: UTF-8, `.` decimals, header first).

Lines are sent in blocks of about 64 KiB (one write per block, not per row). Usage exports read the
aggregated rows as tuples (`usage_csv_rows`), with the same values `usage_rows` gives the JSON API.
"""
from __future__ import annotations

import csv
from collections.abc import Iterable, Iterator

from django.http import StreamingHttpResponse

from accounting.services.reports import DIMENSIONS, METRICS, UsageQuery, usage_queryset

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


def usage_values(query: UsageQuery, base=None, *, blank: object = None) -> Iterator[list]:
    """`usage_rows(query, base)` as lists in column order, read as tuples over a server-side cursor:
    the same values (ISO periods, hours rounded to 6 decimals, whole jobs), less work per row.
    Missing dimension values read `blank` (None for JSON, "" for CSV)."""
    columns = query.columns()
    queryset = usage_queryset(query, base)
    fields = [DIMENSIONS.get(name, name) for name in columns]
    period = columns and columns[0] == "period"
    first_metric = len(columns) - len(METRICS)
    for values in queryset.values_list(*fields).iterator(chunk_size=CHUNK_SIZE):
        row = list(values)
        if period:
            value = row[0]
            row[0] = (value.isoformat() if hasattr(value, "isoformat") else str(value))[:10]
        row[first_metric] = int(row[first_metric] or 0)
        for i in range(first_metric + 1, len(row)):
            row[i] = round(float(row[i] or 0.0), 6)
        if blank is not None:
            for i in range(first_metric):
                if row[i] is None:
                    row[i] = blank
        yield row


def usage_csv_rows(query: UsageQuery, base=None) -> Iterator[list]:
    return usage_values(query, base, blank="")


def usage_dicts(query: UsageQuery, base=None) -> Iterator[dict]:
    """The rows of `usage_rows(query, base)`, equal to them, built from tuples."""
    columns = query.columns()
    for row in usage_values(query, base):
        yield dict(zip(columns, row, strict=True))
