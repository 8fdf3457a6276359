"""Django admin for bundles and their rejections."""
from django.contrib import admin

from ingest.models import Bundle, BundleError


class BundleErrorInline(admin.TabularInline):
    model = BundleError
    extra = 0
    max_num = 0
    readonly_fields = ["file", "line", "reason"]
    can_delete = False


@admin.register(Bundle)
class BundleAdmin(admin.ModelAdmin):
    list_display = ["id", "original_name", "format", "status", "records_read", "records_inserted", "duplicates", "rejected", "created_at"]
    list_filter = ["status", "format", "source_label"]
    search_fields = ["original_name", "sha256", "source_label"]
    readonly_fields = [f.name for f in Bundle._meta.fields]
    inlines = [BundleErrorInline]


@admin.register(BundleError)
class BundleErrorAdmin(admin.ModelAdmin):
    list_display = ["bundle", "file", "line", "reason"]
    list_filter = [("bundle", admin.RelatedOnlyFieldListFilter)]
    search_fields = ["file", "reason"]
    raw_id_fields = ["bundle"]


# --- pulled sources (ingest.models.Source) ---
from django.contrib import messages  # noqa: E402
from django.urls import reverse  # noqa: E402
from django.utils.html import format_html  # noqa: E402
from django.utils.http import urlencode  # noqa: E402

from ingest.models import Source  # noqa: E402


@admin.register(Source)
class SourceAdmin(admin.ModelAdmin):
    """Pulled sources. Saving one creates or updates its beat PeriodicTask (a post_save signal);
    deleting it removes the task."""

    list_display = ["name", "kind", "location", "format", "schedule", "enabled", "last_pull_at", "last_pull_status", "last_new_file_at"]
    list_filter = ["enabled", "kind", "last_pull_status", "format"]
    search_fields = ["name", "location", "site_hint", "schedd_hint", "last_pull_message"]
    actions = ["pull_now"]
    fieldsets = [
        (None, {"fields": ["name", "location", "kind", "format", "site_hint", "schedd_hint"]}),
        ("Schedule", {"fields": ["enabled", "every_minutes", "cron", "periodic_task_link", "silent_after_days"]}),
        ("Last pull", {"fields": ["last_pull_status", "last_pull_started_at", "last_pull_at", "last_pull_message", "last_new_file_at", "bundles_link"]}),
    ]
    readonly_fields = [
        "kind", "periodic_task_link", "last_pull_status", "last_pull_started_at", "last_pull_at", "last_pull_message",
        "last_new_file_at", "bundles_link",
    ]  # fmt: skip

    @admin.display(description="schedule")
    def schedule(self, obj: Source) -> str:
        return obj.schedule_text

    @admin.display(description="beat task")
    def periodic_task_link(self, obj: Source) -> str:
        if not obj.periodic_task_id:
            return "-"
        url = reverse("admin:django_celery_beat_periodictask_change", args=[obj.periodic_task_id])
        return format_html('<a href="{}">{}</a>', url, obj.periodic_task)

    @admin.display(description="bundles")
    def bundles_link(self, obj: Source) -> str:
        if not obj.pk:
            return "-"
        url = reverse("admin:ingest_bundle_changelist") + "?" + urlencode({"source_label__exact": obj.name})
        count = Bundle.objects.filter(source_label=obj.name).count()
        return format_html('<a href="{}">{} bundle(s)</a>', url, count)

    @admin.action(description="Pull now")
    def pull_now(self, request, queryset):
        from ingest.tasks import queue_pull

        ids = list(queryset.values_list("pk", flat=True))
        for source_id in ids:
            queue_pull(source_id)
        self.message_user(request, f"Queued a pull of {len(ids)} source(s); see 'Last pull' for the outcome.", messages.SUCCESS)
