"""`manage.py grant_role USERNAME council|admin|vo_manager [--vo NAME ...]` (CONTRACT.md)."""
from django.core.management.base import BaseCommand, CommandError

from portal.roles import ROLES, RoleError, grant_role


class Command(BaseCommand):
    help = "Give a user a role (creating the user when missing); a VO manager manages the VOs named with --vo."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("role", choices=ROLES)
        parser.add_argument("--vo", action="append", default=[], metavar="NAME", help="a VO the manager manages (repeatable)")

    def handle(self, username, role, vo, **options):
        try:
            user, created = grant_role(username, role, vo)
        except RoleError as exc:
            raise CommandError(str(exc)) from None
        what = f"{role}" + (f" of {', '.join(vo)}" if vo else "")
        self.stdout.write(f"{'created' if created else 'updated'} user {user.username}: {what}")
        if created:
            self.stdout.write(f"no password set: run `manage.py changepassword {user.username}` or create_api_token")
