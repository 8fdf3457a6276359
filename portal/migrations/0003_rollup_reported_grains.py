"""The month rollup gained reported-only grains (`portal/rollups.py`, REPORTED): mark the rollup stale and
due for a full rewrite, so the daily table answers until the next refresh writes them (never an empty grain)."""
from django.db import migrations


def mark_stale(apps, schema_editor):
    apps.get_model("portal", "RollupState").objects.update(run_watermark=0, refreshed_at=None)


class Migration(migrations.Migration):
    dependencies = [("portal", "0002_role_groups")]

    operations = [migrations.RunPython(mark_stale, migrations.RunPython.noop)]
