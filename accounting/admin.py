"""Django admin for the accounting domain: mapping tables, raw records and (read-only) summaries."""
from django.contrib import admin

from accounting.models import (
    VO,
    ApelSummary,
    BenchmarkFactor,
    CapacitySnapshot,
    DailyUsage,
    Frontend,
    Person,
    PilotDetails,
    PilotJobRun,
    Project,
    Resource,
    ScienceDomain,
    Site,
    SummaryRun,
    UsageRecord,
)


@admin.register(ScienceDomain)
class ScienceDomainAdmin(admin.ModelAdmin):
    search_fields = ["name"]


@admin.register(Site)
class SiteAdmin(admin.ModelAdmin):
    list_display = ["name", "facility"]
    list_filter = ["facility"]
    search_fields = ["name", "facility"]


@admin.register(Resource)
class ResourceAdmin(admin.ModelAdmin):
    list_display = ["name", "site"]
    list_filter = [("site", admin.RelatedOnlyFieldListFilter)]
    list_select_related = ["site"]
    search_fields = ["name", "site__name"]
    autocomplete_fields = ["site"]


@admin.register(VO)
class VOAdmin(admin.ModelAdmin):
    list_display = ["name", "field_of_science"]
    list_filter = [("field_of_science", admin.RelatedOnlyFieldListFilter)]
    list_select_related = ["field_of_science"]
    search_fields = ["name"]


@admin.register(Person)
class PersonAdmin(admin.ModelAdmin):
    search_fields = ["name"]


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ["name", "field_of_science", "pi", "institution"]
    list_filter = [("field_of_science", admin.RelatedOnlyFieldListFilter)]
    list_select_related = ["field_of_science"]
    search_fields = ["name", "pi", "institution"]


@admin.register(Frontend)
class FrontendAdmin(admin.ModelAdmin):
    list_display = ["client", "vo"]
    list_filter = [("vo", admin.RelatedOnlyFieldListFilter)]
    list_select_related = ["vo"]
    search_fields = ["client", "vo__name"]


@admin.register(BenchmarkFactor)
class BenchmarkFactorAdmin(admin.ModelAdmin):
    list_display = ["resource", "benchmark", "value", "valid_from"]
    list_filter = ["benchmark"]
    list_select_related = ["resource"]
    search_fields = ["resource__name"]
    autocomplete_fields = ["resource"]


class PilotDetailsInline(admin.StackedInline):
    model = PilotDetails
    extra = 0


@admin.register(UsageRecord)
class UsageRecordAdmin(admin.ModelAdmin):
    list_display = ["natural_key", "kind", "site", "vo", "start", "end", "wall_seconds", "cores", "void"]
    list_filter = ["kind", "void", "source_format", ("site", admin.RelatedOnlyFieldListFilter), ("vo", admin.RelatedOnlyFieldListFilter)]
    list_select_related = ["site", "vo"]
    search_fields = ["natural_key", "pilot_ref", "person__name", "local_user"]
    date_hierarchy = "end"
    raw_id_fields = ["bundle", "site", "resource", "vo", "person", "project"]
    readonly_fields = ["record_hash", "created", "updated"]
    inlines = [PilotDetailsInline]
    show_full_result_count = False


@admin.register(DailyUsage)
class DailyUsageAdmin(admin.ModelAdmin):
    """Summaries are rebuilt, never edited by hand: read-only here."""

    list_display = ["day", "site", "vo", "kind", "designation", "jobs", "wall_hours"]
    list_filter = ["designation", "kind", ("site", admin.RelatedOnlyFieldListFilter)]
    list_select_related = ["site", "vo"]
    search_fields = ["site__name", "vo__name", "person__name"]
    date_hierarchy = "day"
    show_full_result_count = False

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(SummaryRun)
class SummaryRunAdmin(admin.ModelAdmin):
    list_display = ["start", "end", "status", "rows", "started_at", "finished_at"]
    list_filter = ["status"]
    search_fields = ["error"]


@admin.register(ApelSummary)
class ApelSummaryAdmin(admin.ModelAdmin):
    list_display = ["site", "year", "month", "vo", "number_of_jobs", "wall_seconds", "cpu_seconds"]
    list_filter = ["year", ("site", admin.RelatedOnlyFieldListFilter), ("vo", admin.RelatedOnlyFieldListFilter)]
    list_select_related = ["site", "vo"]
    search_fields = ["natural_key", "submit_host", "person__name"]
    raw_id_fields = ["bundle", "site", "vo", "person"]


@admin.register(CapacitySnapshot)
class CapacitySnapshotAdmin(admin.ModelAdmin):
    list_display = ["timestamp", "site", "resource", "vo", "idle_cores", "pilots_queued", "idle_jobs"]
    list_filter = [("site", admin.RelatedOnlyFieldListFilter)]
    list_select_related = ["site", "resource", "vo"]
    search_fields = ["site__name", "resource__name"]
    date_hierarchy = "timestamp"
    raw_id_fields = ["bundle", "site", "resource", "vo"]


@admin.register(PilotJobRun)
class PilotJobRunAdmin(admin.ModelAdmin):
    list_display = ["global_job_id", "pilot", "start", "end", "cores", "exit_code", "exit_signal"]
    list_filter = ["badput_preemption", "badput_draining"]
    search_fields = ["global_job_id", "pilot__natural_key"]
    raw_id_fields = ["pilot"]


from accounting import admin_reconciliation  # noqa: E402,F401  quotas, corrections, audit log, record actions
