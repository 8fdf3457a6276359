"""Quotas (DOMAIN.md "Quotas (NGS)"): limits on the reported usage of a VO, a person or a project over a
period, the threshold crossings they raised, and the in-app notices those crossings sent."""
from django.conf import settings
from django.db import models
from django.db.models import F, Q


def default_thresholds() -> list[int]:
    return [80, 100]


class Quota(models.Model):
    """A limit on one subject's reported usage (payload excess and unmatched hours never count) in one
    metric, over a calendar month, quarter or year (recurring from `period_start`), or a custom window.

    `period_end` is exclusive, like `end` in `GET /api/v1/usage/`: it closes a custom window, and ends the
    recurrence of a monthly, quarterly or yearly quota (blank: open-ended). `vo` is the subject of a VO
    quota; for a person or project quota it is the VO whose usage counts (blank: every VO), and VO managers
    see the quotas of their own VOs only. VO managers request quotas (status `requested`); admins set
    (`approved`) or refuse them. Only approved quotas are checked, alert and answer the check endpoint.

    `window_start`, `window_end`, `used` and `used_at` cache the usage of the current window, refreshed
    after every summary rebuild, so the gatekeeper's check reads one row; `run_watermark` is the highest
    `SummaryRun` id whose rows `used` includes (every run up to it finished), so a rebuild committed later
    is told by one index range scan.
    """

    class Subject(models.TextChoices):
        VO = "vo", "VO"
        USER = "user", "Person (DN)"
        PROJECT = "project", "Project"

    class Metric(models.TextChoices):
        CORE_HOURS = "core_hours", "core-hours"
        NORMALIZED_HOURS = "normalized_hours", "normalised hours (HS06)"
        GPU_HOURS = "gpu_hours", "GPU hours"

    class Period(models.TextChoices):
        MONTH = "month", "each calendar month"
        QUARTER = "quarter", "each calendar quarter"
        YEAR = "year", "each calendar year"
        CUSTOM = "custom", "custom window"

    class Status(models.TextChoices):
        REQUESTED = "requested", "requested"
        APPROVED = "approved", "approved"
        REJECTED = "rejected", "rejected"

    subject_type = models.CharField(max_length=8, choices=Subject.choices)
    subject = models.CharField(max_length=500, help_text="name of the VO, person (DN) or project, as the check endpoint asks")
    vo = models.ForeignKey(
        "accounting.VO", null=True, blank=True, on_delete=models.PROTECT, related_name="quotas",
        help_text="the VO of a VO quota; for a person or project quota, the VO whose usage counts (blank: all)",
    )  # fmt: skip
    person = models.ForeignKey("accounting.Person", null=True, blank=True, on_delete=models.PROTECT, related_name="quotas")
    project = models.ForeignKey("accounting.Project", null=True, blank=True, on_delete=models.PROTECT, related_name="quotas")
    metric = models.CharField(max_length=20, choices=Metric.choices, default=Metric.CORE_HOURS)
    period = models.CharField(max_length=8, choices=Period.choices, default=Period.CUSTOM)
    period_start = models.DateField()
    period_end = models.DateField(null=True, blank=True, help_text="exclusive")
    limit = models.FloatField()
    thresholds = models.JSONField(default=default_thresholds, help_text="percentages of the limit that raise an alert")
    notify = models.ManyToManyField(settings.AUTH_USER_MODEL, blank=True, related_name="quota_subscriptions")
    notify_emails = models.TextField(blank=True, help_text="further e-mail addresses, comma or line separated")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.REQUESTED, db_index=True)
    note = models.TextField(blank=True)
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    decided_at = models.DateTimeField(null=True, blank=True)

    window_start = models.DateField(null=True, blank=True)
    window_end = models.DateField(null=True, blank=True, help_text="exclusive")
    used = models.FloatField(default=0)
    used_at = models.DateTimeField(null=True, blank=True)
    run_watermark = models.BigIntegerField(default=0, help_text="summary rebuilds up to this id are in `used`")

    class Meta:
        ordering = ["subject_type", "subject", "period_start"]
        indexes = [models.Index(fields=["subject_type", "subject", "status"], name="quota_check_lookup")]
        constraints = [
            models.CheckConstraint(condition=Q(limit__gt=0), name="quota_limit_positive"),
            models.CheckConstraint(
                condition=Q(period_end__isnull=True) | Q(period_end__gt=F("period_start")), name="quota_period_ordered"
            ),
            models.CheckConstraint(
                condition=~Q(period="custom") | Q(period_end__isnull=False), name="quota_custom_has_end"
            ),
            models.CheckConstraint(
                condition=(Q(subject_type="vo", vo__isnull=False, person__isnull=True, project__isnull=True)
                           | Q(subject_type="user", person__isnull=False, project__isnull=True)
                           | Q(subject_type="project", project__isnull=False, person__isnull=True)),
                name="quota_subject_matches_type",
            ),  # fmt: skip
        ]

    def __str__(self) -> str:
        scope = f" in {self.vo}" if self.vo_id and self.subject_type != self.Subject.VO else ""
        return f"{self.subject_type} {self.subject}{scope}: {self.limit:g} {self.get_metric_display()} ({self.period})"

    def save(self, *args, **kwargs):
        subject = {"vo": self.vo, "user": self.person, "project": self.project}.get(self.subject_type)
        if subject is not None:
            self.subject = subject.name
        super().save(*args, **kwargs)


class QuotaAlert(models.Model):
    """One crossing of a threshold by a quota's usage in one window.

    While it is open (`cleared_at` empty) the same threshold in the same window raises nothing more, however
    often quotas are checked. When usage falls back below the threshold (a correction, a voided record) it is
    cleared; rising above again is a new crossing and raises a new alert. The database allows one open alert
    per (quota, window, threshold), so two concurrent checks cannot both notify.
    """

    quota = models.ForeignKey(Quota, on_delete=models.CASCADE, related_name="alerts")
    window_start = models.DateField()
    threshold = models.PositiveSmallIntegerField(help_text="percent of the limit")
    used = models.FloatField()
    limit = models.FloatField()
    percent = models.FloatField()
    crossed_at = models.DateTimeField(auto_now_add=True)
    cleared_at = models.DateTimeField(null=True, blank=True)
    emailed_to = models.TextField(blank=True)
    email_sent_at = models.DateTimeField(null=True, blank=True)
    email_error = models.TextField(blank=True)

    class Meta:
        ordering = ["-crossed_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["quota", "window_start", "threshold"], condition=Q(cleared_at__isnull=True),
                name="quotaalert_one_open_per_threshold",
            ),
        ]  # fmt: skip

    def __str__(self) -> str:
        return f"{self.quota} crossed {self.threshold} % ({self.percent:.1f} %) in the window from {self.window_start}"


class Notice(models.Model):
    """An in-app notice for one user: a quota threshold crossing (with its alert), or a finished admin action."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notices")
    quota = models.ForeignKey(Quota, null=True, blank=True, on_delete=models.CASCADE, related_name="notices")
    alert = models.ForeignKey(QuotaAlert, null=True, blank=True, on_delete=models.CASCADE, related_name="notices")
    message = models.TextField()
    url = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    read_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["user", "read_at"], name="notice_user_unread")]

    def __str__(self) -> str:
        return f"to {self.user}: {self.message[:60]}"
