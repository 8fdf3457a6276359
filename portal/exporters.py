"""Export kinds for `manage.py export KIND` (CONTRACT.md): a registry name -> function, so other kinds
are added by registering one more function.

An exporter takes the API's query parameters (a QueryDict) and returns `(columns, rows)`: the same
rows, with the same columns, as the API answers for those parameters. It raises `QueryError` on a bad
parameter and `ExportUnavailable` when the kind is not built yet.
"""
from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable

from accounting.services.reports import QueryError
from portal import explorer
from portal.exports import usage_dicts

Exporter = Callable[..., tuple[list[str], Iterable[dict]]]
EXPORTERS: dict[str, Exporter] = {}



class ExportUnavailable(Exception):
    """The export kind exists in the contract but is not available in this installation yet."""


def register(name: str) -> Callable[[Exporter], Exporter]:
    def decorator(function: Exporter) -> Exporter:
        EXPORTERS[name] = function
        return function

    return decorator


@register("usage")
def export_usage(params) -> tuple[list[str], Iterable[dict]]:
    """Rows of `GET /api/v1/usage/` for the parameters (command line: every row, no role scope)."""
    from portal.rollups import base_for

    query, view = explorer.parse(params)
    fmt = params.get("format") or "csv"
    if fmt not in ("csv", "json"):
        raise QueryError("format", "must be csv or json")
    rows = usage_dicts(query, base_for(query))
    if view.top is not None:
        rows = explorer.apply_top(rows, query, view)
    return query.columns(), rows


def categories_engine():
    """`accounting.services.categories` (the pilot-time categories engine), or None when not installed."""
    try:
        module = importlib.import_module("accounting.services.categories")
    except ImportError:
        return None
    needed = ("build_category_query", "category_rows", "category_columns")
    return module if all(hasattr(module, name) for name in needed) else None


@register("categories")
def export_categories(params) -> tuple[list[str], Iterable[dict]]:
    """Rows of `GET /api/v1/categories/`, from the categories engine's own query."""
    engine = categories_engine()
    if engine is None:
        raise ExportUnavailable("categories: not available yet (the pilot-time categories engine is not installed)")
    query = engine.build_category_query(params)
    fmt = params.get("format") or "csv"
    if fmt not in ("csv", "json"):
        raise QueryError("format", "must be csv or json")
    return engine.category_columns(query), engine.category_rows(query)


@register("quotas")
def export_quotas(params) -> tuple[list[str], Iterable[dict]]:
    """Rows of `GET /api/v1/quotas/` (every quota: the command line is not scoped by role)."""
    from accounting.models import Quota
    from portal.api.quotas import list_rows

    return list_rows(Quota.objects.all(), params)
