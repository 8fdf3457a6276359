"""Summary tables: rebuilt from raw records and mapping tables, never edited by hand (DOMAIN.md)."""
from django.db import models

from accounting.choices import Category, Designation, RecordKind


class DailyUsageQuerySet(models.QuerySet):
    def reported(self):
        from accounting.choices import REPORTED_DESIGNATIONS

        return self.filter(designation__in=REPORTED_DESIGNATIONS)


class DailyUsage(models.Model):
    """Hours of one UTC day for one combination of dimensions and one designation.

    Hours are spread over days by overlap of `[start, end]`; `jobs` counts records on the day they ended.
    `wall_hours` are core-hours. Rows of designation `payload_excess` / `payload_unmatched` are kept for
    reconciliation but never part of reported totals.
    """

    day = models.DateField()
    site = models.ForeignKey("accounting.Site", null=True, on_delete=models.DO_NOTHING, db_constraint=False)
    resource = models.ForeignKey("accounting.Resource", null=True, on_delete=models.DO_NOTHING, db_constraint=False)
    # vo and person: no single-column index, the (vo, day) and (person, day) indexes below lead with them
    vo = models.ForeignKey("accounting.VO", null=True, on_delete=models.DO_NOTHING, db_constraint=False, db_index=False)
    person = models.ForeignKey("accounting.Person", null=True, on_delete=models.DO_NOTHING, db_constraint=False, db_index=False)
    project = models.ForeignKey("accounting.Project", null=True, on_delete=models.DO_NOTHING, db_constraint=False)
    science_domain = models.ForeignKey(
        "accounting.ScienceDomain", null=True, on_delete=models.DO_NOTHING, db_constraint=False
    )
    kind = models.CharField(max_length=8, choices=RecordKind.choices)
    designation = models.CharField(max_length=20, choices=Designation.choices)
    jobs = models.IntegerField(default=0)
    wall_hours = models.FloatField(default=0)
    cpu_hours = models.FloatField(default=0)
    normalized_hours = models.FloatField(default=0)
    gpu_hours = models.FloatField(default=0)

    objects = DailyUsageQuerySet.as_manager()

    class Meta:
        verbose_name_plural = "daily usage"
        indexes = [
            models.Index(fields=["day", "site"]),
            models.Index(fields=["vo", "day"]),
            models.Index(fields=["person", "day"]),
        ]

    def __str__(self) -> str:
        return f"{self.day} {self.designation} {self.wall_hours:.2f} core-hours"


class SummaryRun(models.Model):
    """One rebuild of a day range: persisted with its status, timing and row count."""

    class Status(models.TextChoices):
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    start = models.DateField()
    end = models.DateField(help_text="inclusive")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.RUNNING)
    rows = models.IntegerField(default=0)
    started_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["-started_at"]

    def __str__(self) -> str:
        return f"rebuild {self.start}..{self.end} {self.status}"


class CategoryDaily(models.Model):
    """Pilot time of one UTC day in canonical units, partitioned among the eight categories (seed 002).

    Categories 1-6 come from pilots (by the pilot's site, resource and VO); 7 and 8 from capacity
    snapshots. `estimated` marks rows computed from factory summaries alone (no per-job runs known).
    """

    day = models.DateField()
    site = models.ForeignKey("accounting.Site", null=True, on_delete=models.DO_NOTHING, db_constraint=False)
    resource = models.ForeignKey("accounting.Resource", null=True, on_delete=models.DO_NOTHING, db_constraint=False)
    vo = models.ForeignKey("accounting.VO", null=True, on_delete=models.DO_NOTHING, db_constraint=False)
    category = models.CharField(max_length=32, choices=Category.choices)
    estimated = models.BooleanField(default=False)
    core_hours = models.FloatField(default=0)
    gpu_hours = models.FloatField(default=0)

    class Meta:
        verbose_name_plural = "category summaries"
        indexes = [models.Index(fields=["day", "site"]), models.Index(fields=["vo", "day"])]

    def __str__(self) -> str:
        return f"{self.day} {self.category} {self.core_hours:.2f} core-hours"
