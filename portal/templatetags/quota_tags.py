"""Template helpers of the quota and reconciliation pages: queue counts (admin index), unread notices,
a quota's percentage."""
from django import template

from accounting.models import Notice

register = template.Library()


@register.simple_tag
def reconciliation_queues() -> dict:
    """The reconciliation queues with their counts (cached; `portal/queues.py`)."""
    from portal import queues

    return queues.counts()


@register.simple_tag
def unread_notices(user) -> int:
    if not getattr(user, "is_authenticated", False):
        return 0
    return Notice.objects.filter(user=user, read_at__isnull=True).count()


@register.filter
def quota_percent(quota) -> float | None:
    """Percent of the limit used in the cached window (None before the first check)."""
    if quota.used_at is None or not quota.limit:
        return None
    return 100.0 * quota.used / quota.limit


@register.filter
def bar_width(percent) -> str:
    """A CSS width for a usage bar (capped at 100 %)."""
    try:
        return f"{min(100.0, max(0.0, float(percent))):.1f}%"
    except (TypeError, ValueError):
        return "0%"
