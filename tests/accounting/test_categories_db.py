"""Categories rebuilt from ingested files: exact mode from linked payloads and from a glidein's .err."""
from datetime import date

import pytest
from django.core.management import call_command

from accounting.models import CategoryDaily
from tests.ingest.test_gwms_glidein import HISTORY, err_file

pytestmark = pytest.mark.django_db
FACTORY = "schedd_glideins4@gfactory-1.example.org"
PILOT = f'''GlobalJobId = "{FACTORY}#555.0#1709960000"
JobUniverse = 9
GlideinEntryName = "OSG_US_MWT2"
GLIDEIN_Site = "MWT2"
GLIDEIN_CPUS = 4
RemoteWallClockTime = 28800
CompletionDate = 1710093600
x509UserProxyVOName = "osg"
'''  # 2024-03-10 10:00-18:00 UTC, 4 cores, memory unknown


def payload(n: int, cores: int, wall: int, end: int) -> str:
    return f'''*** ClusterId = {n}
GlobalJobId = "ap1#{n}.0#1"
x509UserProxyVOName = "osg"
RemoteWallClockTime = {wall}
MachineAttrCpus0 = {cores}
CompletionDate = {end}
ExitCode = 0
MATCH_EXP_JOB_GLIDEIN_Schedd = "{FACTORY}"
MATCH_EXP_JOB_GLIDEIN_ClusterId = "555"
MATCH_EXP_JOB_GLIDEIN_ProcId = "0"
'''


def categories(estimated=False):
    out = {}
    for category, hours in CategoryDaily.objects.filter(estimated=estimated).values_list("category", "core_hours"):
        out[category] = round(out.get(category, 0) + hours, 6)
    return out


def test_linked_payloads_give_the_exact_categories(bundle_store, write, capsys):
    call_command("ingest", str(write("factory/history", PILOT)))
    # Nothing known of its jobs yet: all overhead, flagged estimated.
    assert (categories(estimated=True), categories()) == ({"overhead": 32.0}, {})
    # Alice 2 cores 12:00-14:00, Bob 1 core 15:00-16:00; with unknown pilot memory idle cores are overhead.
    call_command("ingest", str(write("ap/history", payload(1, 2, 7200, 1710079200) + payload(2, 1, 3600, 1710086400))))
    assert (categories(), categories(estimated=True)) == ({"overhead": 27.0, "goodput": 5.0}, {})
    assert set(CategoryDaily.objects.values_list("site__name", "vo__name", "day")) == {("MWT2", "osg", date(2024, 3, 10))}


def test_a_glidein_with_its_err_is_classified_from_its_startd_history(bundle_store, tmp_path, samples_dir, capsys):
    """The real glidein job.out (8 cores, 20000 MB, 02:05:25-04:25:01 UTC) with three startd runs:
    4 cores 02:08:20-03:08:20 exit 0; 1 core 03:10-03:15 killed by signal 9 (early: misconfiguration);
    2 cores 03:16:40-04:23:20 BadputCausedByPreemption. Worked by hand interval by interval."""
    folder = tmp_path / "entry"
    folder.mkdir()
    (folder / "job.10176593.0.out").write_bytes((samples_dir / "glideinwms/job.out.glideFactoryLogParser_glidein_stdout.out").read_bytes())
    (folder / "job.10176593.0.err").write_bytes(err_file(HISTORY))
    call_command("ingest", str(folder))
    overhead = 175 * 8 + 3600 * 4 + 100 * 8 + 300 * 7 + 100 * 8 + 4000 * 6 + 101 * 8
    assert categories() == {
        "goodput": round(4 * 3600 / 3600, 6),
        "misconfiguration_badput": round(300 / 3600, 6),
        "preemption_badput": round(2 * 4000 / 3600, 6),
        "overhead": round(overhead / 3600, 6),
    }
    assert sum(categories().values()) == pytest.approx(8 * 8376 / 3600, abs=1e-5)
