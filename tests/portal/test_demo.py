"""`manage.py demo` and the synthetic month behind it (ingest/synthetic.py).

The generator is checked alone (through the real parser, no database), then the whole command on the
database: every file ingested without a rejection, the record counts of the manifest, orphan payloads
set apart as `payload_unmatched`, and DOMAIN.md's invariant "reported core-hours per (site, day) ==
pilot + batch core-hours", with the expected side computed here from the raw records.
"""
import csv
import io
import re
from collections import defaultdict
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db.models import Sum

from accounting.choices import REPORTED_DESIGNATIONS, Designation, RecordKind
from accounting.models import DailyUsage, UsageRecord
from accounting.services.refine import split_days
from ingest.models import Bundle
from ingest.parsers import ParseContext, ParsedRecord, Rejection
from ingest.parsers.htcondor_history import HTCondorHistoryParser, iter_ads
from ingest.synthetic import generate, write_payload_ads

END = datetime(2026, 3, 17, 9, 30, tzinfo=UTC)
PARSER = HTCondorHistoryParser()
TIME_ATTRIBUTES = (
    "qdate", "jobstartdate", "jobcurrentstartdate", "jobcurrentstartexecutingdate", "lastmatchtime",
    "completiondate", "enteredcurrentstatus",
)  # fmt: skip


def parse_manifest(manifest):
    """Every record of every file as the parser reads it: {kind: [record]}, plus the rejections."""
    records, rejections = defaultdict(list), []
    for item in manifest.files:
        with item.path.open("rb") as stream:
            for parsed in PARSER.parse(stream, item.path.name, ParseContext(site=item.site)):
                if isinstance(parsed, Rejection):
                    rejections.append((item.path, parsed))
                else:
                    records[parsed.kind].append(parsed)
    return records, rejections


@pytest.fixture(scope="module")
def month(tmp_path_factory):
    manifest = generate(tmp_path_factory.mktemp("month"), seed=7, scale=0.02, end=END)
    records, rejections = parse_manifest(manifest)
    return manifest, records, rejections


def test_generator_files_parse_without_rejections_into_the_manifest_counts(month):
    manifest, records, rejections = month
    assert rejections == []
    assert {item.fmt for item in manifest.files} == {"htcondor-history"}
    assert len(records[RecordKind.PILOT]) == manifest.pilots == sum(f.records for f in manifest.files if f.kind == "pilot")
    assert len(records[RecordKind.PAYLOAD]) == manifest.payloads
    assert len(records[RecordKind.BATCH]) == manifest.batch
    assert 60 <= manifest.pilots <= 100 and 8 * manifest.pilots <= manifest.payloads <= 13 * manifest.pilots
    assert manifest.batch == 60
    # Batch files carry no site: the manifest names the hint, and only batch files need one.
    assert {f.site for f in manifest.files if f.kind == "batch"} == {r.site for r in records[RecordKind.BATCH]}
    assert all(f.site == "" for f in manifest.files if f.kind != "batch")
    assert all(r.site and r.resource and r.pilot_ref for r in records[RecordKind.PAYLOAD])
    keys = [r.natural_key for kind in records for r in records[kind]]
    assert len(keys) == len(set(keys))


def test_generator_payloads_run_inside_their_pilots_and_some_pilots_never_arrive(month):
    manifest, records, _ = month
    pilots = {r.natural_key: r for r in records[RecordKind.PILOT]}
    load = defaultdict(float)
    orphans = 0
    for payload in records[RecordKind.PAYLOAD]:
        pilot = pilots.get(payload.pilot_ref)
        if pilot is None:
            orphans += 1
            continue
        assert pilot.start <= payload.start <= payload.end <= pilot.end, payload.natural_key
        assert (payload.site, payload.resource) == (pilot.site, pilot.resource)
        load[pilot.natural_key] += payload.wall_seconds * payload.cores
    assert orphans == manifest.orphan_payloads > 0
    assert 0.005 < orphans / manifest.payloads < 0.1
    over = [k for k, p in pilots.items() if load[k] > p.wall_seconds * p.cores]
    assert len(over) == manifest.overcommitted_pilots >= 1
    residual = [k for k, p in pilots.items() if 0 < load[k] < p.wall_seconds * p.cores]
    assert len(residual) > 0.8 * (manifest.pilots - manifest.idle_pilots - len(over))
    lifetimes = [p.wall_seconds / 3600 for p in pilots.values() if load[p.natural_key]]
    assert min(lifetimes) >= 2 and max(lifetimes) <= 48
    assert any(p.start.date() != p.end.date() for p in pilots.values())
    assert {p.cores for p in pilots.values()} <= {1, 4, 8}
    assert all(p.pilot and p.pilot.frontend_client and p.vo for p in pilots.values())


