"""Raw usage records: one row per job, never edited by the rules (DOMAIN.md "Records")."""
from datetime import timedelta

from django.core.serializers.json import DjangoJSONEncoder
from django.db import connections, models

from accounting.choices import RecordKind
from accounting.models.fields import IdentifierField


class UsageRecordQuerySet(models.QuerySet):
    def counted(self):
        """Records the summaries read: everything not voided by an admin."""
        return self.filter(void=False)

    def longest_span(self) -> timedelta:
        """At least the longest end - start of any record: a record overlapping a moment started at most that
        long before it, which turns every "overlaps these days" scan into a range on `start`.

        PostgreSQL: a statement-level trigger keeps it in `gl_record_span` as records are written (migration
        0011; it never shrinks, so after a delete it may be longer than needed, never shorter). That replaced
        an index on end - start that every record paid for in every ingest. Elsewhere (SQLite, the demo):
        computed."""
        if connections[self.db].vendor == "postgresql":
            with connections[self.db].cursor() as cursor:
                cursor.execute("SELECT longest FROM gl_record_span")
                row = cursor.fetchone()
            return row[0] if row else timedelta(0)
        return UsageRecord.objects.using(self.db).aggregate(span=models.Max(models.F("end") - models.F("start")))["span"] or timedelta(0)


class UsageRecord(models.Model):
    """One job: a `batch` job, a `pilot` (glidein) as the site saw it, or a `payload` run inside a pilot.

    `natural_key` identifies the job across re-sends (HTCondor GlobalJobId, factory `schedd#cluster.proc`,
    APEL site + local job id + end time), so re-ingesting never creates a second row; `record_hash` tells
    an identical re-send (a duplicate) from a changed one (an update). A payload names its pilot in
    `pilot_ref` (the pilot's natural key or its glidein startd name); the link is resolved at rebuild time,
    so a pilot arriving after its payloads is picked up by the next rebuild.
    """

    # No index of its own: three values, and every query by kind also names a time range, a key or a pilot
    # link, which have theirs; one index less to write per record made an ingest's COPY ~8 % cheaper.
    kind = models.CharField(max_length=8, choices=RecordKind.choices)
    natural_key = IdentifierField(max_length=500, unique=True)
    record_hash = models.CharField(max_length=40)
    source_format = models.CharField(max_length=32)
    # The six references are checked by PostgreSQL once per statement, not once per row (migration 0009):
    # the same integrity as a foreign key (referenced rows locked, deletes of referenced rows refused) at a
    # tenth of the cost per row of a bulk load. Django's on_delete still applies in the ORM.
    # Records of one bundle are written together, so their bundle ids follow the table's order on disk: on
    # PostgreSQL a BRIN index (migration 0014) finds them, at a tiny fraction of a B-tree's cost per record.
    bundle = models.ForeignKey(
        "ingest.Bundle", null=True, blank=True, on_delete=models.SET_NULL, related_name="records", db_constraint=False,
        db_index=False,
    )
    source_file = models.CharField(max_length=500, blank=True)
    source_line = models.PositiveIntegerField(null=True, blank=True)

    site = models.ForeignKey("accounting.Site", null=True, blank=True, on_delete=models.PROTECT, db_constraint=False)
    resource = models.ForeignKey("accounting.Resource", null=True, blank=True, on_delete=models.PROTECT, db_constraint=False)
    vo = models.ForeignKey("accounting.VO", null=True, blank=True, on_delete=models.PROTECT, db_constraint=False)
    person = models.ForeignKey("accounting.Person", null=True, blank=True, on_delete=models.PROTECT, db_constraint=False)
    project = models.ForeignKey("accounting.Project", null=True, blank=True, on_delete=models.PROTECT, db_constraint=False)
    fqan = models.CharField("FQAN", max_length=500, blank=True)
    local_user = models.CharField(max_length=200, blank=True)
    pilot_ref = IdentifierField(max_length=500, blank=True, db_index=True, help_text="pilot id the payload carries")

    start = models.DateTimeField(db_index=True)
    end = models.DateTimeField(db_index=True)
    wall_seconds = models.FloatField()
    cores = models.PositiveIntegerField(default=1)
    memory_mb = models.PositiveIntegerField(null=True, blank=True)
    gpus = models.PositiveIntegerField(default=0)
    cpu_user_seconds = models.FloatField(default=0)
    cpu_sys_seconds = models.FloatField(default=0)
    exit_code = models.IntegerField(null=True, blank=True)
    exit_signal = models.IntegerField(null=True, blank=True)

    void = models.BooleanField(default=False, help_text="excluded from summaries by an admin; kept and reversible")
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    objects = UsageRecordQuerySet.as_manager()

    class Meta:
        ordering = ["-end"]
        constraints = [
            models.CheckConstraint(condition=models.Q(end__gte=models.F("start")), name="record_end_after_start"),
            models.CheckConstraint(condition=models.Q(wall_seconds__gte=0), name="record_wall_nonnegative"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.natural_key}"

    @property
    def core_hours(self) -> float:
        return self.wall_seconds * self.cores / 3600.0


class PilotDetails(models.Model):
    """What the factory and the glidein tell about a pilot (GlideinWMS job.out / completed_jobs, seed 002)."""

    record = models.OneToOneField(UsageRecord, primary_key=True, on_delete=models.CASCADE, related_name="pilot")
    glidein_name = models.CharField(max_length=255, blank=True, db_index=True, help_text="startd name glidein_<pid>_<rand>@host")
    frontend_client = models.CharField(max_length=255, blank=True)
    entry = models.CharField(max_length=255, blank=True)
    cores = models.PositiveIntegerField(default=1)
    memory_mb = models.PositiveIntegerField(null=True, blank=True)
    gpus = models.PositiveIntegerField(default=0)
    validation_seconds = models.FloatField(null=True, blank=True)
    condor_started = models.BooleanField(null=True, blank=True)
    condor_seconds = models.FloatField(null=True, blank=True)
    claims = models.PositiveIntegerField(null=True, blank=True)
    metrics = models.JSONField(
        default=dict, blank=True, encoder=DjangoJSONEncoder,
        help_text="factory and glidein figures as read (wastemill seconds, stats, XML result): estimated categories",
    )  # fmt: skip

    class Meta:
        verbose_name_plural = "pilot details"

    def __str__(self) -> str:
        return f"pilot {self.record.natural_key}"
