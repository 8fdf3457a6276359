"""The references of usage records to their bundle, site, resource, VO, person and project, checked once per
statement instead of once per row.

PostgreSQL checks a foreign key with one query per inserted row (an internal trigger locking the
referenced row); with six of them that was about half of the server's time in a bulk load (issue 3: 30 of
51 us per ad). These statement-level triggers keep the same guarantees with one query per reference
and statement, whatever the number of rows:

- an INSERT or UPDATE of records (COPY and ON CONFLICT included) locks the rows it references FOR KEY
  SHARE, as a foreign key does, and fails with foreign_key_violation (SQLSTATE 23503) when one is missing;
- a DELETE of a referenced row, or a change of its id, fails the same way while a record references it.

Concurrency is that of a foreign key under READ COMMITTED (the isolation level GridLedger uses): a delete
waits for the loads holding the row's lock and then sees their records; a load waits for a pending delete
and then finds the row gone. A delete or renumbering in a REPEATABLE READ or SERIALIZABLE transaction is
refused (its snapshot could miss records committed since it began); a load there fails as with a foreign
key (a serialization failure, or the row missing). On other databases (SQLite for the demo) the references are not enforced by
the database; Django's on_delete applies everywhere.
"""

import django.db.models.deletion
from django.db import migrations, models


REFERENCES = {  # column of accounting_usagerecord -> referenced table
    "bundle_id": "ingest_bundle",
    "site_id": "accounting_site",
    "resource_id": "accounting_resource",
    "vo_id": "accounting_vo",
    "person_id": "accounting_person",
    "project_id": "accounting_project",
}

FUNCTIONS = r"""
CREATE FUNCTION gl_lock_references(target regclass, ids bigint[], col text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    locked bigint;
    missing bigint;
BEGIN
    IF cardinality(ids) = 0 THEN
        RETURN;
    END IF;
    EXECUTE format('SELECT count(*) FROM (SELECT 1 FROM %s WHERE id = ANY($1) FOR KEY SHARE) AS l', target)
        INTO locked USING ids;
    IF locked < cardinality(ids) THEN
        EXECUTE format('SELECT min(i) FROM unnest($1) AS i WHERE NOT EXISTS (SELECT 1 FROM %s WHERE id = i)', target)
            INTO missing USING ids;
        RAISE EXCEPTION USING ERRCODE = 'foreign_key_violation',
            MESSAGE = format('insert or update on table "accounting_usagerecord" violates the reference %s -> %s', col, target),
            DETAIL = format('Key (%s)=(%s) is not present in table "%s".', col, missing, target);
    END IF;
END $$;

CREATE FUNCTION gl_usagerecord_check_references() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM gl_lock_references('ingest_bundle', ARRAY(SELECT DISTINCT bundle_id FROM new_rows WHERE bundle_id IS NOT NULL), 'bundle_id');
    PERFORM gl_lock_references('accounting_site', ARRAY(SELECT DISTINCT site_id FROM new_rows WHERE site_id IS NOT NULL), 'site_id');
    PERFORM gl_lock_references('accounting_resource', ARRAY(SELECT DISTINCT resource_id FROM new_rows WHERE resource_id IS NOT NULL), 'resource_id');
    PERFORM gl_lock_references('accounting_vo', ARRAY(SELECT DISTINCT vo_id FROM new_rows WHERE vo_id IS NOT NULL), 'vo_id');
    PERFORM gl_lock_references('accounting_person', ARRAY(SELECT DISTINCT person_id FROM new_rows WHERE person_id IS NOT NULL), 'person_id');
    PERFORM gl_lock_references('accounting_project', ARRAY(SELECT DISTINCT project_id FROM new_rows WHERE project_id IS NOT NULL), 'project_id');
    RETURN NULL;
END $$;

CREATE FUNCTION gl_usagerecord_restrict_references() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    col text := TG_ARGV[0];
    gone bigint[];
    referenced bigint;
BEGIN
    IF TG_OP = 'DELETE' THEN
        gone := ARRAY(SELECT id FROM old_rows);
    ELSE  -- UPDATE: the ids that no longer exist after the statement
        gone := ARRAY(SELECT o.id FROM old_rows AS o WHERE NOT EXISTS (SELECT 1 FROM new_rows AS n WHERE n.id = o.id));
    END IF;
    IF cardinality(gone) = 0 THEN
        RETURN NULL;
    END IF;
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        -- The snapshot of such a transaction may miss records loads committed since it began; PostgreSQL's
        -- own foreign keys look again with a fresh snapshot there, which a trigger cannot.
        RAISE EXCEPTION USING ERRCODE = 'feature_not_supported',
            MESSAGE = format('rows of "%s" can be deleted or renumbered under READ COMMITTED only', TG_TABLE_NAME),
            HINT = 'records may reference them: run the statement in a READ COMMITTED transaction';
    END IF;
    EXECUTE format('SELECT min(g) FROM unnest($1) AS g WHERE EXISTS '
                   '(SELECT 1 FROM accounting_usagerecord AS u WHERE u.%I = g)', col) INTO referenced USING gone;
    IF referenced IS NOT NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'foreign_key_violation',
            MESSAGE = format('update or delete on table "%s" violates the reference accounting_usagerecord.%s', TG_TABLE_NAME, col),
            DETAIL = format('Key (id)=(%s) is still referenced from table "accounting_usagerecord".', referenced);
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER gl_usagerecord_insert_references AFTER INSERT ON accounting_usagerecord
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION gl_usagerecord_check_references();
CREATE TRIGGER gl_usagerecord_update_references AFTER UPDATE ON accounting_usagerecord
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION gl_usagerecord_check_references();
"""

