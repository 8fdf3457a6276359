"""Hostile and broken input through the real bundle path (issue 3, DOMAIN.md "Bad input").

Every file of tests/corpus/ (listed in its README.md) and the inputs generated here (a 10 MB line, zip and
tar bombs, an archive of many members) is ingested with `create_bundle_from_path` + `ingest_bundle`, a few
also through the upload API, and must end with:
- a rejection naming the file (`bundle:member` inside an archive), the line where a line applies, and the
  reason;
- bounded time and memory: under SECONDS, at most TRACED_BYTES of Python allocations at the peak
  (tracemalloc) and at most RSS_BYTES of growth of the process's peak resident memory;
- nothing written outside the bundle store (the test's whole temporary tree, which is also the process's
  working directory and TMPDIR, is compared before and after; the store holds exactly the bundle's file);
- the good records of the same bundle ingested, duplicates counted once.
"""
from __future__ import annotations

import gc
import io
import resource
import shutil
import tarfile
import tempfile
import time
import tracemalloc
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from django.contrib.auth.models import Permission, User
from django.urls import reverse

from accounting.models import CapacitySnapshot, UsageRecord
from ingest.models import Bundle
from ingest.services import members
from ingest.services.bundles import create_bundle_from_path, ingest_bundle

pytestmark = pytest.mark.django_db

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
SECONDS = 10.0
TRACED_BYTES = 16 * 1024**2  # the HTCondor parser reads 1 MiB blocks into a buffer of 2 MiB (more only while an ad is longer)
RSS_BYTES = 200 * 1024**2
MiB = 1024**2
# Absolute member names in the corpus archives point here; nothing may ever appear there.
VICTIM = Path("/tmp/gridledger-hostile-corpus")


def condor(n: int) -> str:
    return f"ce.example.org#{n}.0#1710000000"


def gratia(n: int) -> str:
    return f"ce.example.org#{n}.0#1710000000"  # the condor probe's GlobalJobId without its "condor." prefix


def apel(n: int) -> str:
    return f"EXAMPLE-SITE|{n}|1710068400"


def slurm(n: int) -> str:
    return f"slurm|hpc1|{n}"


def pbs(n: int) -> str:
    return f"pbs|pbs01.example.org|{n}.pbs01.example.org|1710068400"


def ncsa(n: int) -> str:
    return f"ncsa|D2|{n}"


def snapshot(n: int) -> str:
    return f"2024-03-10T{n:02d}:00:00+00:00|SITE_A|ce01.example.org|cms"  # a CapacitySnapshot, not a UsageRecord


def pilot(n: int) -> str:
    return f"ce.example.org#{n}.0"  # a factory completed_jobs line whose id names its schedd


def ad(n: int) -> str:
    """A good HTCondor history ad, eight lines: 2 cores for an hour, ending 2024-03-10 14:00 UTC."""
    return (
        f'*** job {n}\nGlobalJobId = "{condor(n)}"\nOwner = "user{n}"\nx509UserProxyVOName = "cms"\n'
        f"RemoteWallClockTime = 3600\nRequestCpus = 2\nRemoteUserCpu = 100\nCompletionDate = 1710079200\n"
    )


# --- measuring and sandboxing ---


@dataclass
class Outcome:
    bundle: Bundle
    seconds: float
    traced_peak: int
    rss_growth: int

    @property
    def errors(self) -> list[tuple[str, int | None, str]]:
        return list(self.bundle.errors.values_list("file", "line", "reason"))

    def assert_bounded(self, seconds: float = SECONDS, traced: int = TRACED_BYTES) -> None:
        assert self.seconds < seconds, f"took {self.seconds:.1f} s"
        assert self.traced_peak < traced, f"peak of {self.traced_peak / MiB:.0f} MiB of Python allocations"
        assert self.rss_growth < RSS_BYTES, f"peak resident memory grew by {self.rss_growth / MiB:.0f} MiB"


def peak_rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux


def measured(action, trace: bool = True) -> tuple[object, float, int, int]:
    """(result, seconds, tracemalloc peak (0 untraced), growth of the peak RSS) of `action()`."""
    gc.collect()
    rss = peak_rss()
    if trace:
        tracemalloc.start()
    start = time.perf_counter()
    try:
        result = action()
        seconds = time.perf_counter() - start
        traced = tracemalloc.get_traced_memory()[1] if trace else 0
    finally:
        tracemalloc.stop()
    return result, seconds, traced, peak_rss() - rss


