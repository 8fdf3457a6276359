"""The longest span of any usage record (end - start), kept by the database instead of read from an index.

Every "records overlapping these days" scan is a range on `start` from (first day - longest span), so the
rebuilds need that bound. It was read from an index on end - start, which every record of every ingest
paid for (one more B-tree entry per row: ~12 % of the server's time in a COPY of 200,000 records). Now a
statement-level trigger raises `gl_record_span.longest` when an INSERT, UPDATE or COPY writes a longer
record: one aggregate over the statement's rows. The bound never shrinks (a deleted or shortened record
leaves it as it was): it is an upper bound, which is all a range scan needs.

Concurrency: a statement raising the bound locks its one row until it commits; another that would raise
it waits, then compares again with the committed value. Statements that do not raise it take no lock.
PostgreSQL only; elsewhere (SQLite for the demo) `UsageRecord.objects.longest_span()` computes it.
"""
from django.db import migrations

CREATE = r"""
CREATE TABLE gl_record_span (
    one boolean PRIMARY KEY DEFAULT true CHECK (one),
    longest interval NOT NULL
);
INSERT INTO gl_record_span (longest) SELECT COALESCE(max("end" - start), interval '0') FROM accounting_usagerecord;

CREATE FUNCTION gl_usagerecord_grow_span() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE gl_record_span SET longest = grown.longest
    FROM (SELECT max("end" - start) AS longest FROM new_rows) AS grown
    WHERE grown.longest > gl_record_span.longest;
    RETURN NULL;
END $$;

CREATE TRIGGER gl_usagerecord_insert_span AFTER INSERT ON accounting_usagerecord
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION gl_usagerecord_grow_span();
CREATE TRIGGER gl_usagerecord_update_span AFTER UPDATE ON accounting_usagerecord
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION gl_usagerecord_grow_span();
"""

DROP = r"""
DROP TRIGGER gl_usagerecord_insert_span ON accounting_usagerecord;
DROP TRIGGER gl_usagerecord_update_span ON accounting_usagerecord;
DROP FUNCTION gl_usagerecord_grow_span();
DROP TABLE gl_record_span;
"""


def create_bound(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(CREATE, params=None)


def drop_bound(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP, params=None)


class Migration(migrations.Migration):

    dependencies = [
        ("accounting", "0010_usagerecord_kind_without_index"),
    ]

    operations = [
        migrations.RunPython(create_bound, drop_bound),  # first: its starting value is read from the index
        migrations.RemoveIndex(model_name="usagerecord", name="record_span"),
    ]
