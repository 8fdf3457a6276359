"""A usage record's six references (bundle, site, resource, VO, person, project) are enforced by PostgreSQL
once per statement (migration 0009) with the guarantees of a foreign key: no record names a missing row, no
referenced row can be deleted or renumbered, and concurrent loads and deletes cannot slip past each other."""
import threading
from datetime import UTC, datetime

import psycopg
import pytest
from django.db import IntegrityError, connection, transaction
from django.db.models import ProtectedError

from accounting.models import VO, Person, Project, Resource, Site, UsageRecord
from ingest.models import Bundle
from ingest.parsers.base import ParsedRecord
from ingest.services.loader import RecordLoader
from tests.accounting.ledger_helpers import at, job

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL triggers"),
]
REFERENCES = {"bundle": Bundle, "site": Site, "resource": Resource, "vo": VO, "person": Person, "project": Project}
DAY = datetime(2026, 10, 1, tzinfo=UTC).date()
INSERT_RECORD = (  # one record of the site %s, in plain SQL (a second connection's load)
    "INSERT INTO accounting_usagerecord (kind, natural_key, record_hash, source_format, source_file, fqan, local_user, "
    "pilot_ref, start, \"end\", wall_seconds, cores, gpus, cpu_user_seconds, cpu_sys_seconds, void, created, updated, "
    "site_id) VALUES ('batch', 'k', 'h', 't', '', '', '', '', now(), now(), 0, 1, 0, 0, 0, false, now(), now(), %s)"
)


def referenced_row(field: str):
    model = REFERENCES[field]
    if model is Bundle:
        return Bundle.objects.create(original_name="b.txt", stored_path="b.txt", sha256="0" * 64)
    return model.objects.create(name=f"{field}-1")


def other_connection() -> psycopg.Connection:
    db = connection.settings_dict
    return psycopg.connect(host=db["HOST"], port=db["PORT"], user=db["USER"], dbname=db["NAME"])


def record_values(key: str, **refs) -> dict:
    start = at(DAY)
    return dict(kind="batch", natural_key=key, record_hash="h", source_format="test", start=start, end=at(DAY, 1),
                wall_seconds=3600, **refs)  # fmt: skip


@pytest.mark.parametrize("field", REFERENCES)
def test_a_record_naming_a_missing_row_is_refused(field):
    with pytest.raises(IntegrityError, match=f"{field}_id"), transaction.atomic():
        UsageRecord.objects.create(**record_values("j1", **{f"{field}_id": 987654}))
    record = UsageRecord.objects.create(**record_values("j2", **{field: referenced_row(field)}))
    with pytest.raises(IntegrityError, match=f"Key \\({field}_id\\)=\\(987654\\)"), transaction.atomic():
        UsageRecord.objects.filter(pk=record.pk).update(**{f"{field}_id": 987654})
    assert UsageRecord.objects.get(pk=record.pk).natural_key == "j2"


@pytest.mark.parametrize("field", REFERENCES)
def test_a_referenced_row_cannot_be_deleted_or_renumbered_behind_the_orm(field):
    row = referenced_row(field)
    unused = referenced_row(field) if field == "bundle" else REFERENCES[field].objects.create(name="unused")
    UsageRecord.objects.create(**record_values("j1", **{field: row}))
    table = REFERENCES[field]._meta.db_table
    with connection.cursor() as cursor:
        with pytest.raises(IntegrityError, match="still referenced"), transaction.atomic():
            cursor.execute(f"DELETE FROM {table} WHERE id = %s", [row.pk])
        with pytest.raises(IntegrityError, match="still referenced"), transaction.atomic():
            cursor.execute(f"UPDATE {table} SET id = id + 1000000 WHERE id = %s", [row.pk])
        cursor.execute(f"DELETE FROM {table} WHERE id = %s", [unused.pk])  # nothing names it: it goes
    assert REFERENCES[field].objects.filter(pk=row.pk).exists()
    assert not REFERENCES[field].objects.filter(pk=unused.pk).exists()


