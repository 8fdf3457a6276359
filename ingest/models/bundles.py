"""Bundles: uploaded or pulled log files, kept on disk for ever, and their ingest runs."""
from django.conf import settings
from django.db import models


class Bundle(models.Model):
    """A file (or archive, or directory snapshot) of accounting logs and the state of its ingest.

    The original bytes are kept in the bundle store under their sha256 (like GRACC's RawXML), so a
    bundle can be re-parsed after a parser fix. Counts: `records_read` = records seen, `records_inserted`
    new rows, `records_updated` changed re-sends, `duplicates` identical re-sends, `rejected` records
    or files that could not be read (each with a `BundleError` naming file, line and reason).
    """

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    original_name = models.CharField(max_length=500)
    stored_path = models.CharField(max_length=1000, help_text="path inside the bundle store")
    sha256 = models.CharField(max_length=64, db_index=True)
    size_bytes = models.BigIntegerField(default=0)
    requested_format = models.CharField(max_length=32, blank=True, help_text="forced format; blank = auto-detect")
    format = models.CharField(max_length=100, blank=True, help_text="detected format(s)")
    source_label = models.CharField(max_length=200, blank=True)
    site_hint = models.CharField(max_length=200, blank=True, help_text="site for formats that carry none")
    schedd_hint = models.CharField(max_length=255, blank=True, help_text="factory schedd for completed_jobs logs")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED, db_index=True)
    records_read = models.IntegerField(default=0)
    records_inserted = models.IntegerField(default=0)
    records_updated = models.IntegerField(default=0)
    duplicates = models.IntegerField(default=0)
    rejected = models.IntegerField(default=0)
    bytes_done = models.BigIntegerField(default=0, help_text="progress through the bundle")
    first_day = models.DateField(null=True, blank=True)
    last_day = models.DateField(null=True, blank=True)
    message = models.TextField(blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"bundle {self.pk} {self.original_name} ({self.status})"

    @property
    def progress_percent(self) -> int:
        if self.status == self.Status.DONE:
            return 100
        return int(100 * self.bytes_done / self.size_bytes) if self.size_bytes else 0


class BundleError(models.Model):
    """One rejection: a record or file of a bundle that could not be read, and why (file, line, reason)."""

    bundle = models.ForeignKey(Bundle, on_delete=models.CASCADE, related_name="errors")
    file = models.CharField(max_length=500)
    line = models.PositiveIntegerField(null=True, blank=True)
    reason = models.TextField()

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.reason}"
