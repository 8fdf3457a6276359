"""The month rollup answers exactly what the daily summaries answer, and is never read when stale."""
from datetime import date

import pytest
from django.urls import reverse

from accounting.models import DailyUsage, SummaryRun
from accounting.services.reports import build_query
from portal import rollups
from portal.models import MonthlyUsage

pytestmark = pytest.mark.django_db

QUERIES = [
    {"start": "2024-01-01", "end": "2024-04-01", "period": "month", "group_by": "site,vo"},
    {"start": "2024-01-01", "end": "2024-04-01", "period": "total", "group_by": "science_domain"},
    {"start": "2024-01-01", "end": "2025-01-01", "period": "quarter", "group_by": "project,kind"},
    {"start": "2024-02-01", "end": "2024-03-01", "period": "year", "group_by": "resource", "vo": "ligo"},
    {"start": "2024-01-01", "end": "2024-04-01", "period": "total", "designation": "all", "group_by": "vo"},
]


def done_run(first: date, last: date) -> SummaryRun:
    return SummaryRun.objects.create(start=first, end=last, status=SummaryRun.Status.DONE)


def query(params: dict):
    return build_query({k: [v] for k, v in params.items()})


def test_rollup_gives_the_daily_numbers_and_is_read_only_when_it_can(client, grid, admin):
    client.force_login(admin)
    done_run(date(2024, 1, 10), date(2024, 3, 2))
    before = [client.get(reverse("api-usage"), q).json()["results"] for q in QUERIES]
    assert rollups.base_for(query(QUERIES[0])).model is DailyUsage  # never refreshed yet
    assert rollups.refresh() == 3
    assert sorted(MonthlyUsage.objects.values_list("day", flat=True).distinct()) == [date(2024, m, 1) for m in (1, 2, 3)]
    for q in QUERIES:
        assert rollups.base_for(query(q)).model is MonthlyUsage, q
    # The coarsest grain that keeps the query's dimensions answers it.
    assert [rollups.grain_for(query(q)) for q in QUERIES] == [4, 7, rollups.FULL, rollups.FULL, 6]
    assert MonthlyUsage.objects.filter(grain=7).count() == 7  # 2 domains x 3 months, + January's unmatched payload
    after = [client.get(reverse("api-usage"), q).json()["results"] for q in QUERIES]
    assert after == before
    # Reported usage by coarse grains reads their reported-only grain (the API answers above came from it).
    reported = rollups.reported_base(query(QUERIES[0]), rollups.base_for(query(QUERIES[0])))
    assert set(reported.values_list("grain", "designation").distinct()) == {(rollups.REPORTED + 4, "reported")}
    assert rollups.reported_base(query(QUERIES[4]), rollups.base_for(query(QUERIES[4]))) is None  # designation all
    assert rollups.reported_base(query(QUERIES[2]), rollups.base_for(query(QUERIES[2]))) is None  # full grain
    narrowed = rollups.base_for(query(QUERIES[0])).filter(vo_id__in=[grid.vos["cms"].pk])
    assert rollups.reported_base(query(QUERIES[0]), narrowed) is None  # never widens a scoped base
    # Not month-aligned, by day or by person: the daily table answers.
    for q in (
        {"start": "2024-01-05", "end": "2024-04-01", "period": "month"},
        {"start": "2024-01-01", "end": "2024-04-01", "period": "week"},
        {"start": "2024-01-01", "end": "2024-04-01", "period": "month", "group_by": "user"},
    ):
        assert rollups.base_for(query(q)).model is DailyUsage, q


