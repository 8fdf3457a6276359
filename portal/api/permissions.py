"""API permissions by role (`portal/roles.py`): the scope decides, nothing else."""
from rest_framework import permissions

from portal.roles import scope_of


class CanSeeAggregates(permissions.BasePermission):
    """Council, VO managers and admins (reported totals per site, VO, project, science domain)."""

    message = "Your account has no reporting role (council, vo_manager or admin); ask an admin."

    def has_permission(self, request, view):
        return scope_of(request.user).aggregates


class CanSeePeople(permissions.BasePermission):
    """Admins and VO managers (person-level rows, scoped to the manager's VOs)."""

    message = "Person-level rows (DNs) are visible to admins and to VO managers for their own VOs only."

    def has_permission(self, request, view):
        return scope_of(request.user).people
