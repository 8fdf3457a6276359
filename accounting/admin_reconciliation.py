"""Django admin for quotas and reconciliation: corrections, the audit log, merges, charge factors, and the
admin actions on records (void, unvoid, re-link, rebuild their days) and on sites and resources (merge).

Every action goes through `accounting.services.admin_actions`: it is recorded in the audit log, then run by
a worker (`accounting.tasks.run_admin_action`) with its progress shown on the audit entry. Imported at the
end of `accounting/admin.py`, whose registrations it extends.
"""
from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db import transaction
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html

from accounting.admin import ResourceAdmin, SiteAdmin, UsageRecordAdmin
from accounting.models import (
    AuditEntry,
    ChargeFactor,
    Correction,
    Notice,
    Quota,
    QuotaAlert,
    RecordChange,
    Resource,
    Site,
    TopologyMerge,
    UsageRecord,
)
from accounting.services import admin_actions, audit, corrections, quota_requests
from accounting.services.corrections import CorrectionError
from accounting.services.record_actions import ActionError
from accounting.tasks import queue_admin_action


class ReadOnlyAdmin(admin.ModelAdmin):
    """History is written by the services, never edited by hand."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


def _queued(request, entry: AuditEntry) -> None:
    queue_admin_action(entry.pk)
    url = reverse("admin:accounting_auditentry_change", args=[entry.pk])
    messages.success(request, format_html('Queued: {} (<a href="{}">audit entry {}</a>, with its progress).', entry.target, url, entry.pk))


# Quotas ------------------------------------------------------------------------------------------------

@admin.register(Quota)
class QuotaAdmin(admin.ModelAdmin):
    list_display = ["subject_type", "subject", "vo", "metric", "period", "period_start", "period_end", "limit", "used", "status"]
    list_filter = ["status", "subject_type", "metric", "period"]
    list_select_related = ["vo"]
    search_fields = ["subject", "vo__name"]
    raw_id_fields = ["vo", "person", "project"]
    filter_horizontal = ["notify"]
    readonly_fields = ["subject", "window_start", "window_end", "used", "used_at", "run_watermark", "requested_by", "created_at", "decided_by", "decided_at"]
    actions = ["approve", "reject"]

    def save_model(self, request, obj, form, change):
        obj.used_at = None  # a new limit or thresholds: the next check (after a rebuild, or from beat) decides again
        if not change:
            obj.requested_by = request.user
        super().save_model(request, obj, form, change)
        changed = ", ".join(form.changed_data) if change else "added"
        audit.record(request.user, AuditEntry.Action.QUOTA_SET, f"{obj} (admin: {changed})", rows=1, details={"quota": obj.pk})

    @admin.action(description="Approve the selected quotas", permissions=["change"])
    def approve(self, request, queryset):
        for quota in queryset:
            quota_requests.decide(quota, request.user, approve=True)
        messages.success(request, f"{queryset.count()} quota(s) approved and checked.")

    @admin.action(description="Reject the selected quotas", permissions=["change"])
    def reject(self, request, queryset):
        for quota in queryset:
            quota_requests.decide(quota, request.user, approve=False)
        messages.success(request, f"{queryset.count()} quota(s) rejected.")


@admin.register(QuotaAlert)
class QuotaAlertAdmin(ReadOnlyAdmin):
    list_display = ["quota", "window_start", "threshold", "percent", "crossed_at", "cleared_at", "email_sent_at", "email_error"]
    list_filter = ["threshold", "cleared_at"]
    list_select_related = ["quota"]
    search_fields = ["quota__subject"]


@admin.register(Notice)
class NoticeAdmin(ReadOnlyAdmin):
    list_display = ["user", "message", "created_at", "read_at"]
    list_select_related = ["user"]
    search_fields = ["message", "user__username"]


# Corrections, history, audit -----------------------------------------------------------------------------

class CorrectionForm(forms.ModelForm):
    class Meta:
        model = Correction
        fields = ["field", "match", "pattern", "target", "active", "note"]

    def clean(self):
        data = super().clean()
        try:
            corrections.validate(data.get("field", ""), data.get("match", ""), data.get("pattern", ""), data.get("target", ""))
        except CorrectionError as exc:
            raise ValidationError(str(exc)) from None
        return data


@admin.register(Correction)
class CorrectionAdmin(admin.ModelAdmin):
    """Saving a correction does not change records; the actions apply or revert it in a worker."""

    form = CorrectionForm
    list_display = ["field", "match", "pattern", "target", "active", "rows_changed", "applied_at", "created_by"]
    list_filter = ["field", "match", "active"]
    search_fields = ["pattern", "target", "note"]
    readonly_fields = ["created_by", "created_at", "applied_at", "rows_changed"]
    actions = ["apply_corrections", "revert_corrections"]

    def save_model(self, request, obj, form, change):
        if not change:
            obj.created_by = request.user
        super().save_model(request, obj, form, change)

    @admin.action(description="Apply the selected corrections now (re-attribute records, rebuild their days)", permissions=["change"])
    def apply_corrections(self, request, queryset):
        self._queue(request, queryset, revert=False)

    @admin.action(description="Revert the selected corrections (restore the records they moved)", permissions=["change"])
    def revert_corrections(self, request, queryset):
        self._queue(request, queryset, revert=True)

    def _queue(self, request, queryset, revert: bool):
        for correction in queryset:
            try:
                with transaction.atomic():
                    _queued(request, admin_actions.queue_correction(request.user, correction, revert=revert))
            except CorrectionError as exc:
                messages.error(request, f"{correction}: {exc}")


@admin.register(RecordChange)
class RecordChangeAdmin(ReadOnlyAdmin):
    list_display = ["record", "field", "old_value", "new_value", "correction", "audit", "created_at"]
    list_filter = ["field"]
    list_select_related = ["record", "correction", "audit"]
    search_fields = ["record__natural_key"]
    show_full_result_count = False


@admin.register(AuditEntry)
class AuditEntryAdmin(ReadOnlyAdmin):
    list_display = ["created_at", "user", "action", "target", "rows", "days", "status", "progress", "finished_at"]
    list_filter = ["action", "status"]
    list_select_related = ["user"]
    search_fields = ["target", "user__username", "error"]
    date_hierarchy = "created_at"


@admin.register(TopologyMerge)
class TopologyMergeAdmin(ReadOnlyAdmin):
    list_display = ["kind", "old_name", "new_name", "records_moved", "merged_by", "merged_at"]
    list_filter = ["kind"]
    search_fields = ["old_name", "new_name"]


@admin.register(ChargeFactor)
class ChargeFactorAdmin(admin.ModelAdmin):
    list_display = ["resource", "factor", "valid_from"]
    list_select_related = ["resource"]
    search_fields = ["resource__name"]
    autocomplete_fields = ["resource"]


# Actions on records, sites and resources ----------------------------------------------------------------

def _form_page(request, queryset, form, title: str, action: str):
    """The intermediate page of an action that needs more input than the selection."""
    context = {
        **admin.site.each_context(request), "title": title, "form": form, "objects": queryset[:50],
        "count": queryset.count(), "action": action, "opts": queryset.model._meta,
        "selected": request.POST.getlist(admin.helpers.ACTION_CHECKBOX_NAME),
    }  # fmt: skip
    return TemplateResponse(request, "admin/accounting/action_form.html", context)


@admin.action(description="Void the selected records (exclude from summaries, keep)", permissions=["change"])
def void_records(modeladmin, request, queryset):
    _queued(request, admin_actions.queue_void(request.user, list(queryset.values_list("pk", flat=True)), void=True))


@admin.action(description="Unvoid the selected records", permissions=["change"])
def unvoid_records(modeladmin, request, queryset):
    _queued(request, admin_actions.queue_void(request.user, list(queryset.values_list("pk", flat=True)), void=False))


@admin.action(description="Rebuild the days of the selected records", permissions=["change"])
def rebuild_record_days(modeladmin, request, queryset):
    bounds = [(r.start.date(), r.end.date()) for r in queryset.only("start", "end")]
    entry = admin_actions.queue_rebuild(request.user, min(b[0] for b in bounds), max(b[1] for b in bounds))
    _queued(request, entry)


class RelinkForm(forms.Form):
    pilot = forms.CharField(label="Pilot (natural key, or glidein name)", max_length=500)

    def clean_pilot(self):
        value = self.cleaned_data["pilot"].strip()
        pilot = UsageRecord.objects.filter(kind="pilot", natural_key=value).first() or UsageRecord.objects.filter(
            kind="pilot", pilot__glidein_name=value
        ).order_by("-natural_key").first()
        if pilot is None:
            raise ValidationError(f"no pilot {value!r}")
        return pilot


@admin.action(description="Re-link the selected payload to a pilot…", permissions=["change"])
def relink_payload(modeladmin, request, queryset):
    if queryset.count() != 1 or queryset.first().kind != "payload":
        messages.error(request, "Select exactly one payload to re-link.")
        return None
    form = RelinkForm(request.POST if "apply" in request.POST else None)
    if form.is_valid():
        try:
            _queued(request, admin_actions.queue_relink(request.user, queryset.first(), form.cleaned_data["pilot"]))
        except ActionError as exc:
            messages.error(request, str(exc))
        return None
    return _form_page(request, queryset, form, "Re-link a payload to its pilot", "relink_payload")


UsageRecordAdmin.actions = [*(UsageRecordAdmin.actions or []), void_records, unvoid_records, relink_payload, rebuild_record_days]


class MergeForm(forms.Form):
    into = forms.ModelChoiceField(queryset=Site.objects.none(), label="Merge into")

    def __init__(self, *args, model=None, exclude=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["into"].queryset = model.objects.exclude(pk__in=exclude)


def _merge_action(kind: str, model):
    @admin.action(description=f"Merge the selected {kind}s into another (renamed {kind}; history kept)…", permissions=["change"])
    def merge(modeladmin, request, queryset):
        form = MergeForm(request.POST if "apply" in request.POST else None, model=model, exclude=queryset.values("pk"))
        if form.is_valid():
            for old in queryset:
                _queued(request, admin_actions.queue_merge(request.user, kind, old, form.cleaned_data["into"]))
            return None
        return _form_page(request, queryset, form, f"Merge {kind}s", f"merge_{kind}s")

    merge.__name__ = f"merge_{kind}s"
    return merge


SiteAdmin.actions = [*(SiteAdmin.actions or []), _merge_action("site", Site)]
ResourceAdmin.actions = [*(ResourceAdmin.actions or []), _merge_action("resource", Resource)]
