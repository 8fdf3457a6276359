from datetime import date

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from accounting.services.summaries import rebuild


def iso_date(value: str) -> date:
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise CommandError(f"not a date (YYYY-MM-DD): {value!r}") from None


class Command(BaseCommand):
    help = "Rebuild the daily summaries for a day range (default: every day with records)."

    def add_arguments(self, parser):
        parser.add_argument("--start", type=iso_date, help="first day, YYYY-MM-DD")
        parser.add_argument("--end", type=iso_date, help="last day (inclusive), YYYY-MM-DD")

    def handle(self, start=None, end=None, **options):
        if start and end and end < start:
            raise CommandError(f"--end {end} is before --start {start}")
        with tqdm(total=0, unit="day", disable=None, file=self.stderr._out) as bar:

            def progress(done, total):
                bar.total = total
                bar.n = done
                bar.refresh()

            run = rebuild(start, end, progress=progress)
        self.stdout.write(f"rebuilt {run.start}..{run.end}: {run.rows} summary rows")
