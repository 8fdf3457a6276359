"""The quota scope read in one statement for the per-job check agrees with the roles' own scope
(`portal.roles.scope_of`) and with Django's permissions, for every kind of account; the check's token lookup
answers like DRF's."""
import pytest
from django.contrib.auth.models import Group, Permission, User
from django.urls import reverse
from rest_framework.authtoken.models import Token

from portal.models import VOManager
from portal.quota_access import quota_scope
from portal.roles import VO_MANAGER, scope_of

pytestmark = pytest.mark.django_db


def accounts(grid, admin, council, manager, member) -> dict:
    view_quota = Permission.objects.get(codename="view_quota")
    staff = User.objects.create_user("staff-only", is_staff=True)
    both = User.objects.create_user("two-vos")
    both.groups.add(Group.objects.get(name="vo_manager"), Group.objects.get(name="council"))
    for vo in grid.vos.values():
        VOManager.objects.create(user=both, vo=vo)
    unlinked = User.objects.create_user("no-links")
    unlinked.groups.add(Group.objects.get(name="vo_manager"))
    linked_not_manager = User.objects.create_user("links-no-group")
    VOManager.objects.create(user=linked_not_manager, vo=grid.vos["cms"])
    gatekeeper = User.objects.create_user("gatekeeper")
    gatekeeper.user_permissions.add(view_quota)
    readers = Group.objects.create(name="quota-readers")
    readers.permissions.add(view_quota)
    group_reader = User.objects.create_user("group-reader")
    group_reader.groups.add(readers)
    inactive = User.objects.create_user("gone", is_active=False)
    inactive.user_permissions.add(view_quota)
    return {u.username: u for u in (admin, council, manager, member, staff, both, unlinked, linked_not_manager,
                                     gatekeeper, group_reader, inactive)}  # fmt: skip


def expected(user) -> tuple[bool, frozenset]:
    fresh = User.objects.get(pk=user.pk)
    scope = scope_of(fresh)
    if scope.is_admin or (fresh.is_active and fresh.has_perm("accounting.view_quota")):
        return True, frozenset()
    return False, frozenset(scope.person_vo_ids or ()) if scope.role == VO_MANAGER else frozenset()


def test_quota_scope_agrees_with_the_roles_and_permissions(grid, admin, council, manager, member):
    users = accounts(grid, admin, council, manager, member)
    got = {name: (s.all, s.vo_ids) for name, s in ((n, quota_scope(User.objects.get(pk=u.pk))) for n, u in users.items())}
    assert got == {name: expected(user) for name, user in users.items()}
    assert got["cms-manager"] == (False, frozenset({grid.vos["cms"].pk}))
    assert got["two-vos"] == (False, frozenset(v.pk for v in grid.vos.values()))
    assert got["gatekeeper"] == got["group-reader"] == (True, frozenset())
    assert got["gone"] == got["council"] == got["no-links"] == got["links-no-group"] == (False, frozenset())


def test_the_check_answers_401_for_a_bad_token_or_an_inactive_user(client, grid, member):
    url = reverse("api-quota-check") + "?subject_type=vo&subject=cms"
    assert client.get(url, HTTP_AUTHORIZATION="Token nope").status_code == 401
    token = Token.objects.create(user=member)
    assert client.get(url, HTTP_AUTHORIZATION=f"Token {token.key}").status_code == 403  # a valid token, no quota role
    User.objects.filter(pk=member.pk).update(is_active=False)
    assert client.get(url, HTTP_AUTHORIZATION=f"Token {token.key}").status_code == 401
