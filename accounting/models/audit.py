"""The audit log of admin actions on accounting data (who, when, what, how many rows)."""
from django.conf import settings
from django.db import models


class AuditEntry(models.Model):
    """One admin action on accounting data: a correction applied or reverted, records voided or re-linked, a
    bundle re-ingested, a day range rebuilt, a site or resource merged, a quota set or decided.

    Actions that run in a Celery task are persisted here before they run (status `queued`), and carry their
    progress while they run: the row is both the audit record and the job a worker picks up by id. `rows` is
    the number of records (or quotas) the action changed, `days` the number of summary days it rebuilt.
    """

    class Action(models.TextChoices):
        CORRECTION_APPLY = "correction_apply", "apply correction"
        CORRECTION_REVERT = "correction_revert", "revert correction"
        VOID = "void", "void records"
        UNVOID = "unvoid", "unvoid records"
        RELINK = "relink", "re-link payload to pilot"
        REINGEST = "reingest", "re-ingest bundle"
        REBUILD = "rebuild", "rebuild day range"
        MERGE_SITE = "merge_site", "merge site"
        MERGE_RESOURCE = "merge_resource", "merge resource"
        QUOTA_SET = "quota_set", "set quota"
        QUOTA_REQUEST = "quota_request", "request quota"
        QUOTA_APPROVE = "quota_approve", "approve quota"
        QUOTA_REJECT = "quota_reject", "reject quota"

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    action = models.CharField(max_length=20, choices=Action.choices, db_index=True)
    target = models.CharField(max_length=500, help_text="what the action was on, in words")
    details = models.JSONField(default=dict, blank=True)
    rows = models.IntegerField(default=0, help_text="records (or quotas) changed")
    days = models.IntegerField(default=0, help_text="summary days rebuilt")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.DONE, db_index=True)
    progress = models.PositiveSmallIntegerField(default=0, help_text="percent done")
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name = "audit entry"
        verbose_name_plural = "audit log"

    def __str__(self) -> str:
        return f"{self.created_at:%Y-%m-%d %H:%M} {self.user or '-'} {self.get_action_display()}: {self.target}"
