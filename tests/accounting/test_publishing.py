"""Exports for other systems, round-tripped through GridLedger's own parsers: APEL summary messages (v0.3,
normalised) and NCSA Account Usage Data Format files give back the totals they were written from."""
import io
from datetime import date

import pytest

from accounting.models import BenchmarkFactor, ChargeFactor, DailyUsage, Resource, Site, UsageRecord
from accounting.services import apel_publish, ncsa_publish, summaries
from ingest.parsers.apel import APELParser, ParsedSummary
from ingest.parsers.base import ParseContext, ParsedRecord, Rejection
from ingest.parsers.ncsa import NCSAParser
from tests.accounting.ledger_helpers import ALICE, BOB, at, job, topology

pytestmark = pytest.mark.django_db


def grid():
    """Whole-second jobs in March and April 2024 at two benchmarked sites (10 HS06 per core each)."""
    topology()
    BenchmarkFactor.objects.create(resource=Resource.objects.get(name="ce-a"), benchmark="HS06", value=10, valid_from=date(2024, 1, 1))
    BenchmarkFactor.objects.create(resource=Resource.objects.get(name="ce-b"), benchmark="SI2K", value=2500, valid_from=date(2024, 1, 1))
    Resource.objects.create(name="ce-a2", site=Site.objects.get(name="SiteA"))
    job("j1", at(date(2024, 3, 4), 1), 3, cores=2, cpu_hours=5, memory_mb=6000, local_user="alice")
    job("j2", at(date(2024, 3, 5), 1), 1.5, person=BOB, cpu_hours=1)
    job("j3", at(date(2024, 3, 6), 1), 2, cores=4, vo="atlas", site="SiteB", resource="ce-b", cpu_hours=7)
    job("glidein#1", at(date(2024, 3, 7), 1), 2, kind="pilot", cores=4, memory_mb=8192, person="")
    job("pay#1", at(date(2024, 3, 7), 1), 3, kind="payload", person=BOB, pilot_ref="glidein#1", cpu_hours=2.5)
    job("orphan", at(date(2024, 3, 8), 1), 9, kind="payload", pilot_ref="gone")  # unmatched: never published
    job("j4", at(date(2024, 4, 2), 1), 1, resource="ce-a2")
    job("nowhere", at(date(2024, 3, 9), 1), 1, site="", resource="")  # no site: cannot be published to APEL
    void = job("void", at(date(2024, 3, 9), 5), 5)
    UsageRecord.objects.filter(pk=void.pk).update(void=True)
    summaries.rebuild(date(2024, 3, 1), date(2024, 4, 30))


def parse(parser, text: str, site: str = "") -> tuple[list, list]:
    items = list(parser.parse(io.BytesIO(text.encode()), "export.txt", ParseContext(site=site)))
    return [i for i in items if not isinstance(i, Rejection)], [i for i in items if isinstance(i, Rejection)]


def test_apel_summaries_round_trip_to_the_same_totals():
    grid()
    records, left_out = apel_publish.summary_records(date(2024, 3, 1), date(2024, 4, 1))
    text = apel_publish.message(records)
    assert text.startswith("APEL-summary-job-message: v0.3\nSite: SiteA\nMonth: 03\nYear: 2024\n")
    parsed, rejected = parse(APELParser(), text)
    assert rejected == []
    assert all(isinstance(p, ParsedSummary) for p in parsed) and len(parsed) == len(records) == 5
    reported = DailyUsage.objects.reported().filter(site__isnull=False)
    jobs = sum(reported.values_list("jobs", flat=True))
    wall = sum(reported.values_list("wall_hours", flat=True))
    assert sum(p.number_of_jobs for p in parsed) == jobs == 6  # j1 j2 j3 j4, the pilot, its payload
    assert sum(p.wall_seconds for p in parsed) == round(wall * 3600) == (6 + 1.5 + 8 + 8 + 1) * 3600
    assert sum(p.cpu_seconds for p in parsed) == (5 + 1 + 7 + 2.5) * 3600
    assert sum(p.normalised_wall for p in parsed) == round(sum(reported.values_list("normalized_hours", flat=True)) * 3600)
    assert sum(p.normalised_wall for p in parsed) == (6 + 1.5 + 8 + 8) * 10 * 3600  # ce-a2 (j4) has no factor
    assert sum(p.normalised_cpu for p in parsed) == (5 + 1 + 7 + 2.5) * 10 * 3600
    assert left_out == {"jobs": 1, "core_hours": 1.0}
    # One record by hand: Alice's cms job j1 at SiteA in March, 2 cores x 3 h.
    alice = next(p for p in parsed if p.person == ALICE and p.vo == "cms" and p.month == 3)
    assert (alice.site, alice.submit_host, alice.number_of_jobs, alice.wall_seconds, alice.cpu_seconds) == ("SiteA", "ce-a", 1, 21600, 18000)
    assert (alice.normalised_wall, alice.normalised_cpu, alice.processors, alice.infrastructure) == (216000, 180000, 1, "GridLedger")
    # The pilot's residual (8 - 3 core-hours) is published under the pilot's identity (no person).
    pilot = next(p for p in parsed if p.person == "" and p.month == 3)
    assert (pilot.wall_seconds, pilot.number_of_jobs) == (5 * 3600, 1)


