"""The usage-record table carries the indexes its queries use, and none that are only written (issue 3)."""
import pytest
from django.db import connection

pytestmark = pytest.mark.django_db


def record_indexes() -> dict[str, str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'accounting_usagerecord'")
        return dict(cursor.fetchall())


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL indexes")
def test_no_pattern_ops_copies_but_the_plain_indexes_stay():
    indexes = record_indexes()
    assert not [name for name, sql in indexes.items() if "pattern_ops" in sql]
    # the corrections look records up by each dimension (every 10 minutes); rebuilds by time and pilot link
    for column in ("natural_key", "pilot_ref", "start", '"end"', "site_id", "resource_id", "vo_id", "person_id",
                   "project_id", "bundle_id"):  # fmt: skip
        assert any(f"btree ({column})" in sql for sql in indexes.values()), column
    # three values, never queried alone: no index to write per record (migration 0010)
    assert not any("btree (kind)" in sql for sql in indexes.values())
    assert any("UNIQUE" in sql and "(natural_key)" in sql for sql in indexes.values())
