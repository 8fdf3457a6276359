"""`manage.py demo`: a synthetic month of grid accounting data, loaded the way real data is (README, `make demo`).

Writes the month with `ingest.synthetic.generate` in the real file formats, loads the mapping CSVs,
ingests every history file as a bundle through the real parser (as `manage.py ingest` does), rebuilds
the summaries of the month once, and creates (or resets) the superuser demo / demo.

Idempotent: when records of `demo` bundles exist already, nothing is loaded again (the login is still
made sure of). `--force` replaces them: the earlier demo bundles and their records are deleted first, and
the days either month touched are rebuilt.
"""
from __future__ import annotations

import time
from datetime import UTC, date, datetime
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.db.models import Max, Min, Sum
from tqdm import tqdm

from accounting.choices import Designation
from accounting.models import DailyUsage, UsageRecord
from accounting.services.mappings import MappingError, import_mappings
from accounting.services.summaries import rebuild
from ingest.management.bundle_report import ingest_with_report
from ingest.models import Bundle
from ingest.services.bundles import create_bundle_from_path
from ingest.synthetic import generate

SOURCE = "demo"
USERNAME = "demo"
# The demo login is public by design (README, `make demo`); never a production credential.
PASSWORD = "demo"  # noqa: S105
URL_LINE = "Open http://127.0.0.1:8000/ and log in as demo / demo"


def parse_end(value) -> datetime | None:
    """`--end`: YYYY-MM-DD (midnight UTC) or an ISO date-time; None: now."""
    if value in (None, ""):
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=UTC)
    try:
        parsed = datetime.fromisoformat(str(value))
    except ValueError:
        raise CommandError(f"--end {value!r} is not a date (YYYY-MM-DD) or ISO date-time") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


class Command(BaseCommand):
    help = "Generate a synthetic month of grid accounting data, ingest it, rebuild summaries and create the demo login."

    def add_arguments(self, parser):
        parser.add_argument("--dir", type=Path, default=None, help="where to write the files (default: VAR_DIR/demo-data)")
        parser.add_argument("--seed", type=int, default=42)
        parser.add_argument("--scale", type=float, default=1.0, help="1.0: ~5,000 pilots and ~50,000 payloads")
        parser.add_argument("--end", default=None, help="end of the month of data, YYYY-MM-DD or ISO date-time (default: now)")
        parser.add_argument("--force", action="store_true", help="replace the demo data even if it is loaded already")

    def handle(self, *args, dir=None, seed=42, scale=1.0, end=None, force=False, **options):
        directory = Path(dir) if dir else Path(settings.VAR_DIR) / "demo-data"
        seed, scale = int(seed), float(scale)
        if scale <= 0:
            raise CommandError("--scale must be positive")
        end_time = parse_end(end)
        demo_records = UsageRecord.objects.filter(bundle__source_label=SOURCE)
        if demo_records.exists() and not force:
            self._ensure_user()
            self.stdout.write(
                f"Demo data is loaded already ({demo_records.count()} records); use --force to replace it."
            )
            self.stdout.write(URL_LINE)
            return

        old_range = self._delete_previous() if force else None

        started = time.monotonic()
        manifest = generate(directory, seed=seed, scale=scale, end=end_time)
        generated = time.monotonic()
        self.stdout.write(
            f"generated {manifest.start:%Y-%m-%d %H:%M}..{manifest.end:%Y-%m-%d %H:%M} UTC in {directory}: "
            f"pilots={manifest.pilots} payloads={manifest.payloads} batch={manifest.batch} "
            f"orphan_payloads={manifest.orphan_payloads} ({generated - started:.1f} s)"
        )

        for kind, path in manifest.mappings.items():
            try:
                result = import_mappings(kind, path)
            except MappingError as exc:
                raise CommandError(str(exc)) from None
            self.stdout.write(f"mappings {kind}: created={result.created} updated={result.updated} unchanged={result.unchanged}")

        first_days, last_days = [], []
        rejected = 0
        inputs = [(item.path, item.fmt, item.site) for item in manifest.files]
        if manifest.snapshots is not None:
            inputs.append((manifest.snapshots, "snapshot", ""))  # capacity and demand: categories 7 and 8
        for path, fmt, site in inputs:
            bundle = create_bundle_from_path(path, fmt=fmt, source=SOURCE, site=site)
            bundle = ingest_with_report(self, bundle, str(path.relative_to(directory)))
            rejected += bundle.rejected
            if bundle.first_day:
                first_days.append(bundle.first_day)
                last_days.append(bundle.last_day)
        ingested = time.monotonic()

        if old_range:
            first_days.append(old_range[0])
            last_days.append(old_range[1])
        if first_days:
            first, last = min(first_days), max(last_days)
            with tqdm(total=(last - first).days + 1, unit="day", desc="rebuild", disable=None, file=self.stderr._out) as bar:

                def rebuilt(done, total, bar=bar):
                    bar.n = done
                    bar.refresh()

                run = rebuild(first, last, progress=rebuilt)
            self.stdout.write(f"rebuilt {run.start}..{run.end}: {run.rows} summary rows")
        rebuilt_at = time.monotonic()

        self._ensure_user()
        self._report(manifest, rejected)
        self.stdout.write(
            f"timings: generate {generated - started:.1f} s, ingest {ingested - generated:.1f} s, "
            f"rebuild {rebuilt_at - ingested:.1f} s"
        )
        self.stdout.write(URL_LINE)

    def _delete_previous(self) -> tuple[date, date] | None:
        """Delete the earlier demo bundles and their records; return the days they touched."""
        bundles = Bundle.objects.filter(source_label=SOURCE)
        records = UsageRecord.objects.filter(bundle__in=bundles)
        bounds = records.aggregate(first=Min("start"), last=Max("end"))
        with transaction.atomic():
            deleted, _ = records.delete()
            bundles.delete()
        if deleted:
            self.stdout.write(f"deleted the earlier demo data ({deleted} rows)")
        if bounds["first"] is None:
            return None
        return bounds["first"].date(), bounds["last"].date()

    def _ensure_user(self) -> None:
        User = get_user_model()
        user = User.objects.filter(username=USERNAME).first()
        if user is None:
            User.objects.create_superuser(USERNAME, "demo@example.org", PASSWORD)
            return
        user.is_superuser = user.is_staff = user.is_active = True
        user.set_password(PASSWORD)
        user.save()

    def _report(self, manifest, rejected: int) -> None:
        days = DailyUsage.objects.filter(day__gte=manifest.first_day, day__lte=manifest.last_day)
        reported = days.reported().aggregate(hours=Sum("wall_hours"), normalized=Sum("normalized_hours"))
        unmatched = days.filter(designation=Designation.PAYLOAD_UNMATCHED).aggregate(hours=Sum("wall_hours"))
        excess = days.filter(designation=Designation.PAYLOAD_EXCESS).aggregate(hours=Sum("wall_hours"))
        self.stdout.write(
            f"records: pilots={manifest.pilots} payloads={manifest.payloads} batch={manifest.batch} "
            f"(orphan payloads={manifest.orphan_payloads}, over-committed pilots={manifest.overcommitted_pilots}); "
            f"rejected={rejected}"
        )
        self.stdout.write(
            f"reported core-hours: {reported['hours'] or 0:,.1f} (normalised HS06 hours: {reported['normalized'] or 0:,.1f}); "
            f"set apart: payload_unmatched {unmatched['hours'] or 0:,.1f}, payload_excess {excess['hours'] or 0:,.1f}"
        )
