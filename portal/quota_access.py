"""Who may see and do what with quotas, reconciliation and publishing, on top of the roles' one scope
(`portal.roles.scope_of`, `portal.scope.visible_to`):

- admins (staff) see and set every quota, decide requests, and alone open reconciliation and publishing;
- VO managers see the quotas of their own VOs (a VO's quota, and person and project quotas counted in that
  VO) and request quotas for their VOs and their VOs' members and projects, never another VO's;
- an account with the `accounting.view_quota` permission (a gatekeeper's) reads every quota and check;
- anyone else has no quota access.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import wraps

from django.contrib.auth.decorators import login_required
from django.db import connection
from django.db.models import Q

from accounting.models import VO, DailyUsage, Person, Project, Quota, UsageRecord
from portal.roles import VO_MANAGER, scope_of

ADMIN_ONLY = "Reconciliation and publishing are for admins (staff) only."
NO_QUOTA_ROLE = "Quotas are for admins, and for VO managers about their own VOs."


@dataclass(frozen=True)
class QuotaScope:
    """The quotas one user may see: all of them, or those of some VOs (none: no quota access)."""

    all: bool
    vo_ids: frozenset[int]

    @property
    def any(self) -> bool:
        return self.all or bool(self.vo_ids)


NO_QUOTAS = QuotaScope(all=False, vo_ids=frozenset())


def quota_scope(user) -> QuotaScope:
    """Computed once per request (cached on the user object) in one statement (the gatekeeper's check is
    called per job): staff see every quota, as do holders of `accounting.view_quota` (directly or through a
    group); a VO manager (group `vo_manager`) sees the quotas of the VOs they are linked to
    (`portal.models.VOManager`), exactly as `portal.roles.scope_of` decides (a test holds the two together)."""
    if user is None or not user.is_authenticated or not user.is_active:
        return NO_QUOTAS
    cached = getattr(user, "_gridledger_quota_scope", None)
    if cached is not None:
        return cached
    if user.is_staff or user.is_superuser:
        result = QuotaScope(all=True, vo_ids=frozenset())
    else:
        with connection.cursor() as cursor:
            cursor.execute(SCOPE_SQL, [user.pk] * 4)
            rows = cursor.fetchall()
        reader, manager = bool(rows[0][1]), bool(rows[0][2])
        managed = frozenset(row[0] for row in rows[1:]) if manager else frozenset()
        result = QuotaScope(all=reader, vo_ids=managed)
    user._gridledger_quota_scope = result
    return result


SCOPE_SQL = """
SELECT NULL,
       EXISTS (SELECT 1 FROM auth_permission p JOIN django_content_type ct ON ct.id = p.content_type_id
                WHERE ct.app_label = 'accounting' AND p.codename = 'view_quota' AND (
                      p.id IN (SELECT permission_id FROM auth_user_user_permissions WHERE user_id = %s)
                      OR p.id IN (SELECT gp.permission_id FROM auth_group_permissions gp
                                  JOIN auth_user_groups ug ON ug.group_id = gp.group_id WHERE ug.user_id = %s))),
       EXISTS (SELECT 1 FROM auth_user_groups ug JOIN auth_group g ON g.id = ug.group_id
                WHERE ug.user_id = %s AND g.name = 'vo_manager')
UNION ALL
SELECT vo_id, NULL, NULL FROM portal_vomanager WHERE user_id = %s
"""


def is_admin(user) -> bool:
    return scope_of(user).is_admin


def managed_vo_ids(user) -> frozenset[int]:
    """The VOs a VO manager manages (empty for every other role)."""
    scope = scope_of(user)
    return frozenset(scope.person_vo_ids or ()) if scope.role == VO_MANAGER else frozenset()


def only_managed_vo(user) -> str:
    """The name of the one VO a VO manager manages ("" when none or several): the default VO of a request."""
    managed = managed_vo_ids(user)
    return VO.objects.get(pk=next(iter(managed))).name if len(managed) == 1 else ""


def reads_all_quotas(user) -> bool:
    return quota_scope(user).all


def may_use_quotas(user) -> bool:
    return quota_scope(user).any


def visible_quotas(user, queryset=None):
    """The quotas `user` may see."""
    queryset = Quota.objects.all() if queryset is None else queryset
    scope = quota_scope(user)
    if scope.all:
        return queryset
    return queryset.filter(vo_id__in=scope.vo_ids) if scope.vo_ids else queryset.none()


def member_people(vo_ids) -> object:
    """People with usage in the VOs (their members, as far as accounting knows)."""
    return Person.objects.filter(
        Q(pk__in=DailyUsage.objects.filter(vo_id__in=vo_ids).values("person_id"))
        | Q(pk__in=UsageRecord.objects.filter(vo_id__in=vo_ids).values("person_id"))
    )


def member_projects(vo_ids) -> object:
    return Project.objects.filter(
        Q(pk__in=DailyUsage.objects.filter(vo_id__in=vo_ids).values("project_id"))
        | Q(pk__in=UsageRecord.objects.filter(vo_id__in=vo_ids).values("project_id"))
    )


def may_request(user, quota: Quota) -> bool:
    """Whether a VO manager may request this (unsaved) quota: for one of their VOs, and for a person or
    project, one with usage in that VO. Admins may set any quota."""
    if is_admin(user):
        return True
    managed = managed_vo_ids(user)
    if quota.vo_id is None or quota.vo_id not in managed:
        return False
    if quota.subject_type == Quota.Subject.USER:
        return member_people([quota.vo_id]).filter(pk=quota.person_id).exists()
    if quota.subject_type == Quota.Subject.PROJECT:
        return member_projects([quota.vo_id]).filter(pk=quota.project_id).exists()
    return True


def admin_required(view):
    """Log in first, then 403 (the roles' page) unless the user is an admin."""
    from portal.views.access import forbidden

    @login_required
    @wraps(view)
    def wrapped(request, *args, **kwargs):
        if not is_admin(request.user):
            return forbidden(request, ADMIN_ONLY)
        return view(request, *args, **kwargs)

    return wrapped


def quota_role_required(view):
    """Log in first, then 403 unless the user may use quotas at all."""
    from portal.views.access import forbidden

    @login_required
    @wraps(view)
    def wrapped(request, *args, **kwargs):
        if not may_use_quotas(request.user):
            return forbidden(request, NO_QUOTA_ROLE)
        return view(request, *args, **kwargs)

    return wrapped
