"""The listable resources: model, FilterSet and columns, shared by the list pages, the API lists and
their CSV exports, so all three show the same rows with the same names.

Rows are read with `.values(...)` (one query per page, no N+1) and renamed to the column names;
CSV streams the same columns over `.iterator(chunk_size=...)`.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, datetime

from accounting.models import VO, Person, Project, ScienceDomain, Site, UsageRecord
from ingest.models import Bundle
from portal import filtersets

CHUNK_SIZE = 2000


@dataclass(frozen=True)
class Resource:
    """A listable resource. `access`: the scope capability needed (`aggregates`, `people` or
    `signed_in`); `detail_page`: URL name of its detail page, if any."""

    key: str
    title: str
    model: type
    filterset: type
    columns: tuple[tuple[str, str], ...]  # (column, ORM path)
    access: str = "aggregates"
    detail_page: str | None = None
    api_detail: str | None = None
    ordering: tuple[str, ...] = ("pk",)

    @property
    def names(self) -> list[str]:
        return [name for name, _ in self.columns]

    @property
    def paths(self) -> list[str]:
        return [path for _, path in self.columns]

    def values(self, queryset):
        return queryset.values(*self.paths)

    def row(self, values: dict) -> dict:
        return {name: plain(values[path]) for name, path in self.columns}

    def rows(self, queryset) -> list[dict]:
        return [self.row(v) for v in self.values(queryset)]

    def stream(self, queryset) -> Iterator[dict]:
        for values in self.values(queryset).iterator(chunk_size=CHUNK_SIZE):
            yield self.row(values)

    def model_field(self, path: str):
        model, parts = self.model, path.split("__")
        for part in parts[:-1]:
            model = model._meta.get_field(part).related_model
        return model._meta.get_field(parts[-1])


def plain(value):
    """JSON and CSV show dates and times the same way: ISO 8601."""
    if isinstance(value, datetime | date):
        return value.isoformat()
    return value


SITES = Resource(
    "sites", "Sites", Site, filtersets.SiteFilterSet,
    (("id", "id"), ("name", "name"), ("facility", "facility")),
    detail_page="site-detail", api_detail="api-site-detail", ordering=("name",),
)  # fmt: skip
VOS = Resource(
    "vos", "VOs", VO, filtersets.VOFilterSet,
    (("id", "id"), ("name", "name"), ("science_domain", "field_of_science__name")),
    detail_page="vo-detail", api_detail="api-vo-detail", ordering=("name",),
)  # fmt: skip
PROJECTS = Resource(
    "projects", "Projects", Project, filtersets.ProjectFilterSet,
    (("id", "id"), ("name", "name"), ("science_domain", "field_of_science__name"), ("pi", "pi"), ("institution", "institution")),
    detail_page="project-detail", api_detail="api-project-detail", ordering=("name",),
)  # fmt: skip
SCIENCE_DOMAINS = Resource(
    "science-domains", "Science domains", ScienceDomain, filtersets.ScienceDomainFilterSet,
    (("id", "id"), ("name", "name")),
    detail_page="science-domain-detail", api_detail="api-science-domain-detail", ordering=("name",),
)  # fmt: skip
PEOPLE = Resource(
    "people", "People", Person, filtersets.PersonFilterSet,
    (("id", "id"), ("name", "name")),
    access="people", detail_page="person-detail", api_detail="api-person-detail", ordering=("name",),
)  # fmt: skip
RECORDS = Resource(
    "records", "Usage records", UsageRecord, filtersets.UsageRecordFilterSet,
    (
        ("id", "id"), ("kind", "kind"), ("natural_key", "natural_key"), ("site", "site__name"),
        ("resource", "resource__name"), ("vo", "vo__name"), ("user", "person__name"), ("project", "project__name"),
        ("fqan", "fqan"), ("local_user", "local_user"), ("start", "start"), ("end", "end"),
        ("wall_seconds", "wall_seconds"), ("cores", "cores"), ("gpus", "gpus"), ("memory_mb", "memory_mb"),
        ("cpu_user_seconds", "cpu_user_seconds"), ("cpu_sys_seconds", "cpu_sys_seconds"), ("exit_code", "exit_code"),
        ("pilot_ref", "pilot_ref"), ("source_format", "source_format"), ("bundle", "bundle_id"), ("void", "void"),
    ),
    access="people", api_detail="api-record-detail", ordering=("-end", "-id"),
)  # fmt: skip
BUNDLES = Resource(
    "bundles", "Bundles", Bundle, filtersets.BundleFilterSet,
    (
        ("id", "id"), ("status", "status"), ("format", "format"), ("original_name", "original_name"),
        ("size_bytes", "size_bytes"), ("source_label", "source_label"), ("records_read", "records_read"),
        ("records_inserted", "records_inserted"), ("records_updated", "records_updated"), ("duplicates", "duplicates"),
        ("rejected", "rejected"), ("first_day", "first_day"), ("last_day", "last_day"),
        ("created_by", "created_by__username"), ("created_at", "created_at"), ("finished_at", "finished_at"),
    ),
    access="signed_in", detail_page="bundle-detail", api_detail="api-bundle-detail", ordering=("-created_at", "-id"),
)  # fmt: skip

RESOURCES = {r.key: r for r in (SITES, VOS, PROJECTS, SCIENCE_DOMAINS, PEOPLE, RECORDS, BUNDLES)}