@pytest.mark.django_db(transaction=True)
def test_deletes_of_referenced_tables_need_read_committed():
    """A REPEATABLE READ snapshot could miss records loaded since: such deletes are refused, used or not;
    changes that keep the ids (a rename) are not."""
    unused = Site.objects.create(name="unused")
    with other_connection() as other:
        other.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
        other.execute("UPDATE accounting_site SET name = 'renamed' WHERE id = %s", [unused.pk])
        with pytest.raises(psycopg.errors.FeatureNotSupported, match="READ COMMITTED only"):
            other.execute("DELETE FROM accounting_site WHERE id = %s", [unused.pk])
        other.rollback()
        other.isolation_level = psycopg.IsolationLevel.READ_COMMITTED
        other.execute("DELETE FROM accounting_site WHERE id = %s", [unused.pk])
        other.commit()
    assert not Site.objects.exists()


def test_the_orm_rules_still_apply_protect_for_names_and_set_null_for_bundles():
    bundle = referenced_row("bundle")
    record = job("j1", at(DAY), 1)
    UsageRecord.objects.filter(pk=record.pk).update(bundle=bundle)
    with pytest.raises(ProtectedError):
        Site.objects.filter(name="SiteA").delete()
    bundle.delete()  # Django sets the records' bundle to NULL first: the database accepts the delete
    assert UsageRecord.objects.get(pk=record.pk).bundle_id is None
    UsageRecord.objects.all().delete()
    Site.objects.filter(name="SiteA").delete()
    assert not Site.objects.filter(name="SiteA").exists()


def test_a_bulk_load_with_one_bad_reference_writes_nothing():
    """The loader's COPY is one statement: a missing row anywhere in the batch refuses the whole batch."""
    site = Site.objects.create(name="S")
    loader = RecordLoader(None, "test")
    records = [ParsedRecord(kind="batch", natural_key=f"k{i}", start=at(DAY), end=at(DAY, 1), wall_seconds=3600, site="S")
               for i in range(50)]  # fmt: skip
    loader.dimensions.resolve(records)
    loader.dimensions.ids["site"]["S"] = site.pk + 1000  # as if the site had been deleted meanwhile
    for record in records:
        loader.add(record, "f")
    with pytest.raises((IntegrityError, psycopg.errors.ForeignKeyViolation), match="site_id"):
        loader.flush()  # (the loader's COPY runs on psycopg's own cursor: its error is psycopg's)
    assert not UsageRecord.objects.exists()


def waits_for(holder: psycopg.Connection, waiting: psycopg.Connection, sql: str, params: list) -> str:
    """Run `sql` on `waiting` in a thread, check that it waits while `holder`'s transaction is open, commit
    `holder`; return "committed" or the text of the ForeignKeyViolation `sql` ended with."""
    outcome = {}

    def run():
        try:
            waiting.execute(sql, params)
            waiting.commit()
            outcome["result"] = "committed"
        except psycopg.errors.ForeignKeyViolation as exc:
            waiting.rollback()
            outcome["result"] = str(exc)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(1.0)
    assert thread.is_alive(), f"{sql[:30]}... must wait for the other transaction"
    holder.commit()
    thread.join(10)
    return outcome.get("result", "")


@pytest.mark.django_db(transaction=True)
def test_a_delete_waits_for_a_load_referencing_the_row_then_fails():
    site = Site.objects.create(name="S")
    with other_connection() as loading, other_connection() as deleting:
        loading.execute(INSERT_RECORD, [site.pk])  # not committed: the site is locked FOR KEY SHARE
        outcome = waits_for(loading, deleting, "DELETE FROM accounting_site WHERE id = %s", [site.pk])
    assert "still referenced" in outcome, outcome
    assert Site.objects.filter(pk=site.pk).exists() and UsageRecord.objects.filter(site=site).count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_load_waits_for_a_pending_delete_of_its_row_then_fails():
    site = Site.objects.create(name="S")
    with other_connection() as deleting, other_connection() as loading:
        deleting.execute("DELETE FROM accounting_site WHERE id = %s", [site.pk])  # not committed yet
        outcome = waits_for(deleting, loading, INSERT_RECORD, [site.pk])
    assert "is not present" in outcome, outcome
    assert not UsageRecord.objects.exists()
