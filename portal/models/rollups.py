"""The month rollup of the daily summaries: reported-usage queries by month, quarter, year or total
without a person dimension read it instead of `DailyUsage` (`portal/rollups.py`).

It holds exactly the sums of `accounting.DailyUsage` per calendar month over every dimension except the
person, so any query it can answer gives the same numbers as the daily table. It is derived data:
refreshed from `DailyUsage` after summary rebuilds (`manage.py refresh_rollups`, or the Celery beat
task), and never read while a rebuild newer than its last refresh exists.
"""
from django.db import models

from accounting.choices import Designation, RecordKind


class MonthlyUsage(models.Model):
    """Sums of `DailyUsage` over one calendar month; `day` is the month's first day (so the report
    query, which filters and truncates `day`, runs on it unchanged).

    Several grains live side by side (`grain`, see `portal/rollups.py`): grain 0 keeps every dimension
    but the person; coarser grains keep only a few (the others are null), so a query by site and VO
    reads a few thousand rows a month instead of every project and resource."""

    grain = models.PositiveSmallIntegerField(default=0)
    day = models.DateField(help_text="first day of the month")
    site = models.ForeignKey("accounting.Site", null=True, on_delete=models.DO_NOTHING, db_constraint=False, related_name="+")
    resource = models.ForeignKey("accounting.Resource", null=True, on_delete=models.DO_NOTHING, db_constraint=False, related_name="+")
    vo = models.ForeignKey("accounting.VO", null=True, on_delete=models.DO_NOTHING, db_constraint=False, related_name="+")
    project = models.ForeignKey("accounting.Project", null=True, on_delete=models.DO_NOTHING, db_constraint=False, related_name="+")
    science_domain = models.ForeignKey(
        "accounting.ScienceDomain", null=True, on_delete=models.DO_NOTHING, db_constraint=False, related_name="+"
    )
    kind = models.CharField(max_length=8, choices=RecordKind.choices)
    designation = models.CharField(max_length=20, choices=Designation.choices)
    jobs = models.BigIntegerField(default=0)
    wall_hours = models.FloatField(default=0)
    cpu_hours = models.FloatField(default=0)
    normalized_hours = models.FloatField(default=0)
    gpu_hours = models.FloatField(default=0)

    class Meta:
        verbose_name_plural = "monthly usage"
        indexes = [models.Index(fields=["grain", "day", "designation"]), models.Index(fields=["grain", "vo", "day"])]

    def __str__(self) -> str:
        return f"{self.day:%Y-%m} {self.designation} {self.wall_hours:.2f} core-hours"


class RollupState(models.Model):
    """The one row saying up to which summary rebuild the rollup is refreshed.

    `run_watermark` is the highest `SummaryRun` id whose days the rollup includes, every run up to it
    being finished; a later run that is done or still running makes the rollup stale (not read) until
    the next refresh.
    """

    run_watermark = models.BigIntegerField(default=0)
    refreshed_at = models.DateTimeField(null=True, blank=True)
    months = models.IntegerField(default=0, help_text="months rewritten by the last refresh")

    def __str__(self) -> str:
        return f"rollup refreshed up to run {self.run_watermark}"