def test_generator_times_stay_inside_the_month(month):
    manifest, records, _ = month
    assert manifest.end == END and manifest.start == END - timedelta(days=30)
    for kind in records:
        for record in records[kind]:
            assert manifest.start <= record.start <= record.end <= manifest.end
    lo, hi = manifest.start.timestamp(), manifest.end.timestamp()
    for item in manifest.files:
        with item.path.open("rb") as stream:
            for _, ad in iter_ads(stream):
                for name in TIME_ATTRIBUTES:
                    if name in ad:
                        assert lo <= float(ad[name]) <= hi, (item.path, name, ad[name])


def test_generator_is_deterministic_and_padding_only_adds_attributes(tmp_path, month):
    manifest = month[0]
    again = generate(tmp_path / "again", seed=7, scale=0.02, end=END)
    for mine, theirs in zip(manifest.files, again.files, strict=True):
        assert mine.path.read_bytes() == theirs.path.read_bytes()
    for name, path in manifest.mappings.items():
        assert path.read_bytes() == again.mappings[name].read_bytes()
    padded = generate(tmp_path / "padded", seed=7, scale=0.02, end=END, padding=True)
    assert (padded.pilots, padded.payloads, padded.batch) == (manifest.pilots, manifest.payloads, manifest.batch)
    records, rejections = parse_manifest(padded)
    assert rejections == []
    plain = {r.natural_key: r for r in month[1][RecordKind.PAYLOAD]}
    for record in records[RecordKind.PAYLOAD]:
        twin = plain[record.natural_key]
        assert replace(record, line=twin.line) == twin
    ap = next(f.path for f in padded.files if f.kind == "payload")
    with ap.open("rb") as stream:
        ads = [ad for _, ad in iter_ads(stream)]
    assert 75 <= sum(len(ad) for ad in ads) / len(ads) <= 90
    assert 2000 <= ap.stat().st_size / len(ads) <= 3600


def test_generator_mappings_cover_the_resources_with_a_few_benchmarks_missing(month):
    manifest, records, _ = month
    rows = {name: list(csv.DictReader(path.open())) for name, path in manifest.mappings.items()}
    assert list(manifest.mappings) == ["vos", "projects", "sites", "benchmarks", "frontends"]
    assert len(rows["vos"]) == 8 and 35 <= len(rows["projects"]) <= 45
    assert 18 <= len({r["site"] for r in rows["sites"]}) <= 22
    resources = {r["resource"] for r in rows["sites"]}
    assert {r.resource for r in records[RecordKind.PILOT]} <= resources
    with_factor = {r["resource"] for r in rows["benchmarks"]}
    assert 1 <= len(resources - with_factor) <= 2
    assert {r["benchmark"] for r in rows["benchmarks"]} == {"HS06", "HS23", "SI2K"}
    assert [r["benchmark"] for r in rows["benchmarks"]].count("SI2K") == 1
    hs06 = [float(r["value"]) for r in rows["benchmarks"] if r["benchmark"] == "HS06"]
    assert all(8 <= v <= 25 for v in hs06)
    clients = {r["client"] for r in rows["frontends"]}
    assert {r.pilot.frontend_client for r in records[RecordKind.PILOT]} <= clients


def test_write_payload_ads_for_benchmarks(tmp_path):
    size = write_payload_ads(tmp_path / "history", 300, seed=3, end=END, pilot_path=tmp_path / "pilots")
    assert 300 * 2000 <= size <= 300 * 3600
    with (tmp_path / "history").open("rb") as stream:
        payloads = list(PARSER.parse(stream, "history", ParseContext()))
    with (tmp_path / "pilots").open("rb") as stream:
        pilots = {r.natural_key for r in PARSER.parse(stream, "pilots", ParseContext())}
    assert len(payloads) == 300 and all(isinstance(r, ParsedRecord) and r.kind == "payload" for r in payloads)
    assert sum(r.pilot_ref in pilots for r in payloads) > 200  # a few name pilots of the uncollected factory


# --- the command, on the database ---------------------------------------------------------------------------


def expected_pilot_and_batch_hours(first, last):
    """Core-hours of pilot and batch records per (site id, day), split over UTC days here, not by the rules."""
    out = defaultdict(float)
    rows = UsageRecord.objects.filter(kind__in=[RecordKind.PILOT, RecordKind.BATCH]).values_list(
        "start", "end", "cores", "site_id", "resource__site_id"
    )
    for start, end, cores, site, resource_site in rows:
        for day, seconds in split_days(start, end, first, last):
            out[resource_site or site, day] += seconds * cores / 3600
    return out


