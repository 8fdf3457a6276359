"""Every format through the real bundle path: detection per file, side tables, sibling .err files."""
import pytest
from django.core.management import call_command

from accounting.models import ApelSummary, PilotDetails, PilotJobRun, UsageRecord
from ingest.services.bundles import create_bundle_from_path, ingest_bundle
from tests.ingest.test_apel import JOBS, SUMMARIES
from tests.ingest.test_gwms_glidein import HISTORY, MODERN, err_file

pytestmark = pytest.mark.django_db


def test_a_directory_of_mixed_formats_is_detected_file_by_file(bundle_store, tmp_path, samples_dir, capsys):
    folder = tmp_path / "mixed"
    (folder / "gratia").mkdir(parents=True)
    (folder / "gratia" / "r1.xml").write_bytes((samples_dir / "gratia/gracc-collector/test_data/JobUsageRecord05.xml").read_bytes())
    (folder / "apel").mkdir()
    (folder / "apel" / "jobs.msg").write_text(JOBS)
    (folder / "apel" / "summaries.msg").write_text(SUMMARIES)
    (folder / "factory").mkdir()
    (folder / "factory" / "job.4421.0.out").write_text(MODERN)
    (folder / "factory" / "job.4421.0.err").write_bytes(err_file(HISTORY))
    (folder / "history.377283.0").write_bytes((samples_dir / "gratia/gratia-probe/condor-ap-history/history.377283.0").read_bytes())
    bundle = ingest_bundle(create_bundle_from_path(folder).pk)
    assert bundle.status == "done", list(bundle.errors.values_list("file", "line", "reason"))
    assert set(bundle.format.split(",")) == {"gratia-ur", "apel", "gwms-glidein", "htcondor-history"}
    assert bundle.rejected == 0, list(bundle.errors.values_list("file", "line", "reason"))
    assert UsageRecord.objects.filter(source_format="gratia-ur", kind="payload").count() == 1
    assert UsageRecord.objects.filter(source_format="apel").count() == 3
    assert ApelSummary.objects.count() == 2
    pilot = UsageRecord.objects.get(source_format="gwms-glidein")
    assert PilotJobRun.objects.filter(pilot=pilot).count() == 3  # the .err beside the .out was read
    assert PilotDetails.objects.get(record=pilot).metrics  # figures for the estimated categories are kept
    call_command("rebuild_summaries")


def test_re_ingesting_summaries_counts_duplicates(bundle_store, write):
    path = write("s.msg", SUMMARIES)
    ingest_bundle(create_bundle_from_path(path).pk)
    again = ingest_bundle(create_bundle_from_path(path).pk)
    assert (again.records_inserted, again.duplicates) == (0, 2)
    assert ApelSummary.objects.count() == 2


def test_snapshots_are_stored_and_give_categories_seven_and_eight(bundle_store, write, capsys):
    from accounting.models import CapacitySnapshot, CategoryDaily

    path = write("capacity.csv", "timestamp,site,idle_cores,pilots_queued,idle_jobs\n"
                                 "2024-03-10T10:00:00Z,MWT2,10,0,5\n2024-03-10T10:30:00Z,MWT2,4,0,0\n2024-03-10T11:00:00Z,MWT2,2,3,0\n")  # fmt: skip
    call_command("ingest", str(path))
    assert CapacitySnapshot.objects.count() == 3
    rows = dict(CategoryDaily.objects.values_list("category", "core_hours"))
    assert rows == {"provisioning_bottleneck": 5.0, "insufficient_demand": 3.0}


def test_batch_formats_take_the_site_from_the_command_line(bundle_store, write, capsys):
    slurm = write("sacct.txt", "JobID|JobIDRaw|User|Account|Cluster|AllocCPUS|Start|End|Elapsed|TotalCPU|State|ExitCode\n"
                               "101|101|alice|astro|anvil|4|2024-03-10T10:00:00|2024-03-10T12:00:00|02:00:00|06:00:00|COMPLETED|0:0\n")  # fmt: skip
    call_command("ingest", str(slurm), "--site", "Purdue-Anvil")
    record = UsageRecord.objects.get(source_format="slurm")
    assert (record.site.name, record.cores, record.wall_seconds, record.cpu_user_seconds + record.cpu_sys_seconds) == ("Purdue-Anvil", 4, 7200, 21600)
    assert "format=slurm read=1 inserted=1" in capsys.readouterr().out
