"""Role links: which VOs a VO manager manages (DOMAIN.md "Who uses it").

The roles themselves are Django groups (`council`, `vo_manager`) and the staff flag (admins); see
`portal/roles.py`. This table only says, for a VO manager, whose person-level rows they may see.
"""
from django.conf import settings
from django.db import models


class VOManager(models.Model):
    """A VO manager's link to one VO they manage: that VO's person-level rows (DNs, per-user usage)
    become visible to them, and no other VO's."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="managed_vo_links")
    vo = models.ForeignKey("accounting.VO", on_delete=models.CASCADE, related_name="manager_links")

    class Meta:
        verbose_name = "VO manager"
        constraints = [models.UniqueConstraint(fields=["user", "vo"], name="vomanager_unique_user_vo")]

    def __str__(self) -> str:
        return f"{self.user} manages {self.vo}"
