"""A glidein's startd history as a file of its own: its runs become the pilot's job runs, as from a `.err`."""
import io
from datetime import datetime, timezone

import pytest
from django.core.management import call_command

from accounting.models import PilotJobRun, UsageRecord
from ingest.models import BundleError
from ingest.parsers import ParseContext, ParsedRecord, PilotRuns, Rejection
from ingest.parsers.htcondor_history import HTCondorHistoryParser

PILOT = "schedd_glideins4@gfactory-1.example.org#555.7"
FACTORY = '''\
GlobalJobId = "schedd_glideins4@gfactory-1.example.org#555.7#1699990000"
JobUniverse = 9
GlideinFactory = "OSG"
GlideinEntryName = "OSG_US_MWT2_UC"
GlideinClient = "osg-frontend.main"
GLIDEIN_Site = "MWT2"
GLIDEIN_ResourceName = "MWT2_UC"
GLIDEIN_CPUS = 8
RemoteWallClockTime = 7200
CompletionDate = 1700007200
*** ProcId = 7 ClusterId = 555
'''


def run_ad(cluster: int, end: int, wall: int, extra: str = "", pilot: str = PILOT) -> str:
    schedd, _, cluster_proc = pilot.partition("#")
    glidein_cluster, _, glidein_proc = cluster_proc.partition(".")
    return (
        f'MyType = "Job"\nGlobalJobId = "ap40.uw.osg-htc.org#{cluster}.0#1699990000"\nOwner = "alice"\n'
        f'x509UserProxyVOName = "osg"\nRemoteWallClockTime = {wall}.0\nCompletionDate = {end}\nRequestCpus = 2\n'
        f'CpusProvisioned = 2\nRequestMemory = 2000\nExitBySignal = false\nExitCode = 0\nStarterExitStatus = 0\n'
        f'MATCH_EXP_JOB_GLIDEIN_Schedd = "{schedd}"\nMATCH_EXP_JOB_GLIDEIN_ClusterId = "{glidein_cluster}"\n'
        f'MATCH_EXP_JOB_GLIDEIN_ProcId = "{glidein_proc}"\nMachineAttrGLIDEIN_Site0 = "MWT2"\n'
        f"{extra}BadputCausedByDraining = false\n*** Offset = 0 ClusterId = {cluster} ProcId = 0\n"
    )


STARTD = (
    run_ad(1001, 1700003600, 3000, "BadputCausedByPreemption = false\n")
    + run_ad(1002, 1700006000, 2000, "BadputCausedByPreemption = true\n")
)


def utc(epoch: int) -> datetime:
    return datetime.fromtimestamp(epoch, timezone.utc)


def test_parser_keeps_the_payloads_and_gives_the_runs_of_their_glidein():
    items = list(HTCondorHistoryParser().parse(io.BytesIO(STARTD.encode()), "startd_history", ParseContext()))
    first, second, runs = items
    assert isinstance(first, ParsedRecord) and isinstance(second, ParsedRecord)
    assert (first.kind, first.pilot_ref) == ("payload", PILOT)
    assert isinstance(runs, PilotRuns) and (runs.pilot_ref, runs.line) == (PILOT, 1)
    assert [(run["global_job_id"], run["start"], run["end"], run["cores"], run["badput_preemption"]) for run in runs.runs] == [
        ("ap40.uw.osg-htc.org#1001.0#1699990000", utc(1700000600), utc(1700003600), 2, False),
        ("ap40.uw.osg-htc.org#1002.0#1699990000", utc(1700004000), utc(1700006000), 2, True),
    ]


def test_schedd_history_ads_give_no_runs():
    text = STARTD.replace("BadputCausedByPreemption = false\n", "").replace("BadputCausedByPreemption = true\n", "")
    text = text.replace("BadputCausedByDraining = false\n", "")
    items = list(HTCondorHistoryParser().parse(io.BytesIO(text.encode()), "history", ParseContext()))
    assert [type(item) for item in items] == [ParsedRecord, ParsedRecord]


