"""Listing a resource for a user: scope, FilterSet, ordering and limit/offset pages, one code path for
the list pages, the API lists and the CSV exports."""
from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlencode

from accounting.services.reports import QueryError
from portal.resources import Resource
from portal.scope import visible_to

DEFAULT_LIMIT = 100
MAX_LIMIT = 1000


def filtered(user, resource: Resource, params):
    """The rows of `resource` that `user` may see, filtered by `params`; QueryError names a bad one."""
    queryset = visible_to(user, resource.model.objects.all()).order_by(*resource.ordering)
    return resource.filterset(params, queryset=queryset).filtered()


def _int(params, name: str, default: int, low: int, high: int) -> int:
    raw = params.get(name) or ""
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise QueryError(name, f"not a whole number: {raw!r}") from None
    if not low <= value <= high:
        raise QueryError(name, f"must be between {low} and {high}")
    return value


@dataclass
class Page:
    """One limit/offset page of a listing, with the query strings of its neighbours."""

    rows: list[dict]
    count: int
    limit: int
    offset: int
    next_query: str | None
    previous_query: str | None


def page_of(resource: Resource, queryset, params) -> Page:
    limit = _int(params, "limit", DEFAULT_LIMIT, 1, MAX_LIMIT)
    offset = _int(params, "offset", 0, 0, 10**12)
    count = queryset.count()
    rows = resource.rows(queryset[offset : offset + limit])

    def query(new_offset: int) -> str:
        items = [(k, v) for k, v in params.lists() if k != "offset" for v in v] if hasattr(params, "lists") else []
        if new_offset:
            items.append(("offset", str(new_offset)))
        return urlencode(items)

    next_query = query(offset + limit) if offset + limit < count else None
    previous_query = query(max(offset - limit, 0)) if offset > 0 else None
    return Page(rows, count, limit, offset, next_query, previous_query)
