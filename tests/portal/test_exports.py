"""The portal reads usage rows as tuples (`portal/exports.py`); they must equal the shared report query's
rows (`accounting.services.reports.usage_rows`) value for value, in JSON and CSV."""
import csv
import io
from datetime import date
from itertools import product

import pytest

from accounting.models import SummaryRun
from accounting.services.reports import PERIODS, build_query, usage_rows
from portal import rollups
from portal.exports import blocks, csv_lines, usage_csv_rows, usage_dicts

pytestmark = pytest.mark.django_db

GROUPS = ["", "site", "vo,user", "science_domain,kind", "project,resource,site"]


def test_tuple_rows_equal_the_report_rows_for_every_period_and_grouping(grid):
    SummaryRun.objects.create(start=date(2024, 1, 1), end=date(2024, 3, 31), status=SummaryRun.Status.DONE)
    rollups.refresh()
    for period, group_by, extra in product(PERIODS, GROUPS, ({}, {"designation": ["all"]}, {"vo": ["cms"], "site": ["SiteB"]})):
        params = {"start": ["2024-01-01"], "end": ["2024-04-01"], "period": [period], "group_by": [group_by]} | extra
        query = build_query(params)
        for base in (None, rollups.base_for(query)):
            expected = list(usage_rows(query, base))
            assert list(usage_dicts(query, base)) == expected, params
            as_csv = "".join(csv_lines(query.columns(), usage_csv_rows(query, base)))
            assert as_csv == "".join(csv_lines(query.columns(), expected)), params
    # The unmatched payload row has no project: null in JSON, empty in CSV.
    query = build_query({"period": ["total"], "group_by": ["project"], "start": ["2024-01-01"], "end": ["2024-04-01"], "designation": ["all"]})
    assert [r["project"] for r in usage_dicts(query)][-1] is None
    assert [r[0] for r in usage_csv_rows(query)][-1] == ""


def test_csv_blocks_join_lines_without_changing_them():
    lines = [f"{n},{'x' * 100}\n" for n in range(3000)]
    chunks = list(blocks(lines))
    assert 1 < len(chunks) < 10 and b"".join(chunks).decode() == "".join(lines)
    assert list(csv.reader(io.StringIO(b"".join(chunks).decode())))[2999][0] == "2999"
