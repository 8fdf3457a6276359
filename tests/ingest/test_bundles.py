"""Ingesting bundles: never double, never lose, bad input named by file and line."""
import io
import tarfile
import zipfile

import pytest
from django.core.management import CommandError, call_command

from accounting.models import DailyUsage, UsageRecord
from accounting.services.summaries import rebuild
from ingest.models import Bundle
from ingest.services.bundles import create_bundle_from_path, ingest_bundle

pytestmark = pytest.mark.django_db

AD = '''\
*** ClusterId = {n}
GlobalJobId = "ap1.example.org#{n}.0#1700000000"
Owner = "u{n}"
x509userproxysubject = "/DC=org/CN=User {n}"
x509UserProxyVOName = "osg"
RemoteWallClockTime = {wall}
RequestCpus = {cores}
RemoteUserCpu = 100
CompletionDate = {end}
ExitCode = 0
'''


def history(*jobs) -> str:
    return "".join(AD.format(n=n, wall=wall, cores=cores, end=end) for n, wall, cores, end in jobs)


def ingest(path, **kwargs) -> Bundle:
    return ingest_bundle(create_bundle_from_path(path, **kwargs).pk)


def table(model, *fields):
    return sorted(model.objects.values_list(*fields))


def test_same_file_twice_second_is_all_duplicates_and_tables_unchanged(bundle_store, write):
    path = write("history", history((1, 3600, 2, 1700003600), (2, 7200, 1, 1700010000), (3, 60, 4, 1700020000)))
    first = ingest(path, site="CE1")
    rebuild()
    records = table(UsageRecord, "natural_key", "record_hash", "start", "end", "wall_seconds", "cores")
    summary = table(DailyUsage, "day", "site_id", "designation", "jobs", "wall_hours", "cpu_hours")
    second = ingest(path, site="CE1")
    rebuild()
    assert (first.status, first.records_read, first.records_inserted, first.duplicates) == ("done", 3, 3, 0)
    assert (second.status, second.records_read, second.records_inserted, second.duplicates) == ("done", 3, 0, 3)
    assert table(UsageRecord, "natural_key", "record_hash", "start", "end", "wall_seconds", "cores") == records
    assert table(DailyUsage, "day", "site_id", "designation", "jobs", "wall_hours", "cpu_hours") == summary
    assert sum(r[4] for r in summary) == pytest.approx(2 * 1 + 2 * 1 + 4 * 60 / 3600)


def test_changed_resend_updates_the_job_in_place(bundle_store, write):
    ingest(write("a", history((1, 3600, 1, 1700003600))))
    bundle = ingest(write("b", history((1, 7200, 1, 1700007200))))
    assert (bundle.records_inserted, bundle.records_updated, bundle.duplicates) == (0, 1, 0)
    (record,) = UsageRecord.objects.all()
    assert record.wall_seconds == 7200


def test_duplicate_records_inside_one_file_count_once(bundle_store, write):
    bundle = ingest(write("h", history((1, 3600, 1, 1700003600), (1, 3600, 1, 1700003600))))
    assert (bundle.records_read, bundle.records_inserted, bundle.duplicates) == (2, 1, 1)
    assert UsageRecord.objects.count() == 1


def test_bad_records_are_rejected_by_file_and_line_and_good_ones_stay(bundle_store, write):
    good = history((1, 3600, 1, 1700003600))
    bad_number = 'GlobalJobId = "ap1#9.0#1"\nRemoteWallClockTime = lots\nCompletionDate = 1700000000\n'
    bad_bytes = b'\nGlobalJobId = "ap1#10.0#1"\nOwner = "\xff\xfe"\nRemoteWallClockTime = 5\nCompletionDate = 1700000000\n'
    path = write("mixed.history", good.encode() + b"\n" + bad_number.encode() + bad_bytes + b"\n" + history((2, 60, 1, 1700003600)).encode())
    bundle = ingest(path)
    assert bundle.status == "done"
    assert (bundle.records_inserted, bundle.rejected) == (2, 2)
    errors = list(bundle.errors.values_list("file", "line", "reason"))
    assert errors[0][0].endswith("mixed.history") and errors[0][1] == 12
    assert "RemoteWallClockTime is not a number" in errors[0][2]
    assert errors[1][1] == 17 and "not UTF-8" in errors[1][2]
    assert set(UsageRecord.objects.values_list("natural_key", flat=True)) == {"ap1.example.org#1.0#1700000000", "ap1.example.org#2.0#1700000000"}


def test_a_file_that_is_not_history_fails_with_a_reason(bundle_store, write):
    bundle = ingest(write("notes.txt", "Dear admin,\nplease find attached\n"))
    assert bundle.status == "failed"
    assert bundle.records_read == 0
    (error,) = bundle.errors.all()
    assert "unrecognised format" in error.reason


def test_a_truncated_file_keeps_every_complete_ad(bundle_store, write):
    text = history((1, 3600, 1, 1700003600), (2, 3600, 1, 1700003600))
    bundle = ingest(write("cut", text[: len(text) - 60]))
    assert (bundle.status, bundle.records_inserted, bundle.rejected) == ("done", 1, 1)


def test_empty_file_fails(bundle_store, write):
    bundle = ingest(write("empty", b""), fmt="htcondor-history")
    assert bundle.status == "failed"


