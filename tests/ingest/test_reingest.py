"""`manage.py reingest BUNDLE_ID`: re-parse kept bundles after a parser fix, through the ingest path."""
import pytest
from django.core.management import CommandError, call_command

from accounting.models import DailyUsage, UsageRecord
from ingest.models import Bundle
from ingest.parsers import ParsedRecord, Rejection
from ingest.parsers.htcondor_history import HTCondorHistoryParser
from ingest.services import store

pytestmark = pytest.mark.django_db

AD = """\
*** ClusterId = {n}
GlobalJobId = "ap1.example.org#{n}.0#1700000000"
x509UserProxyVOName = "osg"
RemoteWallClockTime = 3600
RequestCpus = {cores}
CompletionDate = 1700010000
"""
HISTORY = "".join(AD.format(n=n, cores=cores) for n, cores in [(1, 1), (2, 4), (3, 2)])
KEY = "ap1.example.org#{}.0#1700000000"


@pytest.fixture
def buggy_parser(monkeypatch):
    """The history parser before its "fix": job 2 loses its cores, job 3 is wrongly rejected."""
    real = HTCondorHistoryParser.parse

    def parse(self, stream, filename, context, **extras):
        for item in real(self, stream, filename, context, **extras):
            if isinstance(item, ParsedRecord) and item.natural_key == KEY.format(3):
                yield Rejection(item.line, "a parser bug")
                continue
            if isinstance(item, ParsedRecord) and item.natural_key == KEY.format(2):
                item.cores = 1
            yield item

    monkeypatch.setattr(HTCondorHistoryParser, "parse", parse)
    return monkeypatch


def reported_hours() -> float:
    return sum(DailyUsage.objects.reported().values_list("wall_hours", flat=True))


def test_reingest_after_a_parser_fix_updates_rows_and_rebuilds(bundle_store, write, buggy_parser, capsys):
    call_command("ingest", str(write("history", HISTORY)), "--site", "CE1")
    bundle = Bundle.objects.get()
    assert (bundle.records_inserted, bundle.rejected) == (2, 1)
    assert reported_hours() == pytest.approx(1 + 1)
    capsys.readouterr()

    buggy_parser.undo()  # the fix is deployed
    call_command("reingest", str(bundle.pk))

    out = capsys.readouterr().out
    # counts start afresh: job 1 is this bundle's own unchanged row (counted as inserted, as on any re-run
    # of a bundle), job 2 is updated in place, job 3 (rejected before) is new; no rejection is left
    assert f"bundle={bundle.pk} format=htcondor-history read=3 inserted=2 duplicates=0 rejected=0 updated=1" in out
    assert "rebuilt 2023-11-15..2023-11-15" in out  # CompletionDate 01:00 UTC, one hour jobs
    bundle.refresh_from_db()
    assert (bundle.status, bundle.records_read, bundle.rejected, bundle.errors.count()) == ("done", 3, 0, 0)
    assert dict(UsageRecord.objects.values_list("natural_key", "cores")) == {KEY.format(1): 1, KEY.format(2): 4, KEY.format(3): 2}
    assert UsageRecord.objects.count() == 3  # never doubled
    assert reported_hours() == pytest.approx(1 + 4 + 2)

    # a second reingest with nothing to fix changes nothing
    call_command("reingest", str(bundle.pk))
    assert "read=3 inserted=3 duplicates=0 rejected=0 updated=0" in capsys.readouterr().out
    assert reported_hours() == pytest.approx(7)


def test_records_other_bundles_hold_are_duplicates(bundle_store, write, capsys):
    call_command("ingest", str(write("a", HISTORY)), "--no-rebuild")
    call_command("ingest", str(write("b", HISTORY + AD.format(n=4, cores=1))), "--no-rebuild")
    first, second = Bundle.objects.order_by("pk")
    capsys.readouterr()
    call_command("reingest", str(second.pk))
    assert f"bundle={second.pk} format=htcondor-history read=4 inserted=1 duplicates=3 rejected=0 updated=0" in capsys.readouterr().out
    assert UsageRecord.objects.count() == 4


def test_reingest_of_an_unknown_id_or_a_missing_file_fails(bundle_store, write, capsys):
    with pytest.raises(CommandError):
        call_command("reingest", "987654")
    assert "bundle 987654: no such bundle" in capsys.readouterr().err

    call_command("ingest", str(write("history", HISTORY)), "--no-rebuild")
    bundle = Bundle.objects.get()
    capsys.readouterr()
    # a good id beside an unknown one: the good one is re-parsed, the command still fails
    with pytest.raises(CommandError):
        call_command("reingest", str(bundle.pk), "987654", "--no-rebuild")
    captured = capsys.readouterr()
    assert f"bundle={bundle.pk} " in captured.out and "987654: no such bundle" in captured.err

    store.absolute(bundle.stored_path).unlink()
    with pytest.raises(CommandError):
        call_command("reingest", str(bundle.pk))
    assert "is missing from the bundle store" in capsys.readouterr().err


def test_a_bundle_being_ingested_needs_force(bundle_store, write, capsys):
    call_command("ingest", str(write("history", HISTORY)), "--no-rebuild")
    bundle = Bundle.objects.get()
    Bundle.objects.filter(pk=bundle.pk).update(status=Bundle.Status.RUNNING)
    with pytest.raises(CommandError):
        call_command("reingest", str(bundle.pk))
    assert "status running" in capsys.readouterr().err
    call_command("reingest", str(bundle.pk), "--force", "--no-rebuild")
    bundle.refresh_from_db()
    assert bundle.status == "done"