@pytest.mark.parametrize(
    ("ad", "reason"),
    [  # a run the .err reader refuses (no CompletionDate); an ad refused as a record (absurd wall time)
        (run_ad(1003, 1700007000, 60).replace("CompletionDate", "EnteredCurrentStatus"), f"no run of pilot {PILOT} is kept"),
        (run_ad(1003, 1700007000, 10**8), "absurd wall time"),
    ],
)
def test_an_unreadable_run_keeps_the_records_and_no_run_of_that_pilot(ad, reason):
    text = STARTD + ad.replace("BadputCausedByDraining", "BadputCausedByPreemption = false\nBadputCausedByDraining")
    items = list(HTCondorHistoryParser().parse(io.BytesIO(text.encode()), "startd_history", ParseContext()))
    assert not [item for item in items if isinstance(item, PilotRuns)]
    (rejection,) = [item for item in items if isinstance(item, Rejection)]
    assert reason in rejection.reason
    assert len([item for item in items if isinstance(item, ParsedRecord)]) >= 2


@pytest.mark.django_db
def test_manage_py_ingest_attaches_the_runs_to_the_pilot_and_a_resend_replaces_them(bundle_store, tmp_path, capsys):
    (tmp_path / "factory_history").write_text(FACTORY)
    (tmp_path / "startd_history").write_text(STARTD)
    call_command("ingest", str(tmp_path / "factory_history"))
    call_command("ingest", str(tmp_path / "startd_history"))
    out = capsys.readouterr().out
    assert "format=htcondor-history read=2 inserted=2 duplicates=0 rejected=0" in out
    pilot = UsageRecord.objects.get(natural_key=PILOT, kind="pilot")
    runs = list(PilotJobRun.objects.filter(pilot=pilot).values_list("global_job_id", "start", "end", "cores", "badput_preemption"))
    assert runs == [
        ("ap40.uw.osg-htc.org#1001.0#1699990000", utc(1700000600), utc(1700003600), 2, False),
        ("ap40.uw.osg-htc.org#1002.0#1699990000", utc(1700004000), utc(1700006000), 2, True),
    ]
    assert UsageRecord.objects.filter(kind="payload", pilot_ref=PILOT).count() == 2  # the job records, as before
    call_command("ingest", str(tmp_path / "startd_history"))
    assert PilotJobRun.objects.count() == 2  # replaced, never doubled


@pytest.mark.django_db
def test_runs_wait_for_a_pilot_later_in_the_bundle_and_a_missing_pilot_is_reported(bundle_store, tmp_path, capsys):
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "a_startd_history").write_text(STARTD)  # read before the factory history that holds its pilot
    (bundle / "b_factory_history").write_text(FACTORY)
    other = "schedd_glideins4@gfactory-1.example.org#556.0"
    (bundle / "c_startd_history").write_text(run_ad(2001, 1700003600, 600, "BadputCausedByPreemption = false\n", pilot=other))
    call_command("ingest", str(bundle))
    assert PilotJobRun.objects.filter(pilot__natural_key=PILOT).count() == 2
    (error,) = BundleError.objects.all()
    assert error.file.endswith("c_startd_history") and error.line == 1
    assert f"startd history of pilot {other}: no such pilot is stored" in error.reason
    assert UsageRecord.objects.filter(pilot_ref=other).count() == 1  # its job record is kept


@pytest.mark.django_db
def test_runs_find_their_pilot_by_its_glidein_startd_name(bundle_store, tmp_path):
    from accounting.models import PilotDetails

    pilot = UsageRecord.objects.create(kind="pilot", natural_key="f#9.0", record_hash="x", source_format="gwms-glidein",
                                       start=utc(1699990000), end=utc(1700010000), wall_seconds=20000, cores=8)  # fmt: skip
    PilotDetails.objects.create(record=pilot, glidein_name="glidein_123_456@wn1.example.org", cores=8)
    ad = run_ad(3001, 1700003600, 600, "BadputCausedByPreemption = false\n")
    ad = "".join(line + "\n" for line in ad.splitlines() if not line.startswith("MATCH_EXP_JOB_GLIDEIN"))
    ad = ad.replace('Owner = "alice"\n', 'Owner = "alice"\nLastRemoteHost = "slot1_1@glidein_123_456@wn1.example.org"\n')
    (tmp_path / "startd_history").write_text(ad)
    call_command("ingest", str(tmp_path / "startd_history"))
    assert list(PilotJobRun.objects.values_list("pilot_id", "global_job_id")) == [(pilot.pk, "ap40.uw.osg-htc.org#3001.0#1699990000")]
    assert not BundleError.objects.exists()
