"""Django admin for the portal: VO manager links (who sees which VO's people) and the rollup state."""
from django.contrib import admin

from portal.models import RollupState, VOManager


@admin.register(VOManager)
class VOManagerAdmin(admin.ModelAdmin):
    list_display = ["user", "vo"]
    list_select_related = ["user", "vo"]
    search_fields = ["user__username", "vo__name"]
    autocomplete_fields = ["vo"]


@admin.register(RollupState)
class RollupStateAdmin(admin.ModelAdmin):
    list_display = ["run_watermark", "refreshed_at", "months"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
