"""Drop the `varchar_pattern_ops` copies of three usage-record indexes (issue 3, ingest speed).

Django adds a `*_like` index beside the index of every indexed CharField on PostgreSQL, for `LIKE 'x%'`
(`startswith`) lookups. No query of GridLedger filters `natural_key`, `kind` or `pilot_ref` of the usage
records with a prefix pattern (the rebuild's `pilot_ref LIKE 'glidein%'` reads its own temporary table; the
admin search is `icontains`, which no btree serves), so these three indexes were only written, on every
inserted record: about a tenth of the cost of loading a row. The plain indexes stay (joins on `pilot_ref`,
the unique `natural_key` of the upserts, `kind` filters). PostgreSQL only; the model state is unchanged, so
`makemigrations` sees nothing to do and reversing recreates the indexes under Django's names.
"""
from django.db import migrations

TABLE = "accounting_usagerecord"
COLUMNS = ("natural_key", "kind", "pilot_ref")


def like_index_names(schema_editor) -> dict[str, str]:
    return {column: schema_editor._create_index_name(TABLE, [column], suffix="_like") for column in COLUMNS}


def drop_like_indexes(apps, schema_editor) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    for name in like_index_names(schema_editor).values():
        schema_editor.execute(f'DROP INDEX IF EXISTS "{name}"')


def create_like_indexes(apps, schema_editor) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    for column, name in like_index_names(schema_editor).items():
        schema_editor.execute(f'CREATE INDEX IF NOT EXISTS "{name}" ON "{TABLE}" ("{column}" varchar_pattern_ops)')


class Migration(migrations.Migration):

    dependencies = [
        ("accounting", "0006_record_span_index"),
    ]

    operations = [
        migrations.RunPython(drop_like_indexes, create_like_indexes),
    ]
