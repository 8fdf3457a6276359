"""The API's admin-only permission (reconciliation and publishing), from the roles' scope."""
from rest_framework import permissions

from portal import quota_access


class IsPortalAdmin(permissions.BasePermission):
    message = quota_access.ADMIN_ONLY

    def has_permission(self, request, view):
        return quota_access.is_admin(request.user)