def test_apel_filters_and_the_hours_of_jobs_still_running_at_month_end():
    grid()
    records, _ = apel_publish.summary_records(date(2024, 3, 1), date(2024, 3, 31), sites=["SiteB"])
    assert [(r.site, r.vo, r.jobs, r.wall_seconds) for r in records] == [("SiteB", "atlas", 1, 8 * 3600)]
    job("long", at(date(2024, 3, 31), 22), 4, person=BOB, resource="ce-b", site="SiteB", vo="atlas")
    summaries.rebuild(date(2024, 3, 31), date(2024, 4, 1))
    records, _ = apel_publish.summary_records(date(2024, 3, 1), date(2024, 4, 30), sites=["SiteB"])
    # 2 h spent in March by a job that ends in April: March carries the hours, April the job (docs/accounting.md).
    assert [(r.month, r.person, r.jobs, r.wall_seconds) for r in records] == [
        (3, ALICE, 1, 8 * 3600), (3, BOB, 0, 2 * 3600), (4, BOB, 1, 2 * 3600),
    ]


def test_ncsa_file_round_trips_to_the_same_totals_and_the_sites_reported_core_hours():
    grid()
    ChargeFactor.objects.create(resource=Resource.objects.get(name="ce-a"), factor=2.0, valid_from=date(2024, 1, 1))
    totals = ncsa_publish.Totals()
    formula = ncsa_publish.SUFormula(basis="canonical_core_hours", default_factor=1.5)
    lines = list(ncsa_publish.lines(date(2024, 3, 1), date(2024, 5, 1), site="SiteA", formula=formula, totals=totals))
    assert lines[0] == "H|Charges|SiteA|20240301:000000|20240430:235959||SESS_ACCT"
    # Service units by hand, canonical core-hours x charge factor (ce-a: 2.0; ce-a2 has none: the default 1.5):
    # j1 3 h x max(2 cores, ceil(6000 MB / 2 GB) = 3) x 2 = 18; j2 1.5 h x 1 x 2 = 3; pilot 2 h x 4 x 2 = 16; j4 1 h x 1 x 1.5 = 1.5.
    assert lines[-1] == "T|4|6.000000E+00|1.419200E+04|NULL|3.850000E+01"
    assert lines[1] == "D|alice|" + ALICE + "||batch|5.000000E+00|6.000000E+03|NULL|1.800000E+01|2.000000E+00|batch|j1|20240304:010000|20240304:040000|ce-a|"
    parsed, rejected = parse(NCSAParser(), "\n".join(lines) + "\n", site="SiteA")
    assert rejected == []
    assert all(isinstance(p, ParsedRecord) for p in parsed)
    assert [p.natural_key for p in parsed] == ["ncsa|SiteA|j1", "ncsa|SiteA|j2", "ncsa|SiteA|glidein#1", "ncsa|SiteA|j4"]
    assert sum(p.extra["service_units"] for p in parsed) == pytest.approx(38.5, rel=1e-12) == totals.su
    assert sum(p.cpu_user_seconds for p in parsed) / 3600 == pytest.approx(6.0, rel=1e-12) == totals.cpu
    core_hours = sum(p.wall_seconds * p.cores for p in parsed) / 3600
    assert core_hours == totals.core_hours == 6 + 1.5 + 8 + 1
    site_reported = sum(DailyUsage.objects.reported().filter(site__name="SiteA").values_list("wall_hours", flat=True))
    assert core_hours == pytest.approx(site_reported, rel=1e-12)  # reported per site = pilot + batch hours


@pytest.mark.parametrize(("basis", "expected"), [("core_hours", 6 * 2 + 1.5 * 2 + 8 * 2 + 1 * 1), ("cpu_hours", 5 * 2 + 1 * 2)])
def test_ncsa_other_service_unit_bases(basis, expected):
    grid()
    ChargeFactor.objects.create(resource=Resource.objects.get(name="ce-a"), factor=2.0, valid_from=date(2024, 1, 1))
    totals = ncsa_publish.Totals()
    list(ncsa_publish.lines(date(2024, 3, 1), date(2024, 5, 1), site="SiteA", formula=ncsa_publish.SUFormula(basis), totals=totals))
    assert totals.su == pytest.approx(expected, rel=1e-12)
    with pytest.raises(ValueError, match="basis"):
        ncsa_publish.SUFormula("wall_hours")


def test_ncsa_text_fields_never_carry_the_separator_and_an_empty_period_still_reads():
    topology()
    job("APEL-Site|1234|1709251200", at(date(2024, 3, 1), 1), 1, local_user="a|b")
    lines = list(ncsa_publish.lines(date(2024, 3, 1), date(2024, 3, 2), site="SiteA", machine="d2"))
    assert "|APEL-Site/1234/1709251200|" in lines[1] and lines[1].startswith("D|a/b|")
    parsed, rejected = parse(NCSAParser(), "\n".join(lines), site="SiteA")
    assert rejected == [] and parsed[0].natural_key == "ncsa|d2|APEL-Site/1234/1709251200"
    empty = list(ncsa_publish.lines(date(2020, 1, 1), date(2020, 2, 1), site="SiteA"))
    assert empty[-1] == "T|0|0.000000E+00|0.000000E+00|NULL|0.000000E+00"
    assert parse(NCSAParser(), "\n".join(empty), site="SiteA") == ([], [])