def test_archives_are_read_member_by_member_and_unsafe_members_refused(bundle_store, tmp_path, write):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, text in [("logs/a.history", history((1, 3600, 1, 1700003600))), ("../evil.history", history((2, 60, 1, 1700003600))),
                           ("/abs.history", history((3, 60, 1, 1700003600)))]:
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        link = tarfile.TarInfo("logs/link")
        link.type = tarfile.SYMTYPE
        link.linkname = "/etc/passwd"
        tar.addfile(link)
    path = write("bundle.tgz", buffer.getvalue())
    bundle = ingest(path)
    assert bundle.status == "done"
    assert bundle.records_inserted == 1
    reasons = sorted(bundle.errors.values_list("reason", flat=True))
    assert reasons == ["absolute path in archive", "link in archive", "path with '..' in archive"]
    assert not (tmp_path / "evil.history").exists()


def test_zip_and_directory_bundles(bundle_store, tmp_path, write):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("one/history", history((1, 3600, 1, 1700003600)))
        archive.writestr("two/history", history((2, 3600, 1, 1700003600)))
    assert ingest(write("b.zip", buffer.getvalue())).records_inserted == 2
    write("dir/x/history", history((3, 3600, 1, 1700003600)))
    write("dir/y/history", history((4, 3600, 1, 1700003600)))
    assert ingest(tmp_path / "dir").records_inserted == 2


def test_ingest_command_prints_one_line_per_bundle_and_rebuilds(bundle_store, write, capsys):
    path = write("h", history((1, 7200, 3, 1700010000)))
    call_command("ingest", str(path), "--site", "CE1")
    out = capsys.readouterr().out
    assert "format=htcondor-history read=1 inserted=1 duplicates=0 rejected=0" in out
    # 23:00 to 01:00 UTC: 3 cores x 1 h on each of two days
    assert sorted(DailyUsage.objects.reported().filter(site__name="CE1").values_list("wall_hours", flat=True)) == [3.0, 3.0]
    assert sum(DailyUsage.objects.values_list("wall_hours", flat=True)) == pytest.approx(6.0)


def test_ingest_command_fails_for_unreadable_paths(bundle_store, write, tmp_path):
    with pytest.raises(CommandError):
        call_command("ingest", str(tmp_path / "missing"))
    with pytest.raises(CommandError):
        call_command("ingest", str(write("junk", b"\x00\x01garbage")))


def test_a_parser_crash_rejects_that_file_and_keeps_the_bundle_going(bundle_store, tmp_path, monkeypatch):
    from ingest.parsers.htcondor_history import HTCondorHistoryParser

    real = HTCondorHistoryParser.parse

    def crashing(self, stream, filename, context, **kwargs):
        for number, item in enumerate(real(self, stream, filename, context, **kwargs)):
            if filename.endswith("bad") and number == 1:
                raise RuntimeError("parser bug")
            yield item

    monkeypatch.setattr(HTCondorHistoryParser, "parse", crashing)
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "bad").write_text(history((1, 60, 1, 1700003600), (2, 60, 1, 1700003600)))
    (tmp_path / "d" / "good").write_text(history((3, 60, 1, 1700003600)))
    bundle = ingest(tmp_path / "d")
    assert (bundle.status, bundle.records_inserted, bundle.rejected) == ("done", 2, 1)
    (error,) = bundle.errors.all()
    assert error.file.endswith(":bad") and "internal error" in error.reason and "RuntimeError: parser bug" in error.reason


@pytest.mark.django_db(transaction=True)
def test_a_second_delivery_leaves_a_running_ingest_alone(bundle_store, write):
    import psycopg
    from django.db import connection

    from ingest.services.bundles import BUNDLE_LOCK_CLASS

    bundle = create_bundle_from_path(write("h", history((1, 60, 1, 1700003600))))
    db = connection.settings_dict
    with psycopg.connect(host=db["HOST"], port=db["PORT"], user=db["USER"], dbname=db["NAME"], autocommit=True) as other:
        other.execute("SELECT pg_advisory_lock(%s, %s)", [BUNDLE_LOCK_CLASS, bundle.pk])  # a worker is on it
        assert ingest_bundle(bundle.pk).status == "queued"
        assert not UsageRecord.objects.exists()
        other.execute("SELECT pg_advisory_unlock(%s, %s)", [BUNDLE_LOCK_CLASS, bundle.pk])  # that worker is done
    assert ingest_bundle(bundle.pk).records_inserted == 1


def test_progress_reaches_the_bar_every_5000_records_and_the_bundle_at_most_once_a_second(tmp_path, monkeypatch):
    """The command line's bar hears of every 5,000 records; the bundle's row (its page, the API) is saved at the
    first of them and then at most once a second (a fake clock: 0.3 s per 5,000 records)."""
    from ingest.services import bundles

    clock = [100.0]
    monkeypatch.setattr(bundles.time, "monotonic", lambda: clock[0])
    saved = []
    save = bundles._save_progress
    monkeypatch.setattr(bundles, "_save_progress", lambda bundle, read, *rest: (saved.append(read), save(bundle, read, *rest)))
    bar = []

    def progress(done: int, total: int) -> None:
        bar.append((done, total))
        clock[0] += 0.3

    path = tmp_path / "history"
    path.write_text(history(*[(n, 3600, 1, 1700000000 + n) for n in range(30_000)]))
    bundle = create_bundle_from_path(path)
    bundle = ingest_bundle(bundle.pk, progress)
    assert saved == [5000, 25000]  # 0.0 s, then 1.2 s: 0.3, 0.6 and 0.9 s were too soon
    assert len(bar) == 7 and [done for done, _ in bar] == sorted(done for done, _ in bar)
    assert bar[-1] == (bundle.size_bytes, bundle.size_bytes) and bundle.records_read == 30_000
