"""DRF's token authentication with the lookup as one fixed statement, for the endpoint called per job
(`GET /api/v1/quotas/check/`): same tokens, same answers (401 for a bad token or an inactive user), without
the ORM building the query on every call."""
from django.contrib.auth import get_user_model
from django.utils.translation import gettext_lazy as _
from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication


class TokenLookup(TokenAuthentication):
    def authenticate_credentials(self, key):
        model = get_user_model()
        sql = (
            f"SELECT u.* FROM {model._meta.db_table} u JOIN authtoken_token t ON t.user_id = u.{model._meta.pk.column} "
            "WHERE t.key = %s"
        )
        users = list(model.objects.raw(sql, [key]))
        if not users:
            raise exceptions.AuthenticationFailed(_("Invalid token."))
        if not users[0].is_active:
            raise exceptions.AuthenticationFailed(_("User inactive or deleted."))
        return users[0], key
