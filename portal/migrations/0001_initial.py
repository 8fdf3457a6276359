# Roles' VO links and the month rollup of the summaries (portal/models/).

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('accounting', '0001_initial'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='RollupState',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('run_watermark', models.BigIntegerField(default=0)),
                ('refreshed_at', models.DateTimeField(blank=True, null=True)),
                ('months', models.IntegerField(default=0, help_text='months rewritten by the last refresh')),
            ],
        ),
        migrations.CreateModel(
            name='MonthlyUsage',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('grain', models.PositiveSmallIntegerField(default=0)),
                ('day', models.DateField(help_text='first day of the month')),
                ('kind', models.CharField(choices=[('batch', 'Batch job'), ('pilot', 'Pilot'), ('payload', 'Payload')], max_length=8)),
                ('designation', models.CharField(choices=[('batch', 'Batch job'), ('payload', 'Payload (refines its pilot)'), ('pilot_residual', 'Pilot residual'), ('payload_excess', 'Payload excess'), ('payload_unmatched', 'Payload unmatched')], max_length=20)),
                ('jobs', models.BigIntegerField(default=0)),
                ('wall_hours', models.FloatField(default=0)),
                ('cpu_hours', models.FloatField(default=0)),
                ('normalized_hours', models.FloatField(default=0)),
                ('gpu_hours', models.FloatField(default=0)),
                ('project', models.ForeignKey(db_constraint=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='accounting.project')),
                ('resource', models.ForeignKey(db_constraint=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='accounting.resource')),
                ('science_domain', models.ForeignKey(db_constraint=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='accounting.sciencedomain')),
                ('site', models.ForeignKey(db_constraint=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='accounting.site')),
                ('vo', models.ForeignKey(db_constraint=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='accounting.vo')),
            ],
            options={
                'verbose_name_plural': 'monthly usage',
                'indexes': [models.Index(fields=['grain', 'day', 'designation'], name='portal_mont_grain_b6867c_idx'), models.Index(fields=['grain', 'vo', 'day'], name='portal_mont_grain_bcad1f_idx')],
            },
        ),
        migrations.CreateModel(
            name='VOManager',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='managed_vo_links', to=settings.AUTH_USER_MODEL)),
                ('vo', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='manager_links', to='accounting.vo')),
            ],
            options={
                'verbose_name': 'VO manager',
                'constraints': [models.UniqueConstraint(fields=('user', 'vo'), name='vomanager_unique_user_vo')],
            },
        ),
    ]
