"""`manage.py export usage|categories|quotas [--name value ...] [--format csv|json]` (CONTRACT.md).

The API's query parameters are given as options (`--start 2024-01-01 --group_by site,vo --vo cms
--vo atlas`); the rows, and their columns, are those the API answers for them, written to standard
output as CSV (default) or as the API's JSON. Kinds come from the registry in `portal/exporters.py`.
Run from the command line, it sees every row (it is an operator's tool, not scoped by role).
"""
import argparse
import json

from django.core.management.base import BaseCommand, CommandError
from django.core.serializers.json import DjangoJSONEncoder
from django.http import QueryDict

from accounting.services.reports import QueryError
from portal.exporters import EXPORTERS, ExportUnavailable
from portal.exports import csv_lines


def parse_parameters(tokens: list[str]) -> QueryDict:
    """`--name value` / `--name=value` pairs into a QueryDict (names repeatable)."""
    params = QueryDict(mutable=True)
    i = 0
    while i < len(tokens):
        word = tokens[i]
        if not word.startswith("--") or word == "--":
            raise CommandError(f"expected --name value, got {word!r}")
        name, equals, value = word[2:].partition("=")
        if not equals:
            if i + 1 >= len(tokens):
                raise CommandError(f"--{name} needs a value")
            value = tokens[i + 1]
            i += 1
        params.appendlist(name.replace("-", "_") if name != "group-by" else "group_by", value)
        i += 1
    return params


class Command(BaseCommand):
    help = "Write the rows the API answers (usage, categories, quotas) to standard output, as CSV or JSON."

    def add_arguments(self, parser):
        parser.add_argument("kind", choices=sorted(EXPORTERS))
        parser.add_argument("parameters", nargs=argparse.REMAINDER, help="API query parameters as --name value")

    def handle(self, kind, parameters, **options):
        params = parse_parameters(parameters)
        fmt = params.get("format") or "csv"
        try:
            columns, rows = EXPORTERS[kind](params)
            if fmt == "csv":
                for line in csv_lines(columns, rows):
                    self.stdout.write(line, ending="")
            else:
                self.write_json(columns, rows)
        except QueryError as error:
            raise CommandError(f"{error.parameter}: {error.message}") from None
        except ExportUnavailable as error:
            raise CommandError(str(error)) from None

    def write_json(self, columns, rows) -> None:
        """The API's JSON (`columns`, `count`, `results`), written row by row."""
        self.stdout.write('{"columns": ' + json.dumps(columns) + ', "results": [', ending="")
        count = 0
        for row in rows:
            self.stdout.write(("," if count else "") + "\n" + json.dumps(row, cls=DjangoJSONEncoder), ending="")
            count += 1
        self.stdout.write(f'\n], "count": {count}}}')