@pytest.mark.django_db
def test_demo_command_loads_the_month_and_the_invariants_hold(tmp_path, bundle_store):
    out = io.StringIO()
    call_command("demo", scale=0.01, dir=tmp_path / "demo", seed=5, end=END.date().isoformat(), stdout=out)
    text = out.getvalue()
    manifest = generate(tmp_path / "expected", seed=5, scale=0.01, end=END.date())

    bundles = Bundle.objects.filter(source_label="demo")
    assert bundles.count() == len(manifest.files) + 1  # + the capacity snapshots
    assert set(bundles.values_list("status", flat=True)) == {Bundle.Status.DONE}
    assert sum(bundles.values_list("rejected", flat=True)) == 0
    assert text.count("bundle=") == len(manifest.files) + 1 and "rejected=0" in text
    counts = {kind: UsageRecord.objects.filter(kind=kind).count() for kind in RecordKind.values}
    assert counts == {"pilot": manifest.pilots, "payload": manifest.payloads, "batch": manifest.batch}

    # Orphan payloads: their hours are set apart, never reported.
    pilot_keys = set(UsageRecord.objects.filter(kind=RecordKind.PILOT).values_list("natural_key", flat=True))
    orphans = [
        r for r in UsageRecord.objects.filter(kind=RecordKind.PAYLOAD) if r.pilot_ref not in pilot_keys
    ]
    assert len(orphans) == manifest.orphan_payloads > 0
    unmatched = DailyUsage.objects.filter(designation=Designation.PAYLOAD_UNMATCHED)
    assert unmatched.exists()
    totals = unmatched.aggregate(jobs=Sum("jobs"), hours=Sum("wall_hours"))
    assert totals["jobs"] == len(orphans)
    assert totals["hours"] == pytest.approx(sum(r.core_hours for r in orphans), rel=1e-9)
    assert DailyUsage.objects.filter(designation=Designation.PAYLOAD_EXCESS, wall_hours__gt=0).exists()
    assert DailyUsage.objects.filter(designation=Designation.PILOT_RESIDUAL, kind=RecordKind.PILOT).exists()

    # DOMAIN.md: for every (site, day), reported core-hours == pilot + batch core-hours.
    first, last = manifest.first_day, manifest.last_day
    expected = expected_pilot_and_batch_hours(first, last)
    reported = defaultdict(float)
    for site, day, hours in DailyUsage.objects.filter(designation__in=REPORTED_DESIGNATIONS).values_list(
        "site_id", "day", "wall_hours"
    ):
        reported[site, day] += hours
    assert len(expected) > 20
    for key in set(expected) | set(reported):
        assert reported[key] == pytest.approx(expected[key], rel=1e-6, abs=1e-6), key

    user = get_user_model().objects.get(username="demo")
    assert user.is_superuser and user.is_staff and user.check_password("demo")
    assert "Open http://127.0.0.1:8000/ and log in as demo / demo" in text
    printed = re.search(r"reported core-hours: ([\d,.]+)", text)
    assert printed and float(printed.group(1).replace(",", "")) == pytest.approx(sum(reported.values()), abs=0.06)

    # Again without --force: nothing new is loaded.
    again = io.StringIO()
    call_command("demo", scale=0.01, dir=tmp_path / "demo", seed=5, end=END.date().isoformat(), stdout=again)
    assert "bundle=" not in again.getvalue()
    assert "Open http://127.0.0.1:8000/ and log in as demo / demo" in again.getvalue()
    assert Bundle.objects.count() == len(manifest.files) + 1
    assert UsageRecord.objects.count() == sum(counts.values())


@pytest.mark.django_db
def test_demo_command_force_replaces_the_demo_data(tmp_path, bundle_store):
    call_command("demo", scale=0.01, dir=tmp_path / "demo", seed=5, end="2026-02-01", stdout=io.StringIO())
    rows_before = DailyUsage.objects.count()
    assert rows_before
    get_user_model().objects.filter(username="demo").update(is_superuser=False)
    call_command("demo", scale=0.01, dir=tmp_path / "demo", seed=6, end="2026-03-01", force=True, stdout=io.StringIO())
    manifest = generate(tmp_path / "expected", seed=6, scale=0.01, end=datetime(2026, 3, 1, tzinfo=UTC))
    counts = {kind: UsageRecord.objects.filter(kind=kind).count() for kind in RecordKind.values}
    assert counts == {"pilot": manifest.pilots, "payload": manifest.payloads, "batch": manifest.batch}
    assert Bundle.objects.filter(source_label="demo").count() == len(manifest.files) + 1
    # The days only the first month touched hold nothing any more.
    assert not DailyUsage.objects.filter(day__lt=manifest.first_day).exists()
    assert get_user_model().objects.get(username="demo").is_superuser
