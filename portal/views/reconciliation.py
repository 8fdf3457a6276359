"""Reconciliation pages (admins only): the queues with their counts and contents, the APEL-style sync of
job counts, and the audited actions (correct a raw name, void/unvoid, re-link, re-ingest, rebuild)."""
from django import forms
from django.contrib import messages
from django.db import transaction
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_POST

from accounting.models import AuditEntry, Correction, UsageRecord
from accounting.services import admin_actions, audit, reconciliation
from accounting.services.corrections import CorrectionError
from accounting.services.record_actions import ActionError
from accounting.tasks import queue_admin_action
from ingest.models import Bundle
from ingest.tasks import queue_ingest
from portal import queues
from portal.api.publishing import ParameterError
from portal.api.reconciliation import sync_query
from portal.quota_access import admin_required

ROWS_SHOWN = 200


@admin_required
def overview(request):
    counts = queues.counts(refresh="refresh" in request.GET)
    recent = AuditEntry.objects.select_related("user")[:20]
    return render(request, "portal/reconciliation.html", {"counts": counts, "recent": recent, "forms": action_forms()})


@admin_required
def queue_page(request, name: str):
    if name not in queues.LABELS:
        raise Http404("no such queue")
    context = {"name": name, "label": queues.LABELS[name], "rows": [], "records": []}
    if name == "unmatched":
        context["rows"] = reconciliation.unmatched(ROWS_SHOWN)
        context["records"] = reconciliation.orphan_payloads().select_related("site", "vo")[:ROWS_SHOWN]
    elif name == "excess":
        context["rows"] = reconciliation.excess(ROWS_SHOWN)
    elif name in reconciliation.UNKNOWN:
        context["rows"] = reconciliation.unknown(name, ROWS_SHOWN)
        context["field"] = name.removeprefix("unknown_")
    elif name == "no_benchmark":
        context["rows"] = reconciliation.no_benchmark(ROWS_SHOWN)
    else:
        context["rows"] = queues.silent_sources()
        context["bundles"] = queues.bundle_mismatches(ROWS_SHOWN)
        context["silent_days"] = queues.silent_days()
    return render(request, "portal/reconciliation_queue.html", context)


@admin_required
def sync_page(request):
    try:
        query = sync_query(request.GET)
        rows = reconciliation.sync(query["first"], query["last"], query["sites"], query["mismatches_only"])
        error = None
    except ParameterError as exc:
        query, rows, error = None, [], f"{exc.parameter}: {exc}"
    csv_url = None
    if query:
        params = {"start": f"{query['first']:%Y-%m}", "end": f"{query['last']:%Y-%m}", "format": "csv"}
        if query["mismatches_only"]:
            params["mismatches"] = "1"
        csv_url = f"{reverse('api-reconciliation-sync')}?{urlencode([*params.items(), *(('site', s) for s in query['sites'])])}"
    return render(request, "portal/sync.html", {"query": query, "rows": rows, "error": error, "csv_url": csv_url})


# Actions ------------------------------------------------------------------------------------------------

class CorrectionForm(forms.Form):
    field = forms.ChoiceField(choices=Correction.Field.choices)
    match = forms.ChoiceField(choices=Correction.Match.choices)
    pattern = forms.CharField(max_length=500)
    target = forms.CharField(max_length=500, help_text="a known name")


class RecordsForm(forms.Form):
    records = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), help_text="natural keys, one per line")

    def clean_records(self) -> list[int]:
        keys = [line.strip() for line in self.cleaned_data["records"].splitlines() if line.strip()]
        found = dict(UsageRecord.objects.filter(natural_key__in=keys).values_list("natural_key", "pk"))
        missing = [key for key in keys if key not in found]
        if missing:
            raise forms.ValidationError(f"no record {missing[0]!r}" + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""))
        return list(found.values())


class RelinkForm(forms.Form):
    payload = forms.CharField(max_length=500, help_text="the payload's natural key")
    pilot = forms.CharField(max_length=500, help_text="the pilot's natural key")

    def clean(self):
        data = super().clean()
        for name, kind in (("payload", "payload"), ("pilot", "pilot")):
            record = UsageRecord.objects.filter(natural_key=data.get(name, ""), kind=kind).first()
            if record is None:
                self.add_error(name, f"no {kind} with that key")
            data[name] = record
        return data


class RangeForm(forms.Form):
    first = forms.DateField(widget=forms.DateInput(attrs={"type": "date"}))
    last = forms.DateField(widget=forms.DateInput(attrs={"type": "date"}), help_text="inclusive")


class BundleForm(forms.Form):
    bundle = forms.ModelChoiceField(queryset=Bundle.objects.all(), widget=forms.NumberInput, help_text="bundle id")


FORMS = {
    "correction": CorrectionForm, "void": RecordsForm, "unvoid": RecordsForm, "relink": RelinkForm,
    "rebuild": RangeForm, "reingest": BundleForm,
}  # fmt: skip


def action_forms(bound=None) -> dict:
    forms_ = {name: form_class(prefix=name) for name, form_class in FORMS.items()}
    if bound is not None:
        forms_[bound.prefix] = bound
    return forms_


@require_POST
@admin_required
def actions(request):
    name = request.POST.get("action", "")
    if name not in FORMS:
        raise Http404("no such action")
    form = FORMS[name](request.POST, prefix=name)
    if form.is_valid():
        try:
            with transaction.atomic():
                message = _do(request, name, form.cleaned_data)
        except (ActionError, CorrectionError) as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, message)
            return redirect("reconciliation")
    counts = queues.counts()
    recent = AuditEntry.objects.select_related("user")[:20]
    return render(request, "portal/reconciliation.html", {"counts": counts, "recent": recent, "forms": action_forms(form)}, status=400)


def _do(request, name: str, data: dict) -> str:
    """Record the action in the audit log and queue it (re-ingest: queue the bundle's ingest task)."""
    user = request.user
    if name == "reingest":
        bundle = data["bundle"]
        audit.record(user, AuditEntry.Action.REINGEST, f"bundle {bundle.pk} {bundle.original_name}", details={"bundle": bundle.pk})
        queue_ingest(bundle.pk)
        return f"Bundle {bundle.pk} queued for ingest again (its days are rebuilt when it is done)."
    if name == "correction":
        correction, _ = Correction.objects.get_or_create(
            field=data["field"], match=data["match"], pattern=data["pattern"],
            defaults={"target": data["target"], "created_by": user},
        )  # fmt: skip
        if correction.target != data["target"]:
            Correction.objects.filter(pk=correction.pk).update(target=data["target"], active=True)
            correction.target = data["target"]
        entry = admin_actions.queue_correction(user, correction)
    elif name in ("void", "unvoid"):
        entry = admin_actions.queue_void(user, data["records"], void=name == "void")
    elif name == "relink":
        entry = admin_actions.queue_relink(user, data["payload"], data["pilot"])
    else:
        entry = admin_actions.queue_rebuild(user, data["first"], data["last"])
    queue_admin_action(entry.pk)
    return f"Queued: {entry.get_action_display()} {entry.target} (audit entry {entry.pk})."
