from django.core.management.base import BaseCommand, CommandError

from accounting.services.summaries import rebuild
from ingest.management.bundle_report import ingest_with_report
from ingest.models import Bundle
from ingest.services import store


class Command(BaseCommand):
    help = (
        "Re-parse kept bundles from the bundle store (after a parser fix) through the ingest path, then rebuild "
        "the days they touched. Counts start afresh; rows already there become duplicates or updates."
    )

    def add_arguments(self, parser):
        parser.add_argument("bundle_ids", nargs="+", type=int, metavar="BUNDLE_ID")
        parser.add_argument("--no-rebuild", action="store_true", help="leave the summaries for a later rebuild")
        parser.add_argument("--force", action="store_true", help="also re-parse a bundle marked running (its worker died)")

    def handle(self, bundle_ids, no_rebuild=False, force=False, **options):
        bad = 0
        first_days, last_days = [], []
        for bundle_id in bundle_ids:
            bundle = Bundle.objects.filter(pk=bundle_id).first()
            problem = self.problem(bundle, bundle_id, force)
            if problem:
                self.stderr.write(f"bundle {bundle_id}: {problem}")
                bad += 1
                continue
            # The days the bundle covered before: records the fix now rejects or moves still count there.
            if bundle.first_day and bundle.last_day:
                first_days.append(bundle.first_day)
                last_days.append(bundle.last_day)
            bundle = ingest_with_report(self, bundle, f"bundle {bundle_id}", show_updated=True)
            if bundle.first_day and bundle.last_day:
                first_days.append(bundle.first_day)
                last_days.append(bundle.last_day)
        if first_days and not no_rebuild:
            run = rebuild(min(first_days), max(last_days))
            self.stdout.write(f"rebuilt {run.start}..{run.end}: {run.rows} summary rows")
        if bad:
            raise CommandError(f"{bad} bundle(s) could not be re-parsed")

    @staticmethod
    def problem(bundle: Bundle | None, bundle_id: int, force: bool) -> str:
        if bundle is None:
            return "no such bundle"
        try:
            path = store.absolute(bundle.stored_path)
        except ValueError as exc:
            return str(exc)
        if not path.is_file():
            return f"its stored file {bundle.stored_path} is missing from the bundle store ({store.store_root()})"
        if bundle.status == Bundle.Status.RUNNING and not force:
            return "is being ingested now (status running); add --force if its worker died"
        return ""
