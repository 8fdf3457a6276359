"""Corrections and merges re-attribute records, keep their history, are audited, and rebuild exactly the
days they touch: the summary rows of every other day stay byte-identical (same rows, same ids)."""
from datetime import date

import pytest
from django.contrib.auth.models import User
from django.db.models import Min

from accounting import tasks
from accounting.models import (
    VO,
    ApelSummary,
    AuditEntry,
    BenchmarkFactor,
    CapacitySnapshot,
    Correction,
    DailyUsage,
    RecordChange,
    Resource,
    Site,
    SummaryRun,
    TopologyMerge,
    UsageRecord,
)
from accounting.services import admin_actions, corrections, summaries
from accounting.services.corrections import CorrectionError
from tests.accounting.ledger_helpers import at, hours_by, job, rows_without_ids, table, topology

pytestmark = pytest.mark.django_db
MARCH = (date(2024, 3, 1), date(2024, 3, 7))


@pytest.fixture
def admin(db):
    return User.objects.create_user("root", is_staff=True)


def march_grid():
    """cms and a raw 'CMS-raw' spelling of it, atlas; seven days of which three have CMS-raw hours."""
    topology()
    job("r1", at(date(2024, 3, 2), 1), 5, vo="CMS-raw")
    job("r2", at(date(2024, 3, 2), 10), 3, vo="cms")
    job("r3", at(date(2024, 3, 4), 2), 4, vo="cms")
    job("r4", at(date(2024, 3, 5), 22), 6, vo="CMS-raw", site="SiteB", resource="ce-b")  # 2 h on the 5th, 4 h on the 6th
    job("r5", at(date(2024, 3, 3), 0), 2, vo="atlas")
    job("r6", at(date(2024, 3, 6), 8), 1, vo="atlas", site="SiteB", resource="ce-b")
    job("r7", at(date(2024, 3, 7), 8), 7, vo="cms")
    summaries.rebuild(*MARCH)


def run(entry: AuditEntry) -> AuditEntry:
    return admin_actions.run(entry.pk)


def test_a_correction_moves_hours_between_vos_and_leaves_untouched_days_byte_identical(admin):
    march_grid()
    assert hours_by("vo__name") == {"CMS-raw": 11.0, "cms": 14.0, "atlas": 3.0}
    untouched = [date(2024, 3, 3), date(2024, 3, 4), date(2024, 3, 7)]
    before = table(day__in=untouched)
    assert len(before) == 3
    runs_before = SummaryRun.objects.count()

    correction = Correction.objects.create(field="vo", match="exact", pattern="CMS-raw", target="cms", created_by=admin)
    entry = run(admin_actions.queue_correction(admin, correction))

    assert hours_by("vo__name") == {"cms": 25.0, "atlas": 3.0}
    assert hours_by("day", vo__name="cms") == {date(2024, 3, 2): 8.0, date(2024, 3, 4): 4.0, date(2024, 3, 5): 2.0,
                                               date(2024, 3, 6): 4.0, date(2024, 3, 7): 7.0}  # fmt: skip
    assert table(day__in=untouched) == before  # the very same rows: ids, every column
    new_runs = SummaryRun.objects.order_by("pk")[runs_before:]
    assert [(r.start, r.end) for r in new_runs] == [(date(2024, 3, 2), date(2024, 3, 2)), (date(2024, 3, 5), date(2024, 3, 6))]
    assert (entry.user, entry.action, entry.rows, entry.days, entry.status, entry.progress) == (
        admin, "correction_apply", 2, 3, "done", 100
    )
    raw, cms = VO.objects.get(name="CMS-raw"), VO.objects.get(name="cms")
    changes = RecordChange.objects.order_by("record__natural_key")
    assert [(c.record.natural_key, c.field, c.old_value, c.new_value, c.correction, c.audit_id) for c in changes] == [
        ("r1", "vo", str(raw.pk), str(cms.pk), correction, entry.pk),
        ("r4", "vo", str(raw.pk), str(cms.pk), correction, entry.pk),
    ]
    correction.refresh_from_db()
    assert correction.rows_changed == 2 and correction.applied_at is not None

    # Rebuilding exactly those days is the same as rebuilding everything.
    partial = rows_without_ids()
    summaries.rebuild(*MARCH)
    assert rows_without_ids() == partial


