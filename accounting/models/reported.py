"""Inputs that are not one-job records: APEL summaries, capacity snapshots, job runs inside pilots."""
from django.db import models


class ApelSummary(models.Model):
    """An APEL summary record (per site, month, VO, user, ...): kept apart from job records, never mixed
    into job-level summaries, so a site that sends both is never counted twice (APEL paper, seed 003)."""

    natural_key = models.CharField(max_length=1000, unique=True)
    record_hash = models.CharField(max_length=40)
    bundle = models.ForeignKey("ingest.Bundle", null=True, blank=True, on_delete=models.SET_NULL)
    site = models.ForeignKey("accounting.Site", null=True, blank=True, on_delete=models.PROTECT)
    vo = models.ForeignKey("accounting.VO", null=True, blank=True, on_delete=models.PROTECT)
    person = models.ForeignKey("accounting.Person", null=True, blank=True, on_delete=models.PROTECT)
    year = models.PositiveSmallIntegerField()
    month = models.PositiveSmallIntegerField()
    fqan = models.CharField(max_length=500, blank=True)
    submit_host = models.CharField(max_length=255, blank=True)
    infrastructure = models.CharField(max_length=255, blank=True)
    service_level_type = models.CharField(max_length=50, blank=True)
    service_level = models.FloatField(null=True, blank=True)
    processors = models.PositiveIntegerField(default=0)
    node_count = models.PositiveIntegerField(default=0)
    number_of_jobs = models.PositiveIntegerField(default=0)
    wall_seconds = models.FloatField(default=0)
    cpu_seconds = models.FloatField(default=0)
    normalised_wall = models.FloatField(default=0)
    normalised_cpu = models.FloatField(default=0)
    earliest_end = models.DateTimeField(null=True, blank=True)
    latest_end = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-year", "-month"]
        verbose_name = "APEL summary"

    def __str__(self) -> str:
        return f"{self.site} {self.year}-{self.month:02d} {self.vo}: {self.number_of_jobs} jobs"


class CapacitySnapshot(models.Model):
    """Site capacity and demand at one moment: idle cores, pilots queued, idle jobs that could run there
    (the `snapshot` format; the input of categories 7 and 8, seed 002)."""

    natural_key = models.CharField(max_length=600, unique=True)
    bundle = models.ForeignKey("ingest.Bundle", null=True, blank=True, on_delete=models.SET_NULL)
    timestamp = models.DateTimeField(db_index=True)
    site = models.ForeignKey("accounting.Site", on_delete=models.PROTECT)
    resource = models.ForeignKey("accounting.Resource", null=True, blank=True, on_delete=models.PROTECT)
    vo = models.ForeignKey("accounting.VO", null=True, blank=True, on_delete=models.PROTECT)
    idle_cores = models.PositiveIntegerField(default=0)
    pilots_queued = models.PositiveIntegerField(default=0)
    idle_jobs = models.PositiveIntegerField(default=0)
    pledged_cores = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["-timestamp"]

    def __str__(self) -> str:
        return f"{self.site} {self.timestamp:%Y-%m-%d %H:%M}: {self.idle_cores} idle cores, {self.idle_jobs} idle jobs"


class PilotJobRun(models.Model):
    """One payload run inside a pilot as the glidein's startd saw it (startd history in the glidein's .err):
    the per-job intervals of the exact category mode (seed 002)."""

    pilot = models.ForeignKey("accounting.UsageRecord", on_delete=models.CASCADE, related_name="job_runs")
    global_job_id = models.CharField(max_length=500, blank=True)
    start = models.DateTimeField()
    end = models.DateTimeField()
    cores = models.PositiveIntegerField(default=1)
    memory_mb = models.PositiveIntegerField(null=True, blank=True)
    gpus = models.PositiveIntegerField(default=0)
    exit_code = models.IntegerField(null=True, blank=True)
    exit_signal = models.IntegerField(null=True, blank=True)
    badput_preemption = models.BooleanField(default=False)
    badput_draining = models.BooleanField(default=False)
    starter_exit_status = models.IntegerField(null=True, blank=True)

    class Meta:
        ordering = ["pilot", "start"]

    def __str__(self) -> str:
        return f"run {self.global_job_id} in {self.pilot_id}"
