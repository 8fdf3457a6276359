"""Quota pages: the list with the set/request form, one quota's gauge and used-over-time chart against its
limit with a forecast, approving requests (admins), and the user's in-app notices."""
from datetime import timedelta

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from accounting.models import Notice, Quota
from accounting.services import quota_requests, quotas
from accounting.services.quota_requests import QuotaError
from portal import quota_access
from portal.quota_access import admin_required, quota_role_required
from portal.quota_forms import QuotaForm


def _choices(user) -> dict:
    """Names offered in the form: a VO manager's own VOs, members and projects; nothing listed for admins."""
    managed = quota_access.managed_vo_ids(user)
    if quota_access.is_admin(user) or not managed:
        return {}
    from accounting.models import VO

    return {
        "vos": list(VO.objects.filter(pk__in=managed).order_by("name").values_list("name", flat=True)),
        "people": list(quota_access.member_people(managed).order_by("name").values_list("name", flat=True)[:2000]),
        "projects": list(quota_access.member_projects(managed).order_by("name").values_list("name", flat=True)[:2000]),
    }


def _submit(request, form: QuotaForm):
    """Build, check and save the quota of a valid form; None (errors on the form) when it cannot be."""
    user = request.user
    data = dict(form.cleaned_data)
    admin = quota_access.is_admin(user)
    if not admin and not data["vo"] and data["subject_type"] != Quota.Subject.VO:
        data["vo"] = quota_access.only_managed_vo(user)
    try:
        quota = quota_requests.build(**data)
    except QuotaError as exc:
        hidden = not admin and exc.parameter in ("subject", "vo")
        form.add_error(exc.parameter if exc.parameter in form.fields else None, "no such subject in your VOs" if hidden else exc.message)
        return None
    if not quota_access.may_request(user, quota):
        form.add_error("subject", "no such subject in your VOs")
        return None
    with transaction.atomic():
        return quota_requests.save(quota, user, approved=admin)


@quota_role_required
def quota_list(request):
    user = request.user
    may_submit = quota_access.is_admin(user) or bool(quota_access.managed_vo_ids(user))
    form = QuotaForm(request.POST or None, initial={"period_start": timezone.now().date().replace(day=1)}) if may_submit else None
    if request.method == "POST":
        if form is None:
            return quota_access_denied(request)
        if form.is_valid() and (quota := _submit(request, form)) is not None:
            verb = "set" if quota.status == Quota.Status.APPROVED else "requested (an admin approves it)"
            messages.success(request, f"Quota {verb}: {quota}.")
            return redirect("quota-detail", pk=quota.pk)
    rows = quota_access.visible_quotas(user).select_related("vo").order_by("status", "subject_type", "subject", "pk")
    return render(request, "portal/quota_list.html", {
        "quotas": rows, "form": form, "is_admin": quota_access.is_admin(user), "choices": _choices(user),
    })  # fmt: skip


def quota_access_denied(request):
    from portal.views.access import forbidden

    return forbidden(request, "Only admins set quotas, and VO managers request them for their VOs.")


@quota_role_required
def quota_detail(request, pk: int):
    quota = get_object_or_404(quota_access.visible_quotas(request.user).select_related("vo"), pk=pk)
    day = quotas.today()
    current = quotas.state(quota, day)
    context = {"quota": quota, "current": current, "is_admin": quota_access.is_admin(request.user), "day": day}
    if current is not None:
        bounds = (current.period_start, current.period_end)
        ahead = quotas.forecast(quota, current.used, bounds, day)
        running, days, cumulative = 0.0, [], []
        for when, value in quotas.daily_usage(quota, bounds):
            running += value
            days.append(when.isoformat())
            cumulative.append(round(running, 6))
        last_day = bounds[1] - timedelta(days=1)
        context.update(forecast=ahead, chart_data={
            "days": days, "cumulative": cumulative, "limit": quota.limit, "unit": quota.get_metric_display(),
            "window": [bounds[0].isoformat(), last_day.isoformat()], "percent": current.percent,
            "thresholds": quota.thresholds,
            "forecast": {"x": [min(day, last_day).isoformat(), last_day.isoformat()], "y": [round(current.used, 6), round(ahead.at_end, 6)]},
        })  # fmt: skip
    context["alerts"] = quota.alerts.all()[:50]
    return render(request, "portal/quota_detail.html", context)


@require_POST
@admin_required
def quota_decide(request, pk: int):
    quota = get_object_or_404(Quota, pk=pk)
    approve = request.POST.get("decision") == "approve"
    quota_requests.decide(quota, request.user, approve=approve)
    messages.success(request, f"Quota {'approved' if approve else 'rejected'}: {quota}.")
    return redirect("quota-detail", pk=pk)


@login_required
def notice_list(request):
    notices = Notice.objects.filter(user=request.user)
    if request.method == "POST":
        notices.filter(read_at__isnull=True).update(read_at=timezone.now())
        return redirect("notices")
    return render(request, "portal/notices.html", {"notices": notices.select_related("quota")[:200]})
