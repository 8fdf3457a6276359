"""`manage.py refresh_rollups [--full]`: bring the month rollup of the summaries up to date (portal/rollups.py)."""
import time

from django.core.management.base import BaseCommand

from portal import rollups


class Command(BaseCommand):
    help = "Refresh the month rollup from the daily summaries after rebuilds (all months with --full)."

    def add_arguments(self, parser):
        parser.add_argument("--full", action="store_true")

    def handle(self, full, **options):
        began = time.monotonic()
        months = rollups.refresh(full=full)
        self.stdout.write(f"months={months} seconds={time.monotonic() - began:.1f} fresh={rollups.rollup_is_fresh()}")
