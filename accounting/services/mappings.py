"""Loading the mapping tables from CSV files (CONTRACT.md columns); idempotent: a second load changes nothing."""
from __future__ import annotations

import csv
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from django.db import transaction

from accounting.choices import Benchmark
from accounting.models import VO, BenchmarkFactor, Frontend, Project, Resource, ScienceDomain, Site

COLUMNS = {
    "sites": ("resource", "site", "facility"),
    "vos": ("vo", "field_of_science"),
    "projects": ("project", "field_of_science", "pi", "institution"),
    "benchmarks": ("resource", "benchmark", "value", "valid_from"),
    "frontends": ("client", "vo"),
}


class MappingError(ValueError):
    """A mapping file that cannot be loaded; names the file and line. Nothing of the file is written."""


@dataclass
class MappingResult:
    created: int = 0
    updated: int = 0
    unchanged: int = 0


def _domain(name: str) -> ScienceDomain | None:
    return ScienceDomain.objects.get_or_create(name=name)[0] if name else None


def _save(model, lookup: dict, values: dict, result: MappingResult) -> None:
    obj, created = model.objects.get_or_create(**lookup, defaults=values)
    if created:
        result.created += 1
        return
    changed = [name for name, value in values.items() if getattr(obj, name) != value]
    if changed:
        for name in changed:
            setattr(obj, name, values[name])
        obj.save(update_fields=changed)
        result.updated += 1
    else:
        result.unchanged += 1


def _row_sites(row: dict, result: MappingResult) -> None:
    site, _ = Site.objects.get_or_create(name=row["site"])
    if row.get("facility") and site.facility != row["facility"]:
        site.facility = row["facility"]
        site.save(update_fields=["facility"])
    _save(Resource, {"name": row["resource"]}, {"site": site}, result)


def _row_vos(row: dict, result: MappingResult) -> None:
    _save(VO, {"name": row["vo"]}, {"field_of_science": _domain(row.get("field_of_science", ""))}, result)


def _row_projects(row: dict, result: MappingResult) -> None:
    values = {
        "field_of_science": _domain(row.get("field_of_science", "")),
        "pi": row.get("pi", ""),
        "institution": row.get("institution", ""),
    }
    _save(Project, {"name": row["project"]}, values, result)


def _row_benchmarks(row: dict, result: MappingResult) -> None:
    if row["benchmark"] not in Benchmark.values:
        raise ValueError(f"benchmark must be one of {', '.join(Benchmark.values)}, not {row['benchmark']!r}")
    value = float(row["value"])
    if not value > 0:
        raise ValueError(f"benchmark value must be positive, not {row['value']!r}")
    resource, _ = Resource.objects.get_or_create(name=row["resource"])
    lookup = {"resource": resource, "benchmark": row["benchmark"], "valid_from": date.fromisoformat(row["valid_from"])}
    _save(BenchmarkFactor, lookup, {"value": value}, result)


def _row_frontends(row: dict, result: MappingResult) -> None:
    vo, _ = VO.objects.get_or_create(name=row["vo"])
    _save(Frontend, {"client": row["client"]}, {"vo": vo}, result)


ROW_LOADERS = {
    "sites": _row_sites,
    "vos": _row_vos,
    "projects": _row_projects,
    "benchmarks": _row_benchmarks,
    "frontends": _row_frontends,
}


def import_mappings(kind: str, path: Path) -> MappingResult:
    """Load one mapping file; all or nothing (one transaction)."""
    if kind not in COLUMNS:
        raise MappingError(f"unknown mapping {kind!r}; use one of {', '.join(COLUMNS)}")
    required = COLUMNS[kind][:2] if kind != "benchmarks" else COLUMNS[kind]
    result = MappingResult()
    try:
        handle = path.open(newline="", encoding="utf-8-sig")
    except OSError as exc:
        raise MappingError(f"{path}: cannot open: {exc.strerror}") from None
    with handle, transaction.atomic():
        reader = csv.DictReader(handle)
        header = [name.strip() for name in reader.fieldnames or []]
        missing = [name for name in required if name not in header]
        if missing:
            raise MappingError(f"{path}:1: missing column(s) {', '.join(missing)}; expected {','.join(COLUMNS[kind])}")
        reader.fieldnames = header
        try:
            for row in reader:
                line = reader.line_num
                row = {k: (v or "").strip() for k, v in row.items() if k is not None}
                blank = [name for name in required if not row.get(name)]
                if blank:
                    raise MappingError(f"{path}:{line}: empty {', '.join(blank)}")
                try:
                    ROW_LOADERS[kind](row, result)
                except ValueError as exc:
                    raise MappingError(f"{path}:{line}: {exc}") from None
        except UnicodeDecodeError:
            raise MappingError(f"{path}:{reader.line_num + 1}: not UTF-8") from None
    return result
