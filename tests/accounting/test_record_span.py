"""The longest record span (end - start) bounds every "overlaps these days" scan; PostgreSQL keeps it in
gl_record_span with a statement-level trigger (migration 0011): at least every record's span, never less."""
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection

from accounting.models import UsageRecord
from ingest.models import Bundle
from ingest.parsers.base import ParsedRecord
from ingest.services.loader import RecordLoader
from tests.accounting.test_record_references import other_connection

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL trigger"),
]
T0 = datetime(2026, 10, 1, tzinfo=UTC)
INSERT = (  # one record of `hours`, in plain SQL (another connection's load)
    "INSERT INTO accounting_usagerecord (kind, natural_key, record_hash, source_format, source_file, fqan, local_user, "
    "pilot_ref, start, \"end\", wall_seconds, cores, gpus, cpu_user_seconds, cpu_sys_seconds, void, created, updated) "
    "VALUES ('batch', %s, 'h', 't', '', '', '', '', %s, %s, 0, 1, 0, 0, 0, false, now(), now())"
)


def record(key: str, hours: float) -> UsageRecord:
    return UsageRecord.objects.create(kind="batch", natural_key=key, record_hash="h", source_format="t", start=T0,
                                      end=T0 + timedelta(hours=hours), wall_seconds=hours * 3600)  # fmt: skip


def actual_longest() -> timedelta:
    with connection.cursor() as cursor:
        cursor.execute('SELECT COALESCE(max("end" - start), interval \'0\') FROM accounting_usagerecord')
        return cursor.fetchone()[0]


def test_the_bound_follows_inserts_updates_and_copies_and_never_shrinks():
    assert UsageRecord.objects.longest_span() == actual_longest() == timedelta(0)
    short, longer = record("a", 2), record("b", 30)
    assert UsageRecord.objects.longest_span() == actual_longest() == timedelta(hours=30)
    UsageRecord.objects.filter(pk=short.pk).update(end=T0 + timedelta(hours=50))  # an update lengthens one
    assert UsageRecord.objects.longest_span() == timedelta(hours=50)
    bundle = Bundle.objects.create(original_name="b", stored_path="b", sha256="0" * 64)
    loader = RecordLoader(bundle.pk, "htcondor-history")  # the ingest's COPY
    for n, hours in enumerate((1, 70, 3)):
        loader.add(ParsedRecord(kind="batch", natural_key=f"c{n}", start=T0, end=T0 + timedelta(hours=hours),
                                wall_seconds=hours * 3600.0), "f")  # fmt: skip
    loader.flush()
    assert UsageRecord.objects.longest_span() == actual_longest() == timedelta(hours=70)
    UsageRecord.objects.filter(natural_key="c1").delete()
    UsageRecord.objects.filter(pk=longer.pk).update(end=T0 + timedelta(hours=1))
    assert actual_longest() == timedelta(hours=50)
    assert UsageRecord.objects.longest_span() == timedelta(hours=70)  # still an upper bound: scans stay complete


@pytest.mark.django_db(transaction=True)
def test_concurrent_loads_leave_the_longest_of_both():
    """A load that would raise the bound waits for one that raised it and is not committed, then compares
    again with the committed value; the result is the longer of the two, whichever commits first."""
    import threading

    with other_connection() as first, other_connection() as second:
        first.execute(INSERT, ["x", T0, T0 + timedelta(hours=40)])  # raised the bound to 40 h, not committed
        done = threading.Event()

        def load_second():
            second.execute(INSERT, ["y", T0, T0 + timedelta(hours=20)])  # 20 h > 0 h committed: must wait
            second.commit()
            done.set()

        thread = threading.Thread(target=load_second)
        thread.start()
        assert not done.wait(1.0), "the second load must wait for the first"
        first.commit()
        thread.join(10)
        assert done.is_set()
    assert UsageRecord.objects.longest_span() == actual_longest() == timedelta(hours=40)


def test_a_rebuild_counts_a_record_longer_than_any_before_it():
    """The summaries scan from (first day - bound): a 3-day record must reach a day two days after its start."""
    from accounting.models import DailyUsage
    from accounting.services.summaries import rebuild

    record("short", 1)
    record("long", 72)
    rebuild(T0.date() + timedelta(days=2), T0.date() + timedelta(days=2))
    assert DailyUsage.objects.filter(day=T0.date() + timedelta(days=2)).exists()