REFERENCED = "\n".join(
    f"CREATE TRIGGER gl_restrict_usagerecord_delete AFTER DELETE ON {table} REFERENCING OLD TABLE AS old_rows "
    f"FOR EACH STATEMENT EXECUTE FUNCTION gl_usagerecord_restrict_references('{column}');\n"
    f"CREATE TRIGGER gl_restrict_usagerecord_update AFTER UPDATE ON {table} REFERENCING OLD TABLE AS old_rows "
    f"NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION gl_usagerecord_restrict_references('{column}');"
    for column, table in REFERENCES.items()
)

DROP = "\n".join(
    [f"DROP TRIGGER gl_restrict_usagerecord_delete ON {t}; DROP TRIGGER gl_restrict_usagerecord_update ON {t};" for t in REFERENCES.values()]
    + [
        "DROP TRIGGER gl_usagerecord_insert_references ON accounting_usagerecord;",
        "DROP TRIGGER gl_usagerecord_update_references ON accounting_usagerecord;",
        "DROP FUNCTION gl_usagerecord_restrict_references(); DROP FUNCTION gl_usagerecord_check_references();",
        "DROP FUNCTION gl_lock_references(regclass, bigint[], text);",
    ]
)


def create_triggers(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(FUNCTIONS + REFERENCED, params=None)  # no placeholders: % is format()'s


def drop_triggers(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP, params=None)


class Migration(migrations.Migration):

    dependencies = [
        ('accounting', '0008_dailyusage_drop_redundant_fk_indexes'),
        ('ingest', '0003_sources'),
    ]

    operations = [
        migrations.AlterField(
            model_name='usagerecord',
            name='bundle',
            field=models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='records', to='ingest.bundle'),
        ),
        migrations.AlterField(
            model_name='usagerecord',
            name='person',
            field=models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=django.db.models.deletion.PROTECT, to='accounting.person'),
        ),
        migrations.AlterField(
            model_name='usagerecord',
            name='project',
            field=models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=django.db.models.deletion.PROTECT, to='accounting.project'),
        ),
        migrations.AlterField(
            model_name='usagerecord',
            name='resource',
            field=models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=django.db.models.deletion.PROTECT, to='accounting.resource'),
        ),
        migrations.AlterField(
            model_name='usagerecord',
            name='site',
            field=models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=django.db.models.deletion.PROTECT, to='accounting.site'),
        ),
        migrations.AlterField(
            model_name='usagerecord',
            name='vo',
            field=models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=django.db.models.deletion.PROTECT, to='accounting.vo'),
        ),
        migrations.RunPython(create_triggers, drop_triggers),
    ]
