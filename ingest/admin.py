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
