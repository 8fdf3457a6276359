from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from accounting.services.summaries import rebuild
from ingest.management.bundle_report import ingest_with_report
from ingest.parsers import PARSERS
from ingest.services.bundles import create_bundle_from_path


class Command(BaseCommand):
    help = "Ingest files, directories or archives now, in this process, then rebuild the days they touched."

    def add_arguments(self, parser):
        parser.add_argument("paths", nargs="+", type=Path)
        parser.add_argument("--format", dest="fmt", choices=sorted(PARSERS), help="force a format (default: detect)")
        parser.add_argument("--source", default="", help="a label for where the files came from")
        parser.add_argument("--site", default="", help="site name for formats that carry none")
        parser.add_argument("--schedd", default="", help="factory schedd of completed_jobs logs (their lines name only cluster.proc)")
        parser.add_argument("--no-rebuild", action="store_true", help="leave the summaries for a later rebuild")

    def handle(self, paths, fmt=None, source="", site="", schedd="", no_rebuild=False, **options):
        unreadable = 0
        first_days, last_days = [], []
        for path in paths:
            if not path.exists():
                self.stderr.write(f"{path}: no such file or directory")
                unreadable += 1
                continue
            try:
                bundle = create_bundle_from_path(path, fmt=fmt or "", source=source, site=site, schedd=schedd)
            except (OSError, ValueError) as exc:
                self.stderr.write(f"{path}: cannot read: {exc}")
                unreadable += 1
                continue
            bundle = ingest_with_report(self, bundle, path.name)
            if bundle.records_read == 0 and bundle.rejected and bundle.status == bundle.Status.FAILED:
                unreadable += 1
            if bundle.first_day:
                first_days.append(bundle.first_day)
                last_days.append(bundle.last_day)
        if first_days and not no_rebuild:
            run = rebuild(min(first_days), max(last_days))
            self.stdout.write(f"rebuilt {run.start}..{run.end}: {run.rows} summary rows")
        if unreadable:
            raise CommandError(f"{unreadable} path(s) could not be read")
