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
    for column in ("natural_key", "kind", "pilot_ref", "start", '"end"', "site_id", "vo_id"):
        assert any(f"btree ({column})" in sql for sql in indexes.values()), column
    assert any("UNIQUE" in sql and "(natural_key)" in sql for sql in indexes.values())
