"""Sources: places GridLedger pulls logs from on a schedule (a server-side glob or an HTTP(S) URL).

Each pull turns every new file (by sha256) into its own Bundle, labelled with the source's name
(`Bundle.source_label`), so a source's history is its bundles. django-celery-beat runs the pulls: every
Source owns one `django_celery_beat.PeriodicTask` (interval or crontab) that calls
`ingest.tasks.pull_source_task(source_id)`. The PeriodicTask follows the Source through the
post_save / post_delete signals below (so admin, shell and API saves all keep beat in step); see
`ingest.services.sources.sync_schedule`.
"""
from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver


def format_choices() -> list[tuple[str, str]]:
    """Format names of the parsers (CONTRACT.md), blank = detect per file."""
    from ingest.parsers import PARSERS

    return [("", "auto-detect"), *((name, name) for name in sorted(PARSERS))]


def default_silent_days() -> int:
    return int(getattr(settings, "GRIDLEDGER_SILENT_SOURCE_DAYS", 3))


class Source(models.Model):
    """A place logs are pulled from: a directory glob on this server (only below GRIDLEDGER_SOURCE_ROOTS)
    or an HTTP(S) URL, read with a format (or auto-detected per file) and the site / schedd hints that
    formats without them need. A source that has brought no new file for `silent_after_days` has gone
    silent (like a GRACC probe that stopped reporting).
    """

    class Kind(models.TextChoices):
        GLOB = "glob", "directory glob"
        URL = "url", "HTTP(S) URL"

    class PullStatus(models.TextChoices):
        NEVER = "never", "never pulled"
        RUNNING = "running", "running"
        OK = "ok", "ok"
        PARTIAL = "partial", "partial (some files failed)"
        FAILED = "failed", "failed"

    name = models.CharField(max_length=200, unique=True, help_text="also the source label of its bundles")
    location = models.CharField(
        max_length=2000,
        help_text="an absolute glob such as /var/log/gwms-factory/client/user_*/glidein_*/entry_*/job.*.out "
        "(below GRIDLEDGER_SOURCE_ROOTS), or an http:// or https:// URL",
    )
    kind = models.CharField(max_length=4, choices=Kind.choices, editable=False, help_text="set from the location")
    format = models.CharField(max_length=32, blank=True, choices=format_choices, help_text="blank = auto-detect per file")
    site_hint = models.CharField(max_length=200, blank=True, help_text="site for formats that carry none")
    schedd_hint = models.CharField(max_length=255, blank=True, help_text="factory schedd for completed_jobs logs")
    every_minutes = models.PositiveIntegerField(default=60, validators=[MinValueValidator(1)], help_text="pull interval (used when cron is blank)")
    cron = models.CharField(
        max_length=100, blank=True, help_text="crontab 'minute hour day-of-month month day-of-week' in UTC, e.g. '*/30 * * * *'; replaces the interval"
    )
    enabled = models.BooleanField(default=True, help_text="off: beat no longer pulls it ('pull now' still does)")
    silent_after_days = models.PositiveIntegerField(
        default=default_silent_days, help_text="report the source as silent when no new file came for this many days"
    )
    periodic_task = models.OneToOneField(
        "django_celery_beat.PeriodicTask", null=True, blank=True, editable=False, on_delete=models.SET_NULL, related_name="+"
    )
    last_pull_started_at = models.DateTimeField(null=True, blank=True, editable=False)
    last_pull_at = models.DateTimeField(null=True, blank=True, editable=False, help_text="when the last pull finished")
    last_pull_status = models.CharField(max_length=10, choices=PullStatus.choices, default=PullStatus.NEVER, editable=False, db_index=True)
    last_pull_message = models.TextField(blank=True, editable=False)
    last_new_file_at = models.DateTimeField(null=True, blank=True, editable=False, help_text="when a pull last found a new file")
    pull_token = models.CharField(max_length=64, blank=True, editable=False, help_text="the running pull (its Celery task id)")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @staticmethod
    def kind_of(location: str) -> str:
        return Source.Kind.URL if location.strip().lower().startswith(("http://", "https://")) else Source.Kind.GLOB

    @property
    def schedule_text(self) -> str:
        return f"cron {self.cron}" if self.cron.strip() else f"every {self.every_minutes} min"

    def clean(self) -> None:
        from ingest.services.sources import SourceRefused, check_location, cron_fields

        self.location = self.location.strip()
        self.cron = " ".join(self.cron.split())
        errors = {}
        try:
            check_location(self.location)
        except SourceRefused as exc:
            errors["location"] = str(exc)
        if self.cron:
            try:
                cron_fields(self.cron)
            except ValueError as exc:
                errors["cron"] = str(exc)
        if errors:
            raise ValidationError(errors)

    def save(self, *args, **kwargs):
        self.kind = self.kind_of(self.location)
        if kwargs.get("update_fields") is not None and "location" in kwargs["update_fields"]:
            kwargs["update_fields"] = {*kwargs["update_fields"], "kind"}
        super().save(*args, **kwargs)


@receiver(post_save, sender=Source, dispatch_uid="ingest.source.sync_schedule")
def _source_saved(sender, instance: Source, raw: bool = False, **kwargs) -> None:
    if raw:  # loaddata: the fixture carries its own rows
        return
    from ingest.services.sources import sync_schedule

    sync_schedule(instance)


@receiver(post_delete, sender=Source, dispatch_uid="ingest.source.drop_schedule")
def _source_deleted(sender, instance: Source, **kwargs) -> None:
    from ingest.services.sources import drop_schedule

    drop_schedule(instance)
