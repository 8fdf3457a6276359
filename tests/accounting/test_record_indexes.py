"""The usage-record table carries the indexes its queries use, and none that are only written (issue 3)."""
from datetime import datetime, timedelta, timezone

import pytest
from django.db import connection

from accounting.models import UsageRecord
from ingest.models import Bundle
from ingest.parsers.base import ParsedRecord
from ingest.services.loader import RecordLoader

pytestmark = [pytest.mark.django_db, pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL indexes")]


def record_indexes() -> dict[str, str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'accounting_usagerecord'")
        return dict(cursor.fetchall())


def test_no_pattern_ops_copies_but_the_plain_indexes_stay():
    indexes = record_indexes()
    assert not [name for name, sql in indexes.items() if "pattern_ops" in sql]
    # the corrections look records up by each dimension (every 10 minutes); rebuilds by time and pilot link
    for column in ("natural_key", "pilot_ref", "start", '"end"', "site_id", "resource_id", "vo_id", "person_id", "project_id"):
        assert any(f"btree ({column})" in sql for sql in indexes.values()), column
    # three values, never queried alone: no index to write per record (migration 0010)
    assert not any("btree (kind)" in sql for sql in indexes.values())
    assert any("UNIQUE" in sql and "(natural_key)" in sql for sql in indexes.values())


def test_identifiers_compare_bytewise_and_a_prefix_search_uses_the_plain_index():
    """Migration 0013: natural_key and pilot_ref in COLLATE "C" (IdentifierField), so a LIKE prefix is an index range."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT attname, collname FROM pg_attribute JOIN pg_collation c ON c.oid = attcollation "
                       "WHERE attrelid = 'accounting_usagerecord'::regclass AND attname IN ('natural_key', 'pilot_ref')")  # fmt: skip
        assert dict(cursor.fetchall()) == {"natural_key": "C", "pilot_ref": "C"}
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("EXPLAIN SELECT id FROM accounting_usagerecord WHERE pilot_ref LIKE 'glidein%%'")
        assert "Index Cond: (((pilot_ref)::text >= 'glidein'::text)" in "\n".join(line for (line,) in cursor.fetchall())


def test_a_bundles_records_are_found_through_a_brin_index_every_one_of_them():
    """Migration 0014: bundle_id has a BRIN index, no B-tree; a lookup with an int parameter (as Django sends it)
    uses it, and rows re-sent by a later bundle are found under their new bundle, none under the old."""
    indexes = record_indexes()
    assert any("USING brin (bundle_id)" in sql for sql in indexes.values()), indexes
    assert not any("btree (bundle_id)" in sql for sql in indexes.values())
    start = datetime(2024, 3, 10, tzinfo=timezone.utc)
    for pk in (1, 2):
        Bundle.objects.create(pk=pk, original_name="b", stored_path="b", sha256=str(pk) * 64)
    for pk, numbers in ((1, range(3000)), (2, range(2500, 3500))):  # bundle 2 re-sends 500 of bundle 1's jobs, changed
        loader = RecordLoader(pk, "htcondor-history")
        for n in numbers:
            loader.add(ParsedRecord("batch", f"ce#{n}.0#1", start, start + timedelta(hours=pk), 3600.0 * pk), "f")
        loader.flush()
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE accounting_usagerecord")
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("EXPLAIN SELECT count(*) FROM accounting_usagerecord WHERE bundle_id = %s", [2])
        assert "Bitmap Index Scan on accounting_usagerecord_bundle_brin" in "\n".join(line for (line,) in cursor.fetchall())
        found = {}
        for pk in (1, 2):
            cursor.execute("SELECT count(*), sum(wall_seconds) FROM accounting_usagerecord WHERE bundle_id = %s", [pk])
            found[pk] = cursor.fetchone()
    assert found == {1: (2500, 2500 * 3600.0), 2: (1000, 1000 * 7200.0)}
    assert UsageRecord.objects.count() == 3500