class Sandbox:
    """One test's temporary tree: `inputs/`, the bundle store `store/`, and `work/` and `tmp/`, the process's
    working directory and TMPDIR while the test runs. `ingest` checks that nothing but the store changed."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.inputs, self.store = root / "inputs", root / "store"
        for path in (self.inputs, self.store, root / "work", root / "tmp"):
            path.mkdir()

    def put(self, name: str, content: bytes | str | Path) -> Path:
        path = self.inputs / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, Path):
            shutil.copyfile(content, path)
        else:
            path.write_bytes(content.encode() if isinstance(content, str) else content)
        return path

    def tree(self) -> dict[str, tuple[int, int]]:
        """Every path under the root but the store, with size and modification time."""
        entries = {}
        for path in self.root.rglob("*"):
            if path == self.store or self.store in path.parents:
                continue
            stat = path.lstat()  # a directory's own times change when a temporary file comes and goes
            entries[str(path.relative_to(self.root))] = (0, 0) if path.is_dir() else (stat.st_size, stat.st_mtime_ns)
        return entries

    def stored(self) -> list[str]:
        return sorted(str(p.relative_to(self.store)) for p in self.store.rglob("*") if not p.is_dir())

    def run(self, action, trace: bool = True) -> tuple[object, float, int, int]:
        before, stored = self.tree(), self.stored()
        result = measured(action, trace)
        assert self.tree() == before, "something was written outside the bundle store"
        assert not VICTIM.exists()
        new = sorted(set(self.stored()) - set(stored))
        assert len(new) <= 1 and all(len(name) == 2 + 1 + 64 and name[2] == "/" for name in self.stored()), self.stored()
        return result

    def ingest(self, path: Path, trace: bool = True, **kwargs) -> Outcome:
        bundle, *numbers = self.run(lambda: ingest_bundle(create_bundle_from_path(path, **kwargs).pk), trace)
        return Outcome(bundle, *numbers)


@pytest.fixture
def sandbox(tmp_path, settings, monkeypatch) -> Sandbox:
    box = Sandbox(tmp_path)
    settings.BUNDLE_STORE = box.store
    monkeypatch.chdir(box.root / "work")
    monkeypatch.setattr(tempfile, "tempdir", str(box.root / "tmp"))
    monkeypatch.setenv("TMPDIR", str(box.root / "tmp"))
    yield box
    members.close_archives()


def keys() -> set[str]:
    return set(UsageRecord.objects.values_list("natural_key", flat=True))


def snapshot_keys() -> set[str]:
    return set(CapacitySnapshot.objects.values_list("natural_key", flat=True))


# --- the committed corpus (tests/corpus/README.md) ---


@dataclass(frozen=True)
class Case:
    """A corpus file, the records that must be ingested from it and its rejections in order:
    (member inside an archive or None, line or None, a fragment of the reason)."""

    path: str
    good: frozenset[str]
    errors: tuple[tuple[str | None, int | None, str], ...]
    duplicates: int = 0
    updated: int = 0
    status: str = "done"
    options: dict = field(default_factory=dict)


def case(path, good, errors, **kwargs) -> Case:
    return Case(path, frozenset(good), tuple(errors), **kwargs)


DTD_REFUSED = "XML with a DTD, entity or external reference refused"
CASES = [
    case("htcondor/broken-values.history", {condor(1), condor(9), condor(10)}, [
        (None, 10, "negative wall time (-3600 s)"),
        (None, 18, "RemoteWallClockTime is not a number: 'nan'"),
        (None, 26, "RemoteWallClockTime is not a number: 'inf'"),
        (None, 34, "absurd wall time (3.1536e+08 s, more than a year)"),
        (None, 42, "time out of range (end 1.71008e+09, wall 1e+17 s)"),
        (None, 50, "end 2100-01-01T00:00:00+00:00 is in the future"),
        (None, 58, "start 1973-03-03T08:46:40+00:00 is before 1995"),
    ]),
    case("htcondor/duplicates.history", {condor(1), condor(2)}, [], duplicates=2, updated=1),
    case("htcondor/truncated.history", {condor(1), condor(2)}, [(None, 24, "not a ClassAd attribute line: 'Completio'")]),
    case("htcondor/latin1.history", {condor(1), condor(3)}, [(None, 11, "not UTF-8 (byte 0xfc at column 11)")]),
    case("gratia/broken-values.xml", {gratia(1), gratia(7)}, [
        (None, 13, "WallDuration is not an ISO 8601 duration: '-PT1H'"),
        (None, 23, "WallDuration is not an ISO 8601 duration: 'PTNaNS'"),
        (None, 33, "absurd wall time (8.63991e+09 s, more than a year)"),
        (None, 43, "end 2024-03-10T10:00:00+00:00 is before start 2024-03-10T11:00:00+00:00"),
        (None, 53, "end 2099-12-31T23:00:00+00:00 is in the future"),
    ], duplicates=1),
    case("gratia/billion-laughs.xml", set(), [(None, 2, DTD_REFUSED)], status="failed"),
    case("gratia/external-entity.xml", set(), [(None, 2, DTD_REFUSED)], status="failed"),
    case("gratia/external-parameter-entity.xml", set(), [(None, 2, DTD_REFUSED)], status="failed"),
    case("gratia/undeclared-entity.xml", {gratia(1)}, [(None, 13, "(undefined entity) at line 16: this record is lost")]),
    case("gratia/latin1.xml", {gratia(1)}, [(None, 13, "(invalid token)) at line 16: this record is lost")]),
    case("gratia/truncated.xml", {gratia(1), gratia(2)}, [(None, 23, "(no element found) at line 29: this record is lost")]),
    case("apel/broken-values.apel", {apel(1), apel(7)}, [
        (None, 14, "line 20: negative WallDuration (-3600)"),
        (None, 26, "line 32: WallDuration is not a whole number: 'NaN'"),
        (None, 38, "absurd wall time (1e+11 s, more than a year)"),
        (None, 50, "end 2024-03-10T10:00:00+00:00 is before start 2024-03-10T11:00:00+00:00"),
        (None, 62, "end 2100-01-01T00:00:00+00:00 is in the future"),
    ], duplicates=1),
    case("apel/latin1.apel", {apel(1), apel(3)}, [(None, 14, "line 18 is not UTF-8 (byte 0xe9 at column 31)")]),
    case("apel/truncated.apel", {apel(1)}, [(None, 14, "missing mandatory fields WallDuration, CpuDuration, StartTime, EndTime")]),
    case("slurm/broken-values.sacct", {slurm(1), slurm(7)}, [
        (None, 3, "negative wall time (-3600 s)"),
        (None, 4, "ElapsedRaw is not a number of seconds: 'nan'"),
        (None, 5, "absurd wall time (1e+11 s, more than a year)"),
        (None, 6, "end 2024-03-10T10:00:00+00:00 is before start 2024-03-10T11:00:00+00:00"),
        (None, 7, "end 2099-12-31T23:00:00+00:00 is in the future"),
    ], duplicates=1),
    case("slurm/latin1.sacct", {slurm(1), slurm(3)}, [(None, 3, "not UTF-8 (byte 0xe9 at column 13)")]),
    case("slurm/truncated.sacct", {slurm(1)}, [(None, 3, "11 fields where the header has 13")]),
    case("pbs/broken-values.pbs", {pbs(1), pbs(5)}, [
        (None, 2, "negative wall time (-3600 s)"),
        (None, 3, "end 2024-03-10T10:00:00+00:00 is before start 2024-03-10T11:00:00+00:00"),
        (None, 4, "end 2100-01-01T00:00:00+00:00 is in the future"),
    ], duplicates=1),
    case("misc/completed-jobs-dtd.log", {"ce.example.org#1.0", "ce.example.org#3.0"},
         [(None, 2, "refused XML construct (DTDForbidden): entities are never expanded")]),
    case("misc/empty", set(), [(None, None, "unrecognised format")], status="failed"),
    case("misc/garbage.bin", set(), [(None, None, "unrecognised format")], status="failed"),
    case("archives/traversal.tar", {condor(101), condor(105)}, [
        ("../escape.history", None, "path with '..' in archive"),
        ("logs/../../escape-too.history", None, "path with '..' in archive"),
        ("/tmp/gridledger-hostile-corpus/absolute.history", None, "absolute path in archive"),
        ("logs/passwd", None, "link in archive"),
        ("logs/up", None, "link in archive"),
        ("logs/shadow", None, "link in archive"),
        ("logs/null", None, "special file in archive"),
        ("logs/fifo", None, "special file in archive"),
        ("logs/shadowed.history", None, "link in archive"),
    ]),
    case("archives/traversal.zip", {condor(101)}, [
        ("../escape.history", None, "path with '..' in archive"),
        ("/tmp/gridledger-hostile-corpus/absolute.history", None, "absolute path in archive"),
        ("C:/Windows/drive.history", None, "absolute path in archive"),
        ("logs\\..\\..\\backslash.history", None, "path with '..' in archive"),
        ("logs/passwd", None, "symbolic link in archive"),
    ]),
    case("archives/damaged.zip", {condor(101)}, [
        ("bad-crc.history", None, "could not read: bad-crc.history: Bad CRC-32"),
        ("encrypted.history", None, "encrypted member in archive"),
        ("method99.history", None, "unsupported compression method 99 in archive"),
    ]),
    case("archives/truncated.tgz", {condor(111)}, [
        ("logs/h1.history", None, "could not read: logs/h1.history: Compressed file ended"),
        ("(after logs/h1.history)", None, "archive cut short or corrupt, not read further"),
    ], duplicates=39),
]  # fmt: skip


def test_every_corpus_file_has_a_case_and_a_readme_entry():
    files = {str(p.relative_to(CORPUS)) for p in CORPUS.rglob("*") if p.is_file() and p.name != "README.md"}
    assert files == {c.path for c in CASES}
    readme = (CORPUS / "README.md").read_text()
    assert all(f"`{name}`" in readme for name in files)


@pytest.mark.parametrize("case", CASES, ids=[c.path for c in CASES])
def test_corpus_file(case, sandbox):
    path = sandbox.put(Path(case.path).name, CORPUS / case.path)
    outcome = sandbox.ingest(path, **case.options)
    outcome.assert_bounded()
    bundle = outcome.bundle
    assert bundle.status == case.status
    assert keys() == case.good
    assert (bundle.records_inserted, bundle.records_updated, bundle.duplicates) == (len(case.good), case.updated, case.duplicates)
    assert bundle.rejected == len(case.errors)
    assert len(outcome.errors) == len(case.errors)
    for (file, line, reason), (member, expected_line, fragment) in zip(outcome.errors, case.errors, strict=True):
        assert file == (str(path) if member is None else f"{path}:{member}")
        assert line == expected_line
        assert fragment in reason


def test_a_changed_resend_in_the_same_file_keeps_the_last_version(sandbox):
    sandbox.ingest(sandbox.put("duplicates.history", CORPUS / "htcondor/duplicates.history"))
    assert dict(UsageRecord.objects.values_list("natural_key", "wall_seconds")) == {condor(1): 7200, condor(2): 3600}


FORMATS = ["htcondor-history", "gratia-ur", "apel", "slurm", "pbs"]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("name", ["misc/empty", "misc/garbage.bin"])
def test_empty_and_garbage_files_forced_to_a_format_fail_with_reasons(sandbox, name, fmt):
    path = sandbox.put(Path(name).name, CORPUS / name)
    outcome = sandbox.ingest(path, fmt=fmt, site="SITE")
    outcome.assert_bounded()
    assert (outcome.bundle.status, outcome.bundle.records_read) == ("failed", 0)
    assert outcome.errors and all(file == str(path) and reason for file, _, reason in outcome.errors)
    if name.endswith("garbage.bin"):  # random bytes have lines: the rejections say which
        assert any(line is not None for _, line, _ in outcome.errors)
    assert not UsageRecord.objects.exists()


def test_garbage_empty_and_good_files_in_one_archive(sandbox):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in [("garbage.bin", (CORPUS / "misc/garbage.bin").read_bytes()), ("empty", b""),
                           ("ap/history", (ad(1) + ad(2)).encode())]:  # fmt: skip
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    path = sandbox.put("mixed.tgz", buffer.getvalue())
    outcome = sandbox.ingest(path)
    outcome.assert_bounded()
    assert (outcome.bundle.status, keys()) == ("done", {condor(1), condor(2)})
    assert outcome.errors == [
        (f"{path}:garbage.bin", None, "unrecognised format (not any of the known log formats)"),
        (f"{path}:empty", None, "unrecognised format (not any of the known log formats)"),
    ]


# --- a 10 MB single line, generated here ---

LONG = 10 * MiB
SACCT = "JobID|JobIDRaw|Cluster|User|Account|AllocCPUS|Start|End|ElapsedRaw|TotalCPU|SystemCPU|State|ExitCode\n"


def sacct_row(n: int) -> str:
    return f"{n}|{n}|hpc1|alice|astro|4|2024-03-10T10:00:00|2024-03-10T11:00:00|3600|01:00:00|00:05:00|COMPLETED|0:0\n"


def apel_record(n: int, user: str = "/DC=org/CN=Alice") -> str:
    return (f"Site: EXAMPLE-SITE\nLocalJobId: {n}\nGlobalUserName: {user}\nWallDuration: 3600\nCpuDuration: 3000\n"
            f"StartTime: 1710064800\nEndTime: 1710068400\n")  # fmt: skip


def jur(n: int, dn: str = "/DC=org/CN=Alice") -> str:
    return (f'<JobUsageRecord xmlns="http://www.gridforum.org/2003/ur-wg">\n<JobIdentity><GlobalJobId>{gratia(n)}</GlobalJobId>'
            f"</JobIdentity>\n<UserIdentity><DN>{dn}</DN></UserIdentity>\n<WallDuration>PT1H</WallDuration>\n"
            f"<StartTime>2024-03-10T10:00:00Z</StartTime><EndTime>2024-03-10T11:00:00Z</EndTime>\n</JobUsageRecord>\n")  # fmt: skip


def pbs_end(n: int, user: str = "alice") -> str:
    return (f"03/10/2024 11:00:00;E;{n}.pbs01.example.org;user={user} group=users account=astro queue=batch "
            f"start=1710064800 end=1710068400 Exit_status=0 Resource_List.ncpus=2 resources_used.walltime=01:00:00\n")  # fmt: skip


NCSA_HEADER = "H|Charges|D2|20240301:000000|20240331:235959||SESS_ACCT\n"


def ncsa_row(n: int, name: str = "alice") -> str:
    """An NCSA data record: one cpu hour and one service unit, 10:00 to 11:00 on 2024-03-10."""
    return f"D|alice|{name}|PSN0042|batch|1.000000E+00|NULL|NULL|1.000000E+00|NULL|d2k|{n}|20240310:100000|20240310:110000||\n"


def ncsa_section(*rows: str) -> str:
    """Header, rows and the trailer their producer writes: every row counted and totalled."""
    return NCSA_HEADER + "".join(rows) + f"T|{len(rows)}|{len(rows):.6E}|NULL|NULL|{len(rows):.6E}\n"


SNAPSHOT = "timestamp,site,idle_cores,pilots_queued,idle_jobs,resource,vo\n"


def snapshot_row(n: int, site: str = "SITE_A") -> str:
    return f"2024-03-10T{n:02d}:00:00Z,{site},120,4,350,ce01.example.org,cms\n"


def completed_line(n: int, client: str = "fe") -> str:
    return (f'<job terminated="2024-03-10T11:00:00+00:00" client="{client}" username="u" id="{pilot(n)}" duration="3600" '
            f'condor_started="True" condor_duration="3500"><user jobsnr="1" duration="3000" goodput="3000" terminated="3000"/>'
            f'<wastemill validation="10" idle="50" nosuccess="0" badput="0"/></job>\n')  # fmt: skip


def long_line_file(fmt: str) -> tuple[str, set[str], list[tuple[int, str]]]:
    """(content, good keys, rejections as (line of the long line or of its record, a fragment of the reason))
    with a 10 MB line in the middle."""
    filler = "A" * LONG
    too_long = "line longer than 1 MiB"
    if fmt == "htcondor-history":
        return ad(1) + f"*** job 2\nGlobalJobId = \"{condor(2)}\"\nOwner = \"{filler}\"\n" + ad(3), {condor(1), condor(3)}, [(11, too_long)]
    if fmt == "slurm":
        return SACCT + sacct_row(1) + f"2|2|hpc1|{filler}\n" + sacct_row(3), {slurm(1), slurm(3)}, [(3, too_long)]
    if fmt == "apel":
        text = "APEL-individual-job-message: v0.3\n" + "%%\n".join([apel_record(1), apel_record(2, filler), apel_record(3)])
        return text, {apel(1), apel(3)}, [(10, "line 12 is longer than 1 MiB")]
    if fmt == "gratia-ur":  # a 10 MB DN inside the second record of an envelope
        text = '<?xml version="1.0"?>\n<RecordEnvelope>\n' + jur(1) + jur(2, filler) + jur(3) + "</RecordEnvelope>\n"
        return text, {gratia(1), gratia(3)}, [(9, "record larger than 1048576 characters")]
    if fmt == "pbs":
        return pbs_end(1) + pbs_end(2, user=filler) + pbs_end(3), {pbs(1), pbs(3)}, [(2, too_long)]
    if fmt == "ncsa":
        # The format's rule (ncsa.py): a header-to-trailer bundle is taken whole or not at all. The long line is
        # a data record whose numbers cannot be read; its trailer counted and totalled it, so the totals disagree
        # and the first bundle (lines 1-5) is rejected whole: the long line on its line, then the trailer. The
        # second bundle of the file (lines 6-9) is read and taken.
        text = ncsa_section(ncsa_row(1), ncsa_row(2, name=filler), ncsa_row(3)) + ncsa_section(ncsa_row(4), ncsa_row(5))
        disagree = "totalcpu 3 but the records sum to 2; totalsu 3 but the records sum to 2; the whole bundle (header on line 1) is rejected"
        return text, {ncsa(4), ncsa(5)}, [(3, too_long), (5, disagree)]
    if fmt == "snapshot":
        return SNAPSHOT + snapshot_row(10) + snapshot_row(11, site=filler) + snapshot_row(12), {snapshot(10), snapshot(12)}, [(3, too_long)]
    if fmt == "gwms-completed":
        return completed_line(1) + completed_line(2, client=filler) + completed_line(3), {pilot(1), pilot(3)}, [(2, too_long)]
    raise AssertionError(fmt)


@pytest.mark.parametrize("fmt", ["htcondor-history", "slurm", "apel", "gratia-ur", "pbs", "ncsa", "snapshot", "gwms-completed"])
def test_a_ten_megabyte_line_is_rejected_and_the_rest_of_the_file_read(sandbox, fmt):
    text, good, errors = long_line_file(fmt)
    path = sandbox.put("long", text)
    del text
    outcome = sandbox.ingest(path)
    outcome.assert_bounded(traced=6 * LONG)  # a few times the line at most
    assert (outcome.bundle.status, outcome.bundle.format) == ("done", fmt)
    # snapshots are not job records: they land in CapacitySnapshot
    assert (keys(), snapshot_keys()) == ((set(), good) if fmt == "snapshot" else (good, set()))
    assert outcome.bundle.records_inserted == len(good)
    assert [(file, line) for file, line, _ in outcome.errors] == [(str(path), line) for line, _ in errors]
    for (_, _, reason), (_, fragment) in zip(outcome.errors, errors, strict=True):
        assert fragment in reason


def test_a_ten_megabyte_line_without_any_newline_is_refused(sandbox):
    path = sandbox.put("one-line", b"GlobalJobId = " + b"9" * LONG)
    outcome = sandbox.ingest(path, fmt="htcondor-history")
    outcome.assert_bounded(traced=6 * LONG)
    assert outcome.bundle.status == "failed"
    assert outcome.errors == [(str(path), 1, "line longer than 1 MiB")]


# --- zip and tar bombs, generated here ---


def zip_of_zeros(path: Path, name: str, size: int, good: str | None = None) -> Path:
    """A zip whose member `name` is `size` zero bytes, deflated while it is written (never held whole)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        if good is not None:
            archive.writestr("good.history", good)
        with archive.open(name, "w", force_zip64=True) as member:
            chunk = bytes(MiB)
            for _ in range(size // MiB):
                member.write(chunk)
    return path


def test_a_real_zip_bomb_is_refused_before_anything_is_unpacked(sandbox):
    size = 2 * members.RATIO_FLOOR_BYTES  # 200 MiB of zeros in about 200 KiB: a ratio near 1000
    path = zip_of_zeros(sandbox.inputs / "bomb.zip", "zeros.history", size, good=ad(1))
    assert path.stat().st_size * members.MAX_RATIO < size
    outcome = sandbox.ingest(path)
    outcome.assert_bounded(seconds=2.0, traced=8 * MiB)
    assert (outcome.bundle.status, outcome.bundle.records_read) == ("failed", 0)
    ((file, line, reason),) = outcome.errors
    assert (file, line) == (str(path), None)
    assert "(a zip bomb?), over the limit of 200x" in reason
    assert not UsageRecord.objects.exists()


def test_an_archive_over_the_total_size_limit_is_refused(sandbox, monkeypatch):
    monkeypatch.setattr(members, "MAX_TOTAL_BYTES", 4 * MiB)
    path = zip_of_zeros(sandbox.inputs / "big.zip", "zeros.history", 8 * MiB)
    outcome = sandbox.ingest(path)
    outcome.assert_bounded(seconds=2.0, traced=8 * MiB)
    assert outcome.errors == [(str(path), None, f"archive unpacks to more than {4 * MiB} bytes (the limit)")]


@pytest.mark.parametrize("kind", [tarfile.REGTYPE, b"Z"], ids=["regular", "unknown-type"])
def test_a_high_ratio_tar_gz_is_refused_at_the_bomb_members_header(sandbox, monkeypatch, kind):
    """The listing stops at the header: the 64 MiB of the second member are never decompressed. An entry of a
    type tarfile does not know counts too: tarfile reads past its data as if it were a file."""
    monkeypatch.setattr(members, "RATIO_FLOOR_BYTES", MiB)
    path = sandbox.inputs / "bomb.tgz"
    with tarfile.open(path, "w:gz") as tar:
        good = ad(1).encode()
        info = tarfile.TarInfo("good.history")
        info.size = len(good)
        tar.addfile(info, io.BytesIO(good))
        info = tarfile.TarInfo("zeros.history")
        info.type, info.size = kind, 64 * MiB
        tar.addfile(info, io.BytesIO(bytes(info.size)))
    outcome = sandbox.ingest(path)
    outcome.assert_bounded(seconds=2.0, traced=8 * MiB)
    ((_, _, reason),) = outcome.errors
    assert "(a zip bomb?), over the limit of 200x" in reason


def test_a_zip_member_that_unpacks_past_its_declared_size_is_cut_there(sandbox):
    """The central directory says 64 bytes; the data inflates to 32 MiB. Reading stops at 64 bytes (the CRC
    then fails): the member is rejected, its neighbour ingested."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("good.history", ad(1))
        archive.writestr("zeros.history", bytes(32 * MiB))
    raw = bytearray(buffer.getvalue())
    entry = raw.rindex(b"PK\x01\x02")  # the central directory entry of the last member
    assert raw[entry + 46 : entry + 46 + 13] == b"zeros.history"
    raw[entry + 24 : entry + 28] = (64).to_bytes(4, "little")  # uncompressed size in the central directory
    path = sandbox.put("liar.zip", bytes(raw))
    outcome = sandbox.ingest(path)
    outcome.assert_bounded(seconds=2.0, traced=8 * MiB)
    assert (outcome.bundle.status, keys()) == ("done", {condor(1)})
    assert outcome.errors == [(f"{path}:zeros.history", None, "could not read: zeros.history: Bad CRC-32 for file 'zeros.history'")]


def pax_record(key: str, value: bytes) -> bytes:
    """A pax record, `LEN key=value` and a newline, LEN counting the whole record, its own digits included."""
    body = b" " + key.encode() + b"=" + value + b"\n"
    digits = len(str(len(body)))
    digits += len(str(len(body) + digits)) > digits
    return str(len(body) + digits).encode() + body


def tar_header(name: str, kind: bytes, size: int) -> bytes:
    info = tarfile.TarInfo(name)
    info.type, info.size = kind, size
    return info.tobuf(format=tarfile.GNU_FORMAT)


def test_a_tar_long_name_header_of_64_mib_is_refused_without_reading_it(sandbox):
    """Python's tarfile reads a GNU long name whole into memory: a 64 MiB one in a small .tgz is refused."""
    path = sandbox.inputs / "longname.tgz"
    with tarfile.open(path, "w:gz") as tar:  # a good member first, then the hostile header written by hand
        good = ad(1).encode()
        info = tarfile.TarInfo("good.history")
        info.size = len(good)
        tar.addfile(info, io.BytesIO(good))
        tar.fileobj.write(tar_header("././@LongLink", tarfile.GNUTYPE_LONGNAME, 64 * MiB) + b"a" * 64 * MiB)
        tar.offset += 512 + 64 * MiB
    outcome = sandbox.ingest(path)
    outcome.assert_bounded(seconds=3.0, traced=8 * MiB)
    assert outcome.errors == [(str(path), None, f"tar extended header of {64 * MiB} bytes, over the limit of 65536")]


def test_a_pax_header_built_to_make_tarfile_backtrack_is_refused(sandbox):
    """Before Python 3.11.10 tarfile parses pax headers with backtracking regular expressions (CVE-2024-6232):
    these 60 KiB headers would take seconds each. They are refused, well-formed ones are read."""
    records = [b"2 " * 30000 + b"=", b"1" * 60000, pax_record("comment", b"1" * 100)]
    good = pax_record("path", b"logs/with a long name")
    for data in [*records, good]:
        padded = tar_header("././@PaxHeader", tarfile.XHDTYPE, len(data)) + data + bytes(-len(data) % 512)
        content = ad(1).encode()
        member = tar_header("h", tarfile.REGTYPE, len(content)) + content + bytes(-len(content) % 512)
        path = sandbox.put(f"pax-{len(data)}.tar", padded * 50 + member + bytes(1024))
        outcome = sandbox.ingest(path)
        outcome.assert_bounded(seconds=2.0)
        if data is good:
            assert outcome.errors == [] and keys() == {condor(1)}
        elif data is records[2]:  # well formed, but a run of digits long enough to make a regex backtrack
            assert outcome.errors == [(str(path), None, "pax header with an over-long number")]
        else:
            assert outcome.errors == [(str(path), None, "malformed pax header record at byte 0")]


def test_sparse_tar_members_are_refused(sandbox):
    """Sparse maps are unbounded lists in Python's tarfile (a few bytes of gzip can describe millions of
    holes); accounting logs are never sparse, so an archive with one is refused."""
    content = ad(1).encode()
    member = tar_header("h", tarfile.REGTYPE, len(content)) + content + bytes(-len(content) % 512)
    sparse_map = pax_record("GNU.sparse.map", b"0,1,2,3")
    pax = tar_header("././@PaxHeader", tarfile.XHDTYPE, len(sparse_map)) + sparse_map + bytes(-len(sparse_map) % 512)
    for name, data in [("gnu-sparse.tar", member + tar_header("s", tarfile.GNUTYPE_SPARSE, 0)),
                       ("pax-sparse.tar", member + pax + tar_header("s", tarfile.REGTYPE, 0))]:  # fmt: skip
        path = sandbox.put(name, data + bytes(1024))
        outcome = sandbox.ingest(path)
        assert outcome.errors == [(str(path), None, "sparse file in archive")]
    assert not UsageRecord.objects.exists()


def test_a_zip_central_directory_too_large_for_the_member_limit_is_refused_before_it_is_parsed(sandbox, monkeypatch):
    """zipfile parses the whole central directory into memory before anything can count the members."""
    monkeypatch.setattr(members, "MAX_MEMBERS", 10)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for n in range(8):  # within the member limit, but names of 2,000 characters
            archive.writestr(f"{n}-{'n' * 2000}.history", ad(n))
    path = sandbox.put("names.zip", buffer.getvalue())
    outcome = sandbox.ingest(path)
    assert outcome.errors == [(str(path), None, "zip central directory larger than 10240 bytes (too many members)")]


def test_infinite_and_nan_counts_in_a_history_ad_no_longer_crash_the_parser():
    """`RequestCpus = inf` or `ExitCode = nan` reached int() and raised out of the parser, failing the whole
    bundle. They are read as ClassAd reads them: not numbers (the attribute's default)."""
    from ingest.parsers import ParseContext, Rejection, get_parser

    parser = get_parser("htcondor-history")
    for extra in ("ExitCode = inf", "ExitCode = nan", "RequestCpus = inf", "RequestCpus = 1e400", "MachineAttrMemory0 = inf",
                  "ExitBySignal = true\nExitSignal = nan", "RequestGPUs = -inf"):  # fmt: skip
        (record,) = parser.parse(io.BytesIO((ad(1) + extra + "\n").encode()), "h", ParseContext())
        assert not isinstance(record, Rejection) and record.cores in (1, 2) and record.gpus == 0
    (empty,) = parser.parse(io.BytesIO(b""), "h", ParseContext())
    assert empty == Rejection(None, "empty file: no job ads")


def many_members(count: int) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for n in range(count):
            data = ad(n).encode()
            info = tarfile.TarInfo(f"schedd/history.{n}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def test_an_archive_of_many_members_is_read_in_one_pass(sandbox):
    """2,000 members in a .tgz: opening each member used to re-read the archive's headers from the start
    (about 90 s here; 10,000 members, the limit, took the better part of an hour)."""
    path = sandbox.put("many.tgz", many_members(2000))
    start = time.perf_counter()
    kind, listed = members.plan(path)
    for member in listed:
        with members.open_member(path, kind, member) as stream:
            assert stream.read().startswith(b"*** job")
    assert len(listed) == 2000 and time.perf_counter() - start < 2.0


def test_an_archive_of_many_members_is_ingested(sandbox):
    """The whole path: bundles.py still writes each member's records in their own transaction (about 12 ms a
    member here), hence the looser bound; not traced, tracemalloc doubles it."""
    path = sandbox.put("many.tgz", many_members(500))
    outcome = sandbox.ingest(path, trace=False)
    outcome.assert_bounded(seconds=30.0)
    assert (outcome.bundle.records_inserted, outcome.bundle.rejected) == (500, 0)


def test_a_tar_member_shadowed_by_a_link_of_the_same_name_is_read_from_its_own_entry(sandbox):
    """tarfile's lookup by name finds the last entry of that name: here a link, which used to crash the ingest
    (KeyError) or read the link's target in place of the file."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, data, link in [("h", ad(1), ""), ("other", ad(2), ""), ("h", "", "other")]:
            info = tarfile.TarInfo(name)
            if link:
                info.type, info.linkname = tarfile.LNKTYPE, link
            else:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data.encode()) if data else None)
    path = sandbox.put("shadow.tar", buffer.getvalue())
    outcome = sandbox.ingest(path)
    assert keys() == {condor(1), condor(2)}
    assert outcome.errors == [(f"{path}:h", None, "link in archive")]
    assert UsageRecord.objects.get(natural_key=condor(1)).source_file == f"{path}:h"


def test_a_directory_bundle_leaves_links_out_and_is_spooled_inside_the_store(sandbox, monkeypatch):
    """A directory is kept as a tar of its regular files: links (to /etc/passwd, to a parent directory) are
    left out, and the tar is built inside the bundle store, not in TMPDIR (here a directory that does not exist)."""
    folder = sandbox.inputs / "dir"
    (folder / "logs").mkdir(parents=True)
    (folder / "logs" / "history").write_text(ad(1) + ad(2))
    (folder / "logs" / "passwd").symlink_to("/etc/passwd")
    (folder / "up").symlink_to(sandbox.root, target_is_directory=True)
    monkeypatch.setattr(tempfile, "tempdir", str(sandbox.root / "no-such-directory"))
    outcome = sandbox.ingest(folder)
    outcome.assert_bounded()
    assert (outcome.bundle.status, outcome.errors, keys()) == ("done", [], {condor(1), condor(2)})
    with tarfile.open(sandbox.store / outcome.bundle.stored_path) as tar:
        assert tar.getnames() == ["logs/history"]


@pytest.mark.parametrize("name", ["cut.tgz", "fake.zip"])
def test_archives_too_damaged_to_list_are_refused_with_a_reason(sandbox, name):
    """Both used to escape ingest_bundle as exceptions (EOFError, BadZipFile): the bundle never finished."""
    if name == "cut.tgz":
        data = (CORPUS / "archives/truncated.tgz").read_bytes()[:200]
    else:  # random bytes ending in a zip end record that points at a central directory that is not there
        data = bytes(range(200)) + b"PK\x05\x06" + bytes(4) + (5).to_bytes(2, "little") * 2
        data += (1000).to_bytes(4, "little") + (50).to_bytes(4, "little") + bytes(2)
    path = sandbox.put(name, data)
    outcome = sandbox.ingest(path)
    outcome.assert_bounded()
    assert outcome.bundle.status == "failed"
    if name == "fake.zip":
        ((file, line, reason),) = outcome.errors
        assert (file, line) == (str(path), None) and reason.startswith("unreadable zip archive: Bad offset")
    else:  # the first header survives the cut: that member cannot be read, then the archive ends
        assert outcome.errors == [
            (f"{path}:logs/h0.history", None, "could not read: logs/h0.history: Compressed file ended before the end-of-stream marker was reached"),
            (f"{path}:(after logs/h0.history)", None, "archive cut short or corrupt, not read further: Compressed file ended before the end-of-stream marker was reached"),
        ]


# --- through the upload API ---


@pytest.fixture
def uploader(client):
    user = User.objects.create_user("hostile-uploader", password="pw")
    user.user_permissions.add(Permission.objects.get(codename="add_bundle"))
    client.force_login(user)
    return user


def upload(client, sandbox, name: str, content: bytes, django_capture_on_commit_callbacks) -> tuple[dict, Outcome]:
    def post():
        stream = io.BytesIO(content)
        stream.name = name
        with django_capture_on_commit_callbacks(execute=True):
            response = client.post(reverse("api-bundles"), {"file": stream})
        assert response.status_code == 202, response.content
        return client.get(response.json()["url"]).json()

    body, *numbers = sandbox.run(post)
    return body, Outcome(Bundle.objects.get(pk=body["id"]), *numbers)


def test_upload_of_an_xml_bomb(client, uploader, sandbox, django_capture_on_commit_callbacks):
    body, outcome = upload(client, sandbox, "bomb.xml", (CORPUS / "gratia/billion-laughs.xml").read_bytes(), django_capture_on_commit_callbacks)
    outcome.assert_bounded()
    assert (body["status"], body["records_read"], body["rejected"]) == ("failed", 0, 1)
    (error,) = body["errors"]
    assert (error["file"], error["line"]) == ("bomb.xml", 2) and DTD_REFUSED in error["reason"]


def test_upload_of_an_archive_with_traversal_and_links(client, uploader, sandbox, django_capture_on_commit_callbacks):
    body, outcome = upload(client, sandbox, "t.tar", (CORPUS / "archives/traversal.tar").read_bytes(), django_capture_on_commit_callbacks)
    outcome.assert_bounded()
    assert (body["status"], body["records_inserted"], body["rejected"]) == ("done", 2, 9)
    assert {"file": "t.tar:../escape.history", "line": None, "reason": "path with '..' in archive"} in body["errors"]
    assert keys() == {condor(101), condor(105)}


def test_upload_of_a_zip_bomb(client, uploader, sandbox, django_capture_on_commit_callbacks):
    content = zip_of_zeros(sandbox.inputs / "b.zip", "zeros", 2 * members.RATIO_FLOOR_BYTES).read_bytes()
    body, outcome = upload(client, sandbox, "b.zip", content, django_capture_on_commit_callbacks)
    outcome.assert_bounded()
    assert (body["status"], body["records_read"]) == ("failed", 0)
    (error,) = body["errors"]
    assert error["file"] == "b.zip" and "(a zip bomb?)" in error["reason"]


def test_upload_of_a_ten_megabyte_line(client, uploader, sandbox, django_capture_on_commit_callbacks):
    """Over FILE_UPLOAD_MAX_MEMORY_SIZE, Django spools the upload to TMPDIR (the sandbox) and removes it."""
    text, good, ((line, reason),) = long_line_file("htcondor-history")
    body, outcome = upload(client, sandbox, "history", text.encode(), django_capture_on_commit_callbacks)
    del text
    outcome.assert_bounded(traced=6 * LONG)  # the test client builds the request body in memory too
    assert (body["status"], body["records_inserted"]) == ("done", 2)
    assert body["errors"] == [{"file": "history", "line": line, "reason": reason}]
    assert keys() == good
