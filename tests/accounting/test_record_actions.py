"""Admin actions on records: void/unvoid gives back exactly the previous summaries, re-linking a payload to
its pilot refines the pilot, a day range is rebuilt; every action audited, only the touched days rebuilt."""
from datetime import date

import pytest
from django.contrib.auth.models import User

from accounting.models import AuditEntry, DailyUsage, RecordChange, SummaryRun, UsageRecord
from accounting.services import admin_actions, affected_days, summaries
from accounting.services.record_actions import ActionError
from tests.accounting.ledger_helpers import BOB, at, job, rows_without_ids, table, topology

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin(db):
    return User.objects.create_user("root", is_staff=True)


def designations(**filters) -> dict:
    out: dict = {}
    for designation, hours in DailyUsage.objects.filter(**filters).values_list("designation", "wall_hours"):
        out[designation] = round(out.get(designation, 0.0) + hours, 9)
    return out


def test_void_then_unvoid_restores_the_exact_previous_summaries(admin):
    topology()
    pilot = job("pilot#1", at(date(2024, 3, 2), 20), 8, kind="pilot", cores=4)  # 16 core-hours on the 2nd and on the 3rd
    job("pay#1", at(date(2024, 3, 3), 0), 2, kind="payload", pilot_ref="pilot#1", person=BOB)
    job("batch#1", at(date(2024, 3, 5), 1), 3)
    summaries.rebuild(date(2024, 3, 1), date(2024, 3, 6))
    original = rows_without_ids()
    day5 = table(day=date(2024, 3, 5))
    assert designations(day=date(2024, 3, 3)) == {"pilot_residual": 14.0, "payload": 2.0}

    entry = admin_actions.run(admin_actions.queue_void(admin, [pilot.pk], void=True).pk)
    assert UsageRecord.objects.get(pk=pilot.pk).void is True  # kept
    assert designations(day=date(2024, 3, 3)) == {"payload_unmatched": 2.0}  # its payload lost its pilot
    assert designations(day=date(2024, 3, 2)) == {}
    assert (entry.action, entry.rows, entry.days, entry.status) == ("void", 1, 2, "done")
    assert table(day=date(2024, 3, 5)) == day5  # untouched

    entry = admin_actions.run(admin_actions.queue_void(admin, [pilot.pk], void=False).pk)
    assert rows_without_ids() == original
    assert table(day=date(2024, 3, 5)) == day5
    assert (entry.action, entry.user) == ("unvoid", admin)
    assert list(RecordChange.objects.order_by("pk").values_list("field", "old_value", "new_value")) == [
        ("void", "False", "True"), ("void", "True", "False"),
    ]


def test_relinking_a_payload_to_its_pilot_refines_the_pilot(admin):
    topology()
    job("pilot#7", at(date(2024, 3, 2), 1), 2, kind="pilot", cores=4)  # 8 core-hours
    payload = job("pay#7", at(date(2024, 3, 2), 1), 3, kind="payload", pilot_ref="glidein_lost@node", person=BOB)
    job("other", at(date(2024, 3, 4), 1), 1)
    summaries.rebuild(date(2024, 3, 1), date(2024, 3, 5))
    assert designations(day=date(2024, 3, 2)) == {"pilot_residual": 8.0, "payload_unmatched": 3.0}
    day4 = table(day=date(2024, 3, 4))
    runs = SummaryRun.objects.count()

    pilot = UsageRecord.objects.get(natural_key="pilot#7")
    entry = admin_actions.run(admin_actions.queue_relink(admin, payload, pilot).pk)

    assert designations(day=date(2024, 3, 2)) == {"pilot_residual": 5.0, "payload": 3.0}
    assert table(day=date(2024, 3, 4)) == day4
    assert [(r.start, r.end) for r in SummaryRun.objects.order_by("pk")[runs:]] == [(date(2024, 3, 2), date(2024, 3, 2))]
    assert UsageRecord.objects.get(pk=payload.pk).pilot_ref == "pilot#7"
    change = RecordChange.objects.get()
    assert (change.field, change.old_value, change.new_value, change.audit_id) == ("pilot_ref", "glidein_lost@node", "pilot#7", entry.pk)
    assert (entry.action, entry.rows, entry.days, entry.details["old_ref"]) == ("relink", 1, 1, "glidein_lost@node")
    with pytest.raises(ActionError):
        admin_actions.queue_relink(admin, pilot, payload)


def test_rebuilding_a_day_range_is_audited():
    topology()
    job("j", at(date(2024, 3, 2), 1), 2)
    entry = admin_actions.run(admin_actions.queue_rebuild(None, date(2024, 3, 1), date(2024, 3, 3)).pk)
    assert (entry.action, entry.days, entry.details["summary_rows"], entry.status) == ("rebuild", 3, 1, "done")
    assert DailyUsage.objects.get().wall_hours == 2.0
    with pytest.raises(ActionError):
        admin_actions.queue_rebuild(None, date(2024, 3, 3), date(2024, 3, 1))
    assert AuditEntry.objects.count() == 1


def test_the_days_a_pilot_touches_include_its_payloads_days():
    topology()
    pilot = job("p", at(date(2024, 3, 2), 20), 5, kind="pilot", glidein="glidein_1@host")  # 2nd and 3rd
    job("by-key", at(date(2024, 3, 5), 1), 1, kind="payload", pilot_ref="p")
    job("by-glidein", at(date(2024, 3, 8), 23), 2, kind="payload", pilot_ref="glidein_1@host")  # 8th and 9th
    job("unrelated", at(date(2024, 3, 12), 1), 1, kind="payload", pilot_ref="q")
    days = affected_days.days_of(UsageRecord.objects.filter(pk=pilot.pk))
    assert sorted(days) == [date(2024, 3, d) for d in (2, 3, 5, 8, 9)]
    assert affected_days.to_ranges(days) == [
        (date(2024, 3, 2), date(2024, 3, 3)), (date(2024, 3, 5), date(2024, 3, 5)), (date(2024, 3, 8), date(2024, 3, 9)),
    ]


def test_voiding_nothing_new_changes_nothing(admin):
    topology()
    record = job("j", at(date(2024, 3, 2), 1), 2)
    UsageRecord.objects.filter(pk=record.pk).update(void=True)
    entry = admin_actions.run(admin_actions.queue_void(admin, [record.pk], void=True).pk)
    assert (entry.rows, entry.days) == (0, 0) and SummaryRun.objects.count() == 0
    with pytest.raises(ActionError):
        admin_actions.queue_void(admin, [10**9])
