"""`visible_to(user, queryset)`: the one row-level scope applied by every page, API view and export
(the NetBox `restrict` pattern). Roles differ only here and in `portal/roles.py`.
"""
from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.db.models import Q

from accounting.models import VO, DailyUsage, Person, Project, Resource, ScienceDomain, Site, UsageRecord
from accounting.services.reports import UsageQuery
from ingest.models import Bundle
from portal.models import MonthlyUsage
from portal.roles import scope_of

AGGREGATE_MODELS = (Site, VO, Project, ScienceDomain, Resource)
USAGE_MODELS = (DailyUsage, MonthlyUsage)


class PersonLevelDenied(PermissionDenied):
    """Person-level rows were asked for by a role that may not see them; `parameter` names the ask."""

    def __init__(self, parameter: str) -> None:
        super().__init__("person-level rows (DNs) are not visible to your role")
        self.parameter = parameter
        self.message = str(self)


def visible_to(user, queryset, *, people: bool = False):
    """The rows of `queryset` that `user` may see.

    For summary rows, `people=True` means the rows will be shown per person (grouped or filtered on
    the user): admins see all, VO managers the rows of their VOs, anyone else is refused with
    `PersonLevelDenied`. Aggregates (`people=False`) are open to every role."""
    scope = scope_of(user)
    model = queryset.model
    if model is Bundle:
        if scope.is_admin:
            return queryset
        return queryset.filter(created_by=user) if user.is_authenticated else queryset.none()
    if not scope.aggregates:
        return queryset.none()
    if model in AGGREGATE_MODELS:
        return queryset
    if model in USAGE_MODELS:
        if not people or scope.all_people:
            return queryset
        if not scope.people:
            raise PersonLevelDenied("user")
        return queryset.filter(vo_id__in=scope.person_vo_ids)
    if model is UsageRecord:
        if scope.all_people:
            return queryset
        return queryset.filter(vo_id__in=scope.person_vo_ids) if scope.people else queryset.none()
    if model is Person:
        if scope.all_people:
            return queryset
        if not scope.people:
            return queryset.none()
        ids = scope.person_vo_ids
        return queryset.filter(
            Q(pk__in=DailyUsage.objects.filter(vo_id__in=ids).values("person_id"))
            | Q(pk__in=UsageRecord.objects.filter(vo_id__in=ids).values("person_id"))
        )
    raise TypeError(f"no visibility rule for {model.__name__}")


def is_person_level(query: UsageQuery) -> str | None:
    """The parameter that makes a usage query person-level (`group_by` or `user`), else None."""
    if "user" in query.group_by:
        return "group_by"
    if query.filters.get("user"):
        return "user"
    return None


def usage_base(user, query: UsageQuery):
    """The summary rows `user` may aggregate for `query`: the month rollup when it can answer,
    else the daily table, restricted to the user's VOs for person-level queries."""
    from portal.rollups import base_for

    parameter = is_person_level(query)
    try:
        return visible_to(user, base_for(query), people=parameter is not None)
    except PersonLevelDenied:
        raise PersonLevelDenied(parameter or "user") from None
