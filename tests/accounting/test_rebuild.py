"""Rebuilding summaries in the database: arrival orders, incremental days, mapping changes."""
from datetime import date

import pytest
from django.core.management import call_command

from accounting.models import DailyUsage, Site, UsageRecord
from accounting.services.summaries import rebuild
from ingest.models import Bundle

pytestmark = pytest.mark.django_db

FACTORY = "schedd_glideins4@gfactory-1.example.org"
PILOT = f'''\
*** ClusterId = 555
GlobalJobId = "{FACTORY}#555.0#1709960000"
JobUniverse = 9
GlideinFactory = "OSG"
GlideinEntryName = "OSG_US_MWT2"
GlideinClient = "osg-frontend.main"
GLIDEIN_Site = "MWT2"
GLIDEIN_CPUS = 4
RemoteWallClockTime = 28800
CompletionDate = 1710093600
x509UserProxyVOName = "osg"
x509userproxysubject = "/CN=osg pilot"
'''  # 2024-03-10 10:00 to 18:00 UTC: 8 h x 4 cores = 32 core-hours
PAYLOADS = f'''\
*** ClusterId = 1
GlobalJobId = "ap1.example.org#1.0#1709960000"
x509userproxysubject = "/CN=Alice"
x509UserProxyVOName = "osg"
RemoteWallClockTime = 7200
MachineAttrCpus0 = 2
CompletionDate = 1710079200
MachineAttrGLIDEIN_Site0 = "MWT2"
MATCH_EXP_JOB_GLIDEIN_Schedd = "{FACTORY}"
MATCH_EXP_JOB_GLIDEIN_ClusterId = "555"
MATCH_EXP_JOB_GLIDEIN_ProcId = "0"
*** ClusterId = 2
GlobalJobId = "ap1.example.org#2.0#1709960000"
x509userproxysubject = "/CN=Bob"
x509UserProxyVOName = "osg"
RemoteWallClockTime = 3600
MachineAttrCpus0 = 1
CompletionDate = 1710086400
MachineAttrGLIDEIN_Site0 = "MWT2"
MATCH_EXP_JOB_GLIDEIN_Schedd = "{FACTORY}"
MATCH_EXP_JOB_GLIDEIN_ClusterId = "555"
MATCH_EXP_JOB_GLIDEIN_ProcId = "0"
'''


def summary_table():
    return sorted(
        DailyUsage.objects.values_list(
            "day", "site__name", "vo__name", "person__name", "kind", "designation", "jobs", "wall_hours", "cpu_hours"
        ),
        key=repr,
    )


def reset():
    DailyUsage.objects.all().delete()
    UsageRecord.objects.all().delete()
    Bundle.objects.all().delete()


def ingest_files(*paths):
    for path in paths:
        call_command("ingest", str(path))


def test_the_four_arrival_cases_end_as_if_everything_arrived_at_once(bundle_store, write, capsys):
    pilot, payloads = write("factory/history", PILOT), write("ap/history", PAYLOADS)
    ingest_files(pilot, payloads)
    together = summary_table()
    designations = {(row[3], row[5]): row[7] for row in together}
    assert designations == {("/CN=osg pilot", "pilot_residual"): 27.0, ("/CN=Alice", "payload"): 4.0, ("/CN=Bob", "payload"): 1.0}

    reset()
    ingest_files(payloads)  # payload first: unmatched until its pilot arrives
    assert {row[5] for row in summary_table()} == {"payload_unmatched"}
    ingest_files(pilot)
    assert summary_table() == together

    reset()
    ingest_files(pilot, payloads)  # pilot first
    assert summary_table() == together

    reset()
    ingest_files(payloads)  # pilot never
    alone = summary_table()
    assert sum(row[7] for row in alone if row[5] == "payload_unmatched") == 5.0
    assert not [row for row in alone if row[5] in ("payload", "batch", "pilot_residual")]

    reset()
    ingest_files(pilot)  # payloads never: the pilot keeps all its hours
    assert [(row[5], row[7]) for row in summary_table()] == [("pilot_residual", 32.0)]


def test_rebuilding_one_day_gives_the_rows_of_a_full_rebuild(bundle_store, write, capsys):
    ingest_files(write("factory/history", PILOT), write("ap/history", PAYLOADS))
    batch = '''GlobalJobId = "ce#9.0#1"\nRemoteWallClockTime = 172800\nRequestCpus = 2\nCompletionDate = 1710115200\n'''
    call_command("ingest", str(write("ce/history", batch)), "--site", "CE-Site")
    rebuild()
    full = summary_table()
    assert {row[0] for row in full} == {date(2024, 3, 9), date(2024, 3, 10), date(2024, 3, 11)}
    DailyUsage.objects.filter(day=date(2024, 3, 10)).update(wall_hours=-1)
    rebuild(date(2024, 3, 10), date(2024, 3, 10))
    assert summary_table() == full


def test_sites_mapping_moves_a_resource_to_its_site_on_rebuild(bundle_store, write, tmp_path, capsys):
    ad = '''GlobalJobId = "ap#1.0#1"\nRemoteWallClockTime = 3600\nCompletionDate = 1710079200\nMachineAttrGLIDEIN_Site0 = "Old-Name"\nMachineAttrGLIDEIN_ResourceName0 = "CE-7"\n'''
    ingest_files(write("h", ad))
    assert DailyUsage.objects.get().site.name == "Old-Name"
    mapping = write("sites.csv", "resource,site,facility\nCE-7,New-Site,Big Lab\n")
    call_command("import_mappings", "sites", str(mapping))
    rebuild()
    row = DailyUsage.objects.get()
    assert (row.site.name, row.site.facility) == ("New-Site", "Big Lab")
    assert Site.objects.filter(name="Old-Name").exists()  # the raw name is kept on the record


def test_a_rebuild_is_recorded_with_its_row_count(bundle_store, write, capsys):
    ingest_files(write("h", PAYLOADS))
    run = rebuild()
    assert run.status == "done" and run.rows == DailyUsage.objects.count() > 0


def test_nightly_task_rebuilds_the_trailing_window(bundle_store, write, capsys):
    from datetime import datetime, timedelta, timezone

    from accounting.tasks import rebuild_trailing

    end = int((datetime.now(timezone.utc) - timedelta(days=2)).timestamp())
    ingest_files(write("h", f'GlobalJobId = "ap#1.0#1"\nRemoteWallClockTime = 3600\nCompletionDate = {end}\n'))
    DailyUsage.objects.all().delete()
    run_id = rebuild_trailing.delay(days=7).get()
    assert sum(DailyUsage.objects.values_list("wall_hours", flat=True)) == pytest.approx(1.0)
    from accounting.models import SummaryRun

    assert SummaryRun.objects.get(pk=run_id).status == "done"