def test_reverting_restores_the_records_and_the_exact_summaries(admin):
    march_grid()
    original = rows_without_ids()
    correction = Correction.objects.create(field="vo", match="exact", pattern="CMS-raw", target="cms")
    run(admin_actions.queue_correction(admin, correction))
    assert rows_without_ids() != original
    entry = run(admin_actions.queue_correction(admin, correction, revert=True))
    assert rows_without_ids() == original
    assert (entry.action, entry.rows, entry.days) == ("correction_revert", 2, 3)
    assert set(UsageRecord.objects.filter(vo__name="CMS-raw").values_list("natural_key", flat=True)) == {"r1", "r4"}
    correction.refresh_from_db()
    assert correction.active is False
    assert RecordChange.objects.count() == 4  # both moves kept


def test_regular_expressions_match_whole_names_and_bad_rules_are_refused():
    march_grid()
    VO.objects.create(name="xcms")
    job("r8", at(date(2024, 3, 3), 5), 1, vo="xcms")
    correction = Correction.objects.create(field="vo", match="regex", pattern="CMS-.*|cms_old", target="cms")
    assert sorted(corrections.matching_records(correction).values_list("natural_key", flat=True)) == ["r1", "r4"]
    applied = corrections.apply(correction.pk)
    assert (applied.rows, sorted(applied.days)) == (2, [date(2024, 3, 2), date(2024, 3, 5), date(2024, 3, 6)])
    with pytest.raises(CorrectionError, match="regular expression"):
        corrections.validate("vo", "regex", "CMS-(", "cms")
    with pytest.raises(CorrectionError, match="no vo named 'nope'"):
        corrections.validate("vo", "exact", "CMS-raw", "nope")
    with pytest.raises(CorrectionError, match="field"):
        corrections.validate("person", "exact", "a", "b")


def test_an_active_correction_catches_records_arriving_later_before_their_days_are_summed(django_capture_on_commit_callbacks):
    march_grid()
    correction = Correction.objects.create(field="vo", match="exact", pattern="CMS-raw", target="cms")
    corrections.apply(correction.pk)
    job("late", at(date(2024, 3, 3), 6), 2, vo="CMS-raw")  # a re-send under the raw name
    with django_capture_on_commit_callbacks(execute=True):
        tasks.rebuild_days.delay("2024-03-03", "2024-03-03")
    assert UsageRecord.objects.get(natural_key="late").vo.name == "cms"
    assert hours_by("vo__name", day=date(2024, 3, 3)) == {"cms": 2.0, "atlas": 2.0}
    entry = AuditEntry.objects.get(target__endswith="(new records)")
    assert (entry.user, entry.rows, entry.action) == (None, 1, "correction_apply")


def test_the_beat_task_applies_active_corrections_to_stragglers_anywhere():
    march_grid()
    Correction.objects.create(field="vo", match="exact", pattern="CMS-raw", target="cms")
    assert tasks.apply_corrections.delay().get() == 2
    assert hours_by("vo__name") == {"cms": 25.0, "atlas": 3.0}
    assert tasks.apply_corrections.delay().get() == 0