def test_a_newer_rebuild_makes_the_rollup_stale_until_refreshed(client, grid, admin):
    done_run(date(2024, 1, 10), date(2024, 3, 2))
    rollups.refresh()
    q = QUERIES[0]
    assert rollups.rollup_is_fresh()
    # A rebuild of one February day changes its rows and leaves a run: the rollup is not read any more.
    DailyUsage.objects.filter(day=date(2024, 2, 5)).update(wall_hours=106.0)
    run = SummaryRun.objects.create(start=date(2024, 2, 5), end=date(2024, 2, 5))
    assert not rollups.rollup_is_fresh()  # running
    assert rollups.refresh() == 0  # nothing finished yet; the watermark waits for the running rebuild
    assert rollups.base_for(query(q)).model is DailyUsage
    SummaryRun.objects.filter(pk=run.pk).update(status=SummaryRun.Status.DONE)
    assert not rollups.rollup_is_fresh()
    client.force_login(admin)
    daily = client.get(reverse("api-usage"), q).json()["results"]
    assert rollups.refresh() == 1  # February only
    assert rollups.rollup_is_fresh() and rollups.base_for(query(q)).model is MonthlyUsage
    assert client.get(reverse("api-usage"), q).json()["results"] == daily
    feb = [r for r in daily if r["period"] == "2024-02-01" and r["site"] == "SiteA"]
    assert feb == [dict(feb[0], wall_hours=106.0)]
    # A failed rebuild changed nothing: it does not make the rollup stale.
    SummaryRun.objects.create(start=date(2024, 1, 1), end=date(2024, 1, 1), status=SummaryRun.Status.FAILED)
    assert rollups.rollup_is_fresh()


def test_refresh_command_and_real_rebuild(bundle_store, tmp_path, client, council):
    """Through the real ingest and rebuild: the rollup refreshed by the command equals the daily table."""
    from django.core.management import call_command

    from accounting.services.summaries import rebuild
    from ingest.services.bundles import create_bundle_from_path, ingest_bundle

    ads = "".join(
        f'*** ClusterId = {n}\nGlobalJobId = "ap1#{n}.0#1"\nx509UserProxyVOName = "{vo}"\nRemoteWallClockTime = 3600\n'
        f"RequestCpus = 2\nRemoteUserCpu = 1800\nCompletionDate = {end}\n"
        for n, vo, end in ((1, "cms", 1710079200), (2, "atlas", 1712052000), (3, "cms", 1714644000))
    )
    path = tmp_path / "h"
    path.write_text(ads)
    ingest_bundle(create_bundle_from_path(path, site="CE1").pk)
    rebuild()
    import io

    out = io.StringIO()
    call_command("refresh_rollups", stdout=out)
    assert "fresh=True" in out.getvalue()
    q = {"start": "2024-03-01", "end": "2024-06-01", "period": "month", "group_by": "vo"}
    assert rollups.base_for(query(q)).model is MonthlyUsage
    client.force_login(council)
    rows = client.get(reverse("api-usage"), q).json()["results"]
    assert [(r["period"], r["vo"], r["wall_hours"], r["cpu_hours"]) for r in rows] == [
        ("2024-03-01", "cms", 2.0, 0.5), ("2024-04-01", "atlas", 2.0, 0.5), ("2024-05-01", "cms", 2.0, 0.5),
    ]  # fmt: skip


def test_the_orm_rewrite_of_the_demo_writes_the_rows_the_sql_one_writes(grid, monkeypatch):
    """SQLite (the demo) rewrites the rollup through the ORM, PostgreSQL in SQL: the same rows, every grain."""
    from types import SimpleNamespace

    def rows() -> list[tuple]:
        fields = [f.attname for f in MonthlyUsage._meta.concrete_fields if f.attname != "id"]
        return sorted(MonthlyUsage.objects.values_list(*fields), key=lambda row: repr([v for v in row if not isinstance(v, float)]))

    rollups.refresh(full=True)
    by_sql = rows()
    assert len({row[0] for row in by_sql}) > 3  # several grains, reported ones included
    monkeypatch.setattr(rollups, "connection", SimpleNamespace(vendor="sqlite"))  # the ORM branch, on this database
    rollups.refresh(full=True)
    by_orm = rows()
    assert len(by_orm) == len(by_sql)
    for orm, sql in zip(by_orm, by_sql, strict=True):  # the same sums, maybe added in another order
        assert [v for v in orm if not isinstance(v, float)] == [v for v in sql if not isinstance(v, float)]
        assert [v for v in orm if isinstance(v, float)] == pytest.approx([v for v in sql if isinstance(v, float)], rel=1e-12)
