"""Roles (DOMAIN.md "Who uses it") and what each may see, decided in one place.

- admin (staff): everything, Django admin included;
- council (group `council`): every aggregate, no person-level row (DNs are personal data);
- VO manager (group `vo_manager`, linked to VOs by `VOManager`): every aggregate, plus the
  person-level rows of their own VOs only;
- any other signed-in user: their own bundles only; anonymous: the login page (and the dashboard
  when `GRIDLEDGER_PUBLIC_SUMMARY` is on).

A user with several roles gets the union of their rights. `scope_of(user)` is what every page, API
view and export asks; `portal/scope.py` turns it into querysets.
"""
from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction

from accounting.models import VO

ADMIN = "admin"
PUBLIC = "public"
COUNCIL = "council"
VO_MANAGER = "vo_manager"
ROLES = (COUNCIL, ADMIN, VO_MANAGER)
GROUPS = (COUNCIL, VO_MANAGER)


@dataclass(frozen=True)
class Scope:
    """What one user may see. `person_vo_ids`: the VOs whose person-level rows are visible
    (None: every VO; empty: none)."""

    role: str | None
    person_vo_ids: frozenset[int] | None

    @property
    def aggregates(self) -> bool:
        """May read reported totals per site, VO, project, science domain (any role)."""
        return self.role is not None

    @property
    def people(self) -> bool:
        """May open person-level views at all (admins; VO managers, limited to their VOs)."""
        return self.person_vo_ids is None or self.role == VO_MANAGER

    @property
    def all_people(self) -> bool:
        return self.person_vo_ids is None

    @property
    def is_admin(self) -> bool:
        return self.role == ADMIN


NOBODY = Scope(role=None, person_vo_ids=frozenset())
# Anonymous visitors when GRIDLEDGER_PUBLIC_SUMMARY is on: aggregates, and only the pages open to
# anonymous visitors (the dashboard) let them in.
PUBLIC_SCOPE = Scope(role=PUBLIC, person_vo_ids=frozenset())


def scope_of(user) -> Scope:
    """The user's scope, computed once per request (cached on the user object)."""
    if user is None or not user.is_authenticated:
        return PUBLIC_SCOPE if settings.GRIDLEDGER_PUBLIC_SUMMARY else NOBODY
    if not user.is_active:
        return NOBODY
    cached = getattr(user, "_gridledger_scope", None)
    if cached is not None:
        return cached
    if user.is_staff or user.is_superuser:
        scope = Scope(role=ADMIN, person_vo_ids=None)
    else:
        groups = set(user.groups.filter(name__in=GROUPS).values_list("name", flat=True))
        if VO_MANAGER in groups:
            vo_ids = frozenset(user.managed_vo_links.values_list("vo_id", flat=True))
            scope = Scope(role=VO_MANAGER, person_vo_ids=vo_ids)
        elif COUNCIL in groups:
            scope = Scope(role=COUNCIL, person_vo_ids=frozenset())
        else:
            scope = NOBODY
    user._gridledger_scope = scope
    return scope


class RoleError(ValueError):
    """A role cannot be granted as asked (unknown role or VO, VO manager without VOs)."""


@transaction.atomic
def grant_role(username: str, role: str, vo_names: list[str] | tuple[str, ...] = ()) -> tuple[object, bool]:
    """Give `username` a role, creating the user (without a usable password) when missing.

    `admin` makes the user staff and superuser; `council` and `vo_manager` add the group; a VO
    manager is linked to every VO named (which must exist). Returns (user, created)."""
    if role not in ROLES:
        raise RoleError(f"unknown role {role!r}; use {', '.join(ROLES)}")
    vos = []
    if role == VO_MANAGER:
        if not vo_names:
            raise RoleError("a VO manager needs at least one --vo NAME")
        known = dict(VO.objects.filter(name__in=vo_names).values_list("name", "pk"))
        missing = [name for name in vo_names if name not in known]
        if missing:
            raise RoleError(f"unknown VO {', '.join(repr(m) for m in missing)}")
        vos = [known[name] for name in vo_names]
    elif vo_names:
        raise RoleError("--vo only applies to the vo_manager role")
    user_model = get_user_model()
    user, created = user_model.objects.get_or_create(username=username)
    if created:
        user.set_unusable_password()
        user.save()
    if role == ADMIN:
        user.is_staff = user.is_superuser = True
        user.save(update_fields=["is_staff", "is_superuser"])
    else:
        group, _ = Group.objects.get_or_create(name=role)
        user.groups.add(group)
    from portal.models import VOManager

    for vo_id in vos:
        VOManager.objects.get_or_create(user=user, vo_id=vo_id)
    return user, created