def test_merging_a_renamed_site_keeps_history_and_routes_late_records(admin):
    topology()
    old = Site.objects.create(name="Old_Site")
    Resource.objects.create(name="ce-old", site=old)
    job("o1", at(date(2024, 3, 2), 1), 3, site="Old_Site", resource="ce-old")
    job("o2", at(date(2024, 3, 3), 1), 2, site="Old_Site", resource="")
    job("a1", at(date(2024, 3, 4), 1), 5)
    CapacitySnapshot.objects.create(natural_key="s1", timestamp=at(date(2024, 3, 2)), site=old, idle_cores=4)
    ApelSummary.objects.create(natural_key="Old_Site|2024|3", record_hash="x", site=old, year=2024, month=3, number_of_jobs=2)
    summaries.rebuild(date(2024, 3, 1), date(2024, 3, 5))
    assert hours_by("site__name") == {"Old_Site": 5.0, "SiteA": 5.0}
    day4 = table(day=date(2024, 3, 4))
    new = Site.objects.get(name="SiteA")

    entry = run(admin_actions.queue_merge(admin, "site", old, new))

    assert hours_by("site__name") == {"SiteA": 10.0}
    assert table(day=date(2024, 3, 4)) == day4
    assert Site.objects.filter(name="Old_Site").exists()  # kept, as history
    assert not UsageRecord.objects.filter(site=old).exists()
    assert Resource.objects.get(name="ce-old").site == new
    assert CapacitySnapshot.objects.get().site == new and ApelSummary.objects.get().site == new
    merge = TopologyMerge.objects.get()
    assert (merge.kind, merge.old_name, merge.new_name, merge.records_moved, merge.merged_by, merge.audit_id) == (
        "site", "Old_Site", "SiteA", 2, admin, entry.pk
    )
    assert merge.details == {"resources": 1, "capacity_snapshots": 1, "apel_summaries": 1}
    assert (entry.action, entry.rows, entry.days) == ("merge_site", 2, 2)
    job("o3", at(date(2024, 3, 5), 1), 1, site="Old_Site", resource="")  # still sent under the old name
    tasks.rebuild_days.delay("2024-03-05", "2024-03-05")
    assert hours_by("site__name") == {"SiteA": 11.0}


def test_merging_a_resource_moves_its_benchmark_and_site_and_renormalises_the_new_ones_records(admin):
    topology()
    old = Resource.objects.create(name="ce-old", site=Site.objects.get(name="SiteB"))
    new = Resource.objects.create(name="ce-new")
    BenchmarkFactor.objects.create(resource=old, benchmark="HS06", value=10.0, valid_from=date(2024, 1, 1))
    job("x1", at(date(2024, 3, 2), 1), 2, resource="ce-old", site="")
    job("x2", at(date(2024, 3, 3), 1), 3, resource="ce-new", site="")
    summaries.rebuild(date(2024, 3, 1), date(2024, 3, 4))
    assert DailyUsage.objects.get(day=date(2024, 3, 3)).normalized_hours == 0.0  # no factor yet

    entry = run(admin_actions.queue_merge(admin, "resource", old, new))

    assert list(DailyUsage.objects.order_by("day").values_list("day", "resource__name", "site__name", "normalized_hours")) == [
        (date(2024, 3, 2), "ce-new", "SiteB", 20.0),
        (date(2024, 3, 3), "ce-new", "SiteB", 30.0),
    ]
    assert (entry.rows, entry.days) == (1, 2)
    assert BenchmarkFactor.objects.get().resource == new
    assert TopologyMerge.objects.get().details == {"capacity_snapshots": 0, "benchmark_factors": 1, "charge_factors": 0, "site_taken": True}


def test_a_failed_action_is_recorded_with_its_error(admin):
    march_grid()
    correction = Correction.objects.create(field="vo", match="exact", pattern="CMS-raw", target="cms")
    entry = admin_actions.queue_correction(admin, correction)
    VO.objects.filter(name="cms").update(name="cms-renamed")
    with pytest.raises(CorrectionError):
        admin_actions.run(entry.pk)
    entry.refresh_from_db()
    assert entry.status == "failed" and "no vo named 'cms'" in entry.error
    assert DailyUsage.objects.aggregate(first=Min("day"))["first"] == date(2024, 3, 2)
