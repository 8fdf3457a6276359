from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from accounting.services.mappings import COLUMNS, MappingError, import_mappings


class Command(BaseCommand):
    help = "Load or update a mapping table from CSV (columns in CONTRACT.md); idempotent."

    def add_arguments(self, parser):
        parser.add_argument("kind", choices=sorted(COLUMNS))
        parser.add_argument("file", type=Path)

    def handle(self, kind, file, **options):
        try:
            result = import_mappings(kind, file)
        except MappingError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"{kind}: created={result.created} updated={result.updated} unchanged={result.unchanged}")
        self.stdout.write("Run `manage.py rebuild_summaries` for the summaries to use the new mappings.")
