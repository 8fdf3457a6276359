"""Reconciliation queues from summaries and records, and the APEL-style sync of job counts per site and month."""
from datetime import UTC, date, datetime

import pytest

from accounting.models import VO, ApelSummary, BenchmarkFactor, Project, Resource, Site
from accounting.services import reconciliation, summaries
from tests.accounting.ledger_helpers import at, job, topology

pytestmark = pytest.mark.django_db


def grid():
    """Hand-made: one of each problem, next to healthy records."""
    topology()
    BenchmarkFactor.objects.create(resource=Resource.objects.get(name="ce-a"), benchmark="HS06", value=10, valid_from=date(2024, 1, 1))
    job("ok", at(date(2024, 3, 1), 1), 2)  # SiteA, cms, benchmarked: healthy
    job("pilot", at(date(2024, 3, 2), 1), 1, kind="pilot", cores=2)  # 2 core-hours of pilot time
    job("pay-excess", at(date(2024, 3, 2), 1), 3, kind="payload", pilot_ref="pilot")  # 3 > 2: 1 core-hour excess
    job("pay-orphan", at(date(2024, 3, 3), 1), 4, kind="payload", pilot_ref="glidein_gone@wn1")  # 4 unmatched
    job("no-vo", at(date(2024, 3, 4), 1), 1, vo="")
    job("raw-vo", at(date(2024, 3, 4), 2), 1, vo="CMS-raw")  # a VO row created on sight: no science domain
    Project.objects.create(name="mapped", field_of_science=VO.objects.get(name="cms").field_of_science)
    job("raw-project", at(date(2024, 3, 4), 3), 1, project="unmapped")
    job("mapped-project", at(date(2024, 3, 4), 4), 1, project="mapped")
    job("unmapped-ce", at(date(2024, 3, 5), 1), 5, site="", resource="ce-unmapped")  # neither site nor mapping
    job("site-only", at(date(2024, 3, 5), 2), 1, site="SiteB", resource="")
    summaries.rebuild(date(2024, 3, 1), date(2024, 3, 6))


def test_queue_counts_and_contents_hand_worked():
    grid()
    counts = reconciliation.counts()
    assert {name: (c["count"], round(c["hours"], 6)) for name, c in counts.items()} == {
        "unmatched": (1, 4.0),
        "excess": (1, 1.0),
        "unknown_vo": (2, 2.0),  # no VO; CMS-raw
        "unknown_project": (1, 1.0),
        "unknown_site": (1, 5.0),
        "unknown_resource": (2, 6.0),  # ce-unmapped; the record with no resource
        "no_benchmark": (2, 6.0),  # ce-unmapped, and the record without a resource (ce-a has its factor)
    }
    assert reconciliation.unmatched(today=date(2024, 3, 10)) == [
        {"day": date(2024, 3, 3), "site__name": "SiteA", "vo__name": "cms", "jobs": 1, "hours": 4.0, "age_days": 7}
    ]
    assert list(reconciliation.orphan_payloads().values_list("natural_key", flat=True)) == ["pay-orphan"]
    ((row),) = reconciliation.excess()  # per pilot-day: W = 2, S = 3
    assert {k: row[k] for k in ("pilot", "day", "site__name", "vo__name", "pilot_hours", "payload_hours", "excess_hours")} == {
        "pilot": "pilot", "day": date(2024, 3, 2), "site__name": "SiteA", "vo__name": "cms",
        "pilot_hours": 2.0, "payload_hours": 3.0, "excess_hours": 1.0,
    }  # fmt: skip
    assert [(r["name"], r["jobs"]) for r in reconciliation.unknown("unknown_vo")] == [("CMS-raw", 1), (None, 1)]
    assert [(r["name"], r["hours"]) for r in reconciliation.unknown("unknown_site")] == [("ce-unmapped", 5.0)]
    missing = {(r["resource__name"], r["site__name"]): r["hours"] for r in reconciliation.no_benchmark()}
    assert missing == {("ce-unmapped", None): 5.0, (None, "SiteB"): 1.0}


def test_sync_compares_apel_summaries_with_stored_jobs_per_site_and_month():
    topology()
    site_a, site_b = Site.objects.get(name="SiteA"), Site.objects.get(name="SiteB")
    for n in range(3):
        job(f"a{n}", at(date(2024, 3, 2 + n), 1), 1)  # SiteA, March: 3 jobs
    job("a-void", at(date(2024, 3, 9), 1), 1).__class__.objects.filter(natural_key="a-void").update(void=True)
    job("a-apr", at(date(2024, 4, 1), 1), 1)
    job("b1", at(date(2024, 3, 4), 1), 1, site="SiteB", resource="ce-b")
    job("payload", at(date(2024, 3, 4), 1), 1, kind="payload", site="SiteB", resource="ce-b")  # the VO's view: not counted
    job("mapped", at(date(2024, 3, 31), 23), 0.5, site="", resource="ce-b")  # SiteB through its resource
    summary = {"record_hash": "x", "number_of_jobs": 0}
    ApelSummary.objects.create(natural_key="A|3|x", site=site_a, year=2024, month=3, **summary | {"number_of_jobs": 2})
    ApelSummary.objects.create(natural_key="A|3|y", site=site_a, year=2024, month=3, **summary | {"number_of_jobs": 1})
    ApelSummary.objects.create(natural_key="A|4", site=site_a, year=2024, month=4, **summary | {"number_of_jobs": 3})
    ApelSummary.objects.create(natural_key="B|3", site=site_b, year=2024, month=3, **summary | {"number_of_jobs": 1})
    rows = reconciliation.sync(date(2024, 3, 1), date(2024, 4, 30))
    assert [r.as_dict() for r in rows] == [
        {"site": "SiteA", "month": "2024-03", "source_jobs": 3, "summaries": 2, "stored_jobs": 3, "void_jobs": 1, "difference": 0, "status": "match"},
        {"site": "SiteA", "month": "2024-04", "source_jobs": 3, "summaries": 1, "stored_jobs": 1, "void_jobs": 0, "difference": -2, "status": "missing"},
        {"site": "SiteB", "month": "2024-03", "source_jobs": 1, "summaries": 1, "stored_jobs": 2, "void_jobs": 0, "difference": 1, "status": "extra"},
    ]
    assert [r.status for r in reconciliation.sync(date(2024, 3, 1), date(2024, 4, 1), mismatches_only=True)] == ["missing", "extra"]
    assert [r.month for r in reconciliation.sync(date(2024, 3, 15), date(2024, 3, 15), sites=["SiteB"])] == [3]
    job("c1", datetime(2024, 5, 2, tzinfo=UTC), 1, site="SiteC", resource="")
    assert reconciliation.sync(date(2024, 5, 1), date(2024, 5, 1))[0].status == "no summary"
