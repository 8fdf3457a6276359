"""The HTCondor history parser on hand-written ads and on the real Gratia probe samples."""
import io
import math
from datetime import datetime, timezone

import classad2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingest.parsers import ParseContext, ParsedRecord, Rejection, detect_format
from ingest.parsers.htcondor_history import HTCondorHistoryParser

PARSER = HTCondorHistoryParser()
NOW = datetime(2026, 11, 21, tzinfo=timezone.utc)
CONTEXT = ParseContext(now=NOW)


def parse(text: str | bytes, context=CONTEXT) -> list:
    data = text.encode() if isinstance(text, str) else text
    return list(PARSER.parse(io.BytesIO(data), "history", context))


PAYLOAD = '''\
*** ProcId = 3 ClusterId = 1001 Owner = "alice" CompletionDate = 1700003600
GlobalJobId = "ap40.uw.osg-htc.org#1001.3#1699990000"
ClusterId = 1001
ProcId = 3
Owner = "alice"
x509userproxysubject = "/DC=org/DC=cilogon/C=US/O=Univ/CN=Alice Smith A123"
x509UserProxyVOName = "osg"
x509UserProxyFirstFQAN = "/osg/Role=NULL/Capability=NULL"
ProjectName = "Astro-101"
RemoteWallClockTime = 3600.0
RemoteUserCpu = 3000.0
RemoteSysCpu = 100.0
RequestCpus = 1
MachineAttrCpus0 = 4
RequestMemory = 8000
CompletionDate = 1700003600
EnteredCurrentStatus = 1700003601
ExitBySignal = false
ExitCode = 2
MachineAttrGLIDEIN_Site0 = "MWT2"
MachineAttrGLIDEIN_ResourceName0 = "MWT2_UC"
MATCH_EXP_JOB_GLIDEIN_Schedd = "schedd_glideins4@gfactory-1.example.org"
MATCH_EXP_JOB_GLIDEIN_ClusterId = "555"
MATCH_EXP_JOB_GLIDEIN_ProcId = "7"
LastRemoteHost = "slot1_1@glidein_123_456@wn1.example.org"
'''


def test_payload_ad_maps_every_field():
    (record,) = parse(PAYLOAD)
    assert isinstance(record, ParsedRecord)
    assert record.kind == "payload"
    assert record.natural_key == "ap40.uw.osg-htc.org#1001.3#1699990000"
    assert record.line == 2
    assert record.end == datetime.fromtimestamp(1700003600, timezone.utc)
    assert record.start == datetime.fromtimestamp(1700000000, timezone.utc)
    assert record.wall_seconds == 3600.0
    assert record.cores == 4  # MachineAttrCpus0 wins over RequestCpus
    assert record.memory_mb == 8000
    assert (record.cpu_user_seconds, record.cpu_sys_seconds) == (3000.0, 100.0)
    assert (record.exit_code, record.exit_signal) == (2, None)
    assert record.person == "/DC=org/DC=cilogon/C=US/O=Univ/CN=Alice Smith A123"
    assert record.vo == "osg"
    assert record.fqan == "/osg/Role=NULL/Capability=NULL"
    assert record.project == "Astro-101"
    assert record.local_user == "alice"
    assert (record.site, record.resource) == ("MWT2", "MWT2_UC")
    assert record.pilot_ref == "schedd_glideins4@gfactory-1.example.org#555.7"


def test_pilot_link_falls_back_to_the_glidein_name_in_last_remote_host():
    text = "\n".join(line for line in PAYLOAD.splitlines() if not line.startswith("MATCH_EXP_JOB_GLIDEIN"))
    (record,) = parse(text)
    assert record.kind == "payload"
    assert record.pilot_ref == "glidein_123_456@wn1.example.org"


def test_without_glidein_attributes_an_ad_is_a_batch_job_at_the_given_site():
    text = "\n".join(
        line
        for line in PAYLOAD.splitlines()
        if not line.startswith(("MATCH_EXP", "MachineAttrGLIDEIN", "LastRemoteHost", "MachineAttrCpus0"))
    )
    (record,) = parse(text, ParseContext(site="CE-Site", now=NOW))
    assert record.kind == "batch"
    assert record.pilot_ref == ""
    assert record.site == "CE-Site"
    assert record.cores == 1  # RequestCpus


def test_token_identity_when_there_is_no_proxy():
    text = PAYLOAD.replace('x509userproxysubject = "/DC=org/DC=cilogon/C=US/O=Univ/CN=Alice Smith A123"', 'AuthTokenSubject = "abc-123"')
    (record,) = parse(text)
    assert record.person == "abc-123"


def test_factory_history_ad_is_a_pilot_keyed_like_the_payload_link():
    text = '''\
GlobalJobId = "schedd_glideins4@gfactory-1.example.org#555.7#1699990000"
JobUniverse = 9
GlideinFactory = "OSG"
GlideinEntryName = "OSG_US_MWT2_UC"
GlideinClient = "osg-frontend.main"
GLIDEIN_Site = "MWT2"
GLIDEIN_ResourceName = "MWT2_UC"
GLIDEIN_CPUS = 8
GLIDEIN_MaxMemMBs = 16000
RemoteWallClockTime = 7200
CompletionDate = 1700007200
x509UserProxyVOName = "osg"
'''
    (record,) = parse(text)
    assert record.kind == "pilot"
    assert record.natural_key == "schedd_glideins4@gfactory-1.example.org#555.7"
    assert (record.cores, record.memory_mb, record.site, record.resource) == (8, 16000, "MWT2", "MWT2_UC")
    assert record.pilot.frontend_client == "osg-frontend.main"
    assert record.pilot.entry == "OSG_US_MWT2_UC"


def test_blank_line_separated_ads_and_repeated_attributes_last_wins():
    text = (
        'GlobalJobId = "s#1.0#1"\nRemoteWallClockTime = 10\nCompletionDate = 1700000000\nRemoteWallClockTime = 60\n\n'
        'GlobalJobId = "s#2.0#1"\nRemoteWallClockTime = 20\nCompletionDate = 1700000000\n'
    )
    first, second = parse(text)
    assert first.wall_seconds == 60
    assert (first.line, second.line) == (1, 6)
    assert second.natural_key == "s#2.0#1"


def test_signal_exit_is_kept_as_signal_not_code():
    text = PAYLOAD.replace("ExitBySignal = false", "ExitBySignal = true\nExitSignal = 9")
    (record,) = parse(text)
    assert (record.exit_code, record.exit_signal) == (None, 9)


@pytest.mark.parametrize(
    ("text", "line", "reason"),
    [
        ('GlobalJobId = "s#1.0#1"\nRemoteWallClockTime = abc\nCompletionDate = 1700000000\n', 1, "RemoteWallClockTime is not a number"),
        ('GlobalJobId = "s#1.0#1"\nRemoteWallClockTime = 10\n', 1, "no CompletionDate"),
        ('RemoteWallClockTime = 10\nCompletionDate = 1700000000\nOwner = "x"\n', 1, "no GlobalJobId"),
        ('GlobalJobId = "s#1.0#1"\nthis is not an attribute\nRemoteWallClockTime = 1\n', 2, "not a ClassAd attribute line"),
        ('GlobalJobId = "s#1.0#1"\nRemoteWallClockTime = -5\nCompletionDate = 1700000000\n', 1, "negative wall time"),
        ('GlobalJobId = "s#1.0#1"\nRemoteWallClockTime = 10\nCompletionDate = 4102444800\n', 1, "in the future"),
        ('GlobalJobId = "s#1.0#1"\nRemoteWallClockTime = nan\nCompletionDate = 1700000000\n', 1, "not a number"),
    ],
)
def test_bad_ads_are_rejected_with_line_and_reason(text, line, reason):
    (item,) = parse(text)
    assert isinstance(item, Rejection)
    assert item.line == line
    assert reason in item.reason


def test_non_utf8_rejects_only_its_ad_and_names_the_line():
    good = 'GlobalJobId = "s#1.0#1"\nRemoteWallClockTime = 10\nCompletionDate = 1700000000\n'
    bad = b'GlobalJobId = "s#2.0#1"\nOwner = "caf\xe9"\nRemoteWallClockTime = 10\nCompletionDate = 1700000000\n'
    items = parse(good.encode() + b"\n" + bad)
    assert isinstance(items[0], ParsedRecord)
    assert isinstance(items[1], Rejection)
    assert items[1].line == 6
    assert "not UTF-8" in items[1].reason


def test_truncated_file_keeps_the_complete_ads_before_the_cut():
    items = parse(PAYLOAD + "*** banner\n" + PAYLOAD.replace("1001.3", "1001.4")[:300])
    assert isinstance(items[0], ParsedRecord)
    assert isinstance(items[1], Rejection)


def test_over_long_line_is_rejected_in_bounded_memory():
    text = PAYLOAD.encode() + b"\nGlobalJobId = \"s#9.0#1\"\nCmd = \"" + b"x" * (3 * 1024 * 1024) + b"\"\n"
    items = parse(text)
    assert isinstance(items[0], ParsedRecord)
    assert isinstance(items[1], Rejection) and "longer than 1 MiB" in items[1].reason


def test_detect_accepts_history_and_refuses_other_files(samples_dir):
    assert isinstance(detect_format(PAYLOAD.encode(), "history"), HTCondorHistoryParser)
    assert not PARSER.detect((samples_dir / "gratia/gracc-collector/test_data/JobUsageRecord01.xml").read_bytes(), "x.xml")
    assert not PARSER.detect(b"\x00\x01\x02 binary garbage \xff" * 100, "blob")
    assert not PARSER.detect(b"", "empty")
    assert not PARSER.detect(b"just some text\nwith lines\n", "notes.txt")


# --- The real samples: six per-job history files from a 2010 CHTC test pool (PROVENANCE.md) ---

EXPECTED = {
    # file: (wall, end epoch, exit code) - repeated attributes: the later values win
    "history.377260.0": (910.0, 1290672370, 0),
    "history.377266.0": (910.0, 1290672370, 0),
    "history.377270.0": (377.0, 1290674724, None),  # removed (JobStatus 3): ends when it left the queue
    "history.377277.0": (376.0, 1290674723, None),
    "history.377283.0": (910.0, 1290744059, 0),
    "history.377289.0": (910.0, 1290744059, 0),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_real_samples_field_by_field(samples_dir, name):
    path = samples_dir / "gratia/gratia-probe/condor-ap-history" / name
    (record,) = parse(path.read_bytes())
    wall, end, exit_code = EXPECTED[name]
    cluster = name.split(".")[1]
    assert record.kind == "batch"
    assert record.natural_key.startswith(f"stress3.chtc.wisc.edu#{cluster}.0#")
    assert record.wall_seconds == wall
    assert record.end == datetime.fromtimestamp(end, timezone.utc)
    assert (record.end - record.start).total_seconds() == wall
    assert record.exit_code == exit_code
    assert record.cores == 1
    if name == "history.377283.0":  # submitted without a proxy: only the local user is known
        assert (record.vo, record.person, record.local_user) == ("", "", "vdtuser03")
        return
    assert record.vo == "vdt"
    assert record.person == "/DC=org/DC=doegrids/OU=People/CN=James Frey 259919"
    assert record.fqan == "/vdt/Role=NULL/Capability=NULL"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_line_parser_agrees_with_htcondor_classad_parser(samples_dir, name):
    """The fast line parser reads the same values as HTCondor's own ClassAd library (classad2)."""
    from ingest.parsers.htcondor_history import iter_ads, unquote

    data = (samples_dir / "gratia/gratia-probe/condor-ap-history" / name).read_bytes()
    ((_, ours),) = list(iter_ads(io.BytesIO(data)))
    (theirs,) = list(classad2.parseAds(data.decode()))
    for attribute in ("GlobalJobId", "RemoteWallClockTime", "CompletionDate", "RemoteUserCpu", "x509userproxysubject",
                      "x509UserProxyVOName", "RequestCpus", "ExitCode", "Owner", "EnteredCurrentStatus"):
        if attribute not in theirs:
            assert attribute.lower() not in ours
            continue
        value = theirs[attribute]
        if isinstance(value, str):
            assert unquote(ours[attribute.lower()]) == value
        else:
            assert float(ours[attribute.lower()]) == float(value)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=2000) | st.text(alphabet=st.sampled_from(list('ab =\n"*#.019-TrueFALSE')), max_size=400).map(str.encode))
def test_fuzz_any_input_yields_records_or_rejections(data):
    for item in parse(data):
        assert isinstance(item, (ParsedRecord, Rejection))


def test_token_job_takes_its_vo_from_its_first_token_group():
    text = PAYLOAD.replace('x509UserProxyVOName = "osg"\n', 'AuthTokenGroups = "/icecube,/icecube/prod"\n')
    (record,) = parse(text)
    assert record.vo == "icecube"


def test_a_batch_jobs_resource_is_the_schedd_that_ran_it():
    (record,) = parse('GlobalJobId = "ce01.example.edu#7.0#1"\nRemoteWallClockTime = 10\nCompletionDate = 1700000000\n')
    assert (record.kind, record.resource) == ("batch", "ce01.example.edu")


def test_over_long_names_are_rejected_not_truncated():
    (item,) = parse(PAYLOAD.replace('ProjectName = "Astro-101"', f'ProjectName = "{"P" * 300}"'))
    assert isinstance(item, Rejection) and "project longer than 200 characters" in item.reason


# --- The attribute picker: the parser keeps only the attributes it maps, with the same values ---


class _Reads(dict):
    """An ad that records which attributes the mapping asks for."""

    asked: set

    def get(self, key, default=None):
        self.asked.add(key)
        return super().get(key, default)


@pytest.mark.parametrize("text", [PAYLOAD, PAYLOAD.replace("ExitBySignal = false", "ExitBySignal = true"),
                                  PAYLOAD.replace("MATCH_EXP_JOB_GLIDEIN", "X").replace("MachineAttr", "Y")])  # fmt: skip
def test_picked_attributes_cover_everything_the_mapping_reads(text):
    from ingest.parsers.htcondor_history import MAPPED_ATTRIBUTES, ad_to_record, as_factory_pilot, iter_ads

    ((line, ad),) = list(iter_ads(io.BytesIO(text.encode())))
    from ingest.parsers.gwms_glidein import run_from_ad  # a startd history's runs

    for mapper in (lambda ad: ad_to_record(ad, line, CONTEXT), lambda ad: as_factory_pilot(ad_to_record(ad, line, CONTEXT), ad, "s#1.0#1"), run_from_ad):
        reads = _Reads(ad)
        reads.asked = set()
        mapper(reads)
        assert reads.asked <= {name.lower() for name in MAPPED_ATTRIBUTES}
        assert len(reads.asked) > 10  # the recording works


@pytest.mark.parametrize("text", [PAYLOAD, PAYLOAD.replace("ExitBySignal = false", "ExitBySignal = true"),
                                  PAYLOAD.replace("MATCH_EXP_JOB_GLIDEIN", "X").replace("MachineAttr", "Y"),
                                  PAYLOAD.replace("x509", "X").replace("ExitCode", "ExitStatus")])  # fmt: skip
def test_the_maker_reads_everything_the_mapping_of_a_job_ad_reads(text):
    """An attribute ad_to_record reads and the compiled maker does not would make the two disagree."""
    from ingest.parsers import _adlines
    from ingest.parsers.htcondor_history import ad_to_record, iter_ads

    ((line, ad),) = list(iter_ads(io.BytesIO(text.encode())))
    reads = _Reads(ad)
    reads.asked = set()
    ad_to_record(reads, line, CONTEXT)
    assert reads.asked <= {name.lower() for name in _adlines.RECORD_ATTRIBUTES}
    assert len(reads.asked) > 10  # the recording works


def picked_and_full(data: bytes) -> tuple[list, list]:
    from ingest.parsers.htcondor_history import PICKER, iter_ads

    picked = list(iter_ads(io.BytesIO(data), PICKER))
    full = list(iter_ads(io.BytesIO(data)))
    return picked, full


def assert_same_mapped_values(picked: list, full: list) -> None:
    from ingest.parsers.htcondor_history import MAPPED_ATTRIBUTES

    wanted = {name.lower() for name in MAPPED_ATTRIBUTES}
    assert len(picked) == len(full)
    for mine, theirs in zip(picked, full, strict=True):
        if isinstance(theirs, Rejection):
            assert mine == theirs
            continue
        assert mine[0] == theirs[0]
        assert mine[1] == {name: value for name, value in theirs[1].items() if name in wanted}


def test_picker_is_case_insensitive_and_the_last_value_wins():
    data = b'globaljobid = "a#1.0#1"\nREMOTEWALLCLOCKTIME = 5\nOwner = "x"\nRemoteWallClockTime = 7\nOWNER = "y"\nCmd = "z"\n'
    picked, full = picked_and_full(data)
    assert picked == [(1, {"globaljobid": '"a#1.0#1"', "remotewallclocktime": "7", "owner": '"y"'})]
    assert_same_mapped_values(picked, full)


def test_picker_reads_the_real_samples_like_the_full_parse(samples_dir):
    files = sorted((samples_dir / "gratia/gratia-probe/condor-ap-history").glob("history.*"))
    assert files
    for path in files:
        assert_same_mapped_values(*picked_and_full(path.read_bytes()))


ATTRIBUTE_LINE = st.one_of(
    st.tuples(st.sampled_from(["GlobalJobId", "globaljobid", "Owner", "OWNER", "RemoteWallClockTime", "Cmd", "x509userproxysubject",
                               "MATCH_EXP_JOB_GLIDEIN_Schedd", "Owners", "Own", "A.b"]),
              st.sampled_from([" = ", "=", " =  ", "  = "]),
              st.text(alphabet=st.sampled_from(list('ab =\\"\r\t1#é*')), max_size=12)).map("".join),
    st.sampled_from(["*** banner", "", "   ", "*** EPOCH ProcId = 1", "not an attribute", "\r"]),
)  # fmt: skip


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(ATTRIBUTE_LINE, max_size=30), st.booleans())
def test_fuzz_picker_agrees_with_the_full_parse(lines, final_newline):
    data = ("\n".join(lines) + ("\n" if final_newline else "")).encode()
    assert_same_mapped_values(*picked_and_full(data))


def reference_unquote(value: str) -> str:
    """The definition: strip, then a quoted literal loses its quotes and backslash escapes."""
    import re

    value = value.strip()
    if len(value) >= 2 and value[0] == '"' and value[-1] == '"':
        return re.sub(r"\\(.)", r"\1", value[1:-1])
    return "" if value.upper() in ("UNDEFINED", "ERROR") else value


@given(st.text(alphabet=st.sampled_from(list(' "\\ab\tU\r')), max_size=8) | st.sampled_from(['"x"', ' "x" ', '"a\\"b"', "undefined", '"']))
def test_unquote_shortcut_agrees_with_the_definition(value):
    from ingest.parsers.htcondor_history import unquote

    assert unquote(value) == reference_unquote(value)


@given(st.text(alphabet=st.sampled_from(list(" 0123.e-+UNDEFINEDundefinednaif_")), max_size=10))
def test_number_is_none_for_undefined_and_refuses_what_is_not_a_number(raw):
    from ingest.parsers.htcondor_history import HistoryFormatError, number

    try:
        expected = None if raw.strip().upper() == "UNDEFINED" else float(raw)
    except ValueError:
        expected = "error"
    if expected is not None and expected != "error" and not math.isfinite(expected):
        expected = "error"
    try:
        got = number({"x": raw}, "x")
    except HistoryFormatError:
        got = "error"
    assert got == expected


@given(st.text(alphabet=st.sampled_from(list("ab* \t\r\n=")), max_size=60))
def test_separator_finds_exactly_the_banner_and_blank_lines(text):
    import re

    from ingest.parsers.htcondor_history import SEPARATOR

    definition = re.compile(rb"\n(?:\*\*\*[^\n]*|[ \t\r]*)(?=\n|\Z)")  # "\n" + a banner or a blank line
    data = text.encode()
    assert [m.span() for m in SEPARATOR.finditer(data)] == [m.span() for m in definition.finditer(data)]


# The compiled loops (ingest/parsers/_adlines.pyx) against their definitions, the regular expressions.


def test_the_compiled_loops_are_built():
    from ingest.parsers import htcondor_history

    assert htcondor_history._adlines is not None, "ingest/parsers/_adlines.pyx is not built: run `make venv`"
    assert htcondor_history.PICKER.compiled is not None
    assert not htcondor_history.__file__.endswith(".py"), "htcondor_history.py is not compiled: run `make venv`"


def compiled_and_reference(data: bytes) -> tuple[list, list]:
    from unittest import mock

    from ingest.parsers import htcondor_history as history

    compiled = list(history.iter_ads(io.BytesIO(data), history.PICKER))
    reference = history.AttributePicker(history.MAPPED_ATTRIBUTES, compiled=False)
    with mock.patch.object(history, "_adlines", None):  # the separators by the regular expression too
        return compiled, list(history.iter_ads(io.BytesIO(data), reference))


def test_compiled_loops_read_the_real_samples_like_the_reference(samples_dir):
    files = sorted((samples_dir / "gratia/gratia-probe/condor-ap-history").glob("history.*"))
    files += sorted((samples_dir / "real").rglob("*history*"))
    assert len(files) > 3
    for path in files:
        if path.is_file():
            compiled, reference = compiled_and_reference(path.read_bytes())
            assert compiled == reference, path


NAME_CHARS = list("aAbBzZ_.09é ſK\t")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(ATTRIBUTE_LINE | st.tuples(st.text(alphabet=st.sampled_from(NAME_CHARS), max_size=6), st.sampled_from(["Owner", "OWNER", "", "RemoteSyſCpu", "GLIDEIN_CPUS"]),
                                           st.sampled_from([" = ", "=", " = \r"]), st.text(alphabet=st.sampled_from(list("a=é\r\\")), max_size=4)).map("".join),
                max_size=30),
       st.booleans())  # fmt: skip
def test_fuzz_compiled_loops_agree_with_the_reference(lines, final_newline):
    data = ("\n".join(lines) + ("\n" if final_newline else "")).encode()
    compiled, reference = compiled_and_reference(data)
    assert compiled == reference


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300) | st.text(alphabet=st.sampled_from(list("ab* \t\r\n=")), max_size=60).map(str.encode))
def test_fuzz_compiled_separators_are_the_regular_expressions(data):
    from ingest.parsers import _adlines
    from ingest.parsers.htcondor_history import SEPARATOR

    assert list(_adlines.separator_spans(data, len(data))) == [(*m.span(), data.count(b"\n", 0, m.start())) for m in SEPARATOR.finditer(data)]
    size = len(data) // 2  # a buffer read only in part: the separators of its first `size` bytes, the end there too
    assert list(_adlines.separator_spans(bytearray(data), size)) == [
        (*m.span(), data.count(b"\n", 0, m.start())) for m in SEPARATOR.finditer(data, 0, size)
    ]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(ATTRIBUTE_LINE, max_size=20), st.booleans(), st.integers(min_value=1, max_value=40))
def test_fuzz_ads_and_their_lines_do_not_depend_on_where_the_blocks_end(lines, final_newline, block):
    from unittest import mock

    from ingest.parsers import htcondor_history as history

    data = ("\n".join(lines) + ("\n" if final_newline else "")).encode()
    whole = compiled_and_reference(data)
    with mock.patch.object(history, "BLOCK_BYTES", block):
        assert compiled_and_reference(data) == whole
    assert whole[0] == whole[1]


def test_compiled_picker_refuses_what_is_not_a_name():
    from ingest.parsers import _adlines

    with pytest.raises(ValueError):
        _adlines.Picker(["Owner", "not a name"])
    picker = _adlines.Picker(["Owner"])
    assert picker.pick(b"OWNER = 1\nowner = \"b\"\nOther = 2\n\n") == {"owner": '"b"'}
    assert picker.pick(b"Owner = 1\nOwner= 2") is None  # not exactly `Name = value`: read line by line
    assert picker.pick(b"\n\n") is None
    assert picker.pick("Owner = 1\nOwneſ = 2".encode()) is None  # a name is ASCII ("ſ" is no "s", even caseless)


# The compiled reading of a whole ad to its record (_adlines.RecordMaker) against the reference reading
# (PICKER.pick, then ad_to_record): the same record, field by field and type by type, or None.


def exactly(record: ParsedRecord) -> list:
    """Every field with its type and repr: ParsedRecord's == takes 1 for 1.0 and -0.0 for 0.0, the digest does not."""
    import dataclasses

    return [(f.name, type(getattr(record, f.name)), repr(getattr(record, f.name))) for f in dataclasses.fields(record)]


def maker_and_reference(chunk: bytes, site: str = "HINT"):
    """(the maker's record or None, the reference's checked record or the exception it raised, or None: no ad)."""
    from ingest.parsers import htcondor_history as history
    from ingest.parsers.base import check_record

    context = ParseContext(site=site, now=NOW)
    made = history.record_maker(context).make(chunk, 3)
    ad = history.PICKER.pick(chunk)
    if ad is None:
        return made, None
    try:
        record = history.ad_to_record(ad, 3, context)
        check_record(record, NOW)
        return made, record
    except Exception as exc:  # noqa: BLE001 - compared below
        return made, exc


def ads_of(data: bytes) -> list[bytes]:
    import re

    return [chunk for chunk in re.split(rb"(?m)^\*\*\*.*\n?|^[ \t\r]*\n", data) if chunk.strip()]


def test_the_maker_reads_every_synthetic_job_ad_like_the_reference(tmp_path):
    from ingest.synthetic import generate

    manifest = generate(tmp_path, seed=3, scale=0.02, end=NOW, padding=True)
    made = {"pilot": 0, "payload": 0, "batch": 0}
    for data_file in manifest.files:
        if data_file.fmt != "htcondor-history":
            continue
        for chunk in ads_of(data_file.path.read_bytes()):
            record, reference = maker_and_reference(chunk)
            if record is not None:
                made[record.kind] += 1
                assert exactly(record) == exactly(reference)
            elif data_file.kind != "pilot":
                raise AssertionError(f"an ordinary job ad was left to the reference: {chunk[:200]!r}")
    assert made["pilot"] == 0  # a factory's glidein ads are left to the reference
    assert made["payload"] > 100 and made["batch"] > 10, made


def test_parsing_with_the_maker_gives_what_the_reference_gives_on_the_samples_and_corpus(samples_dir):
    from pathlib import Path
    from unittest import mock

    from ingest.parsers import htcondor_history as history

    files = sorted(samples_dir.rglob("*history*")) + sorted((Path(__file__).parents[1] / "corpus" / "htcondor").glob("*"))
    files = [path for path in files if path.is_file()]
    assert len(files) > 8
    made = 0
    for path in files:
        items = parse(path.read_bytes())
        with mock.patch.object(history, "record_maker", lambda context: None):
            reference = parse(path.read_bytes())
        assert [exactly(i) if isinstance(i, ParsedRecord) else i for i in items] == [
            exactly(i) if isinstance(i, ParsedRecord) else i for i in reference
        ], path
        made += sum(1 for chunk in ads_of(path.read_bytes()) if history.record_maker(CONTEXT).make(chunk, 1) is not None)
    assert made >= 6  # the real Gratia probe samples, at least, take the compiled way


MAKER_NAMES = [
    "GlobalJobId", "RemoteWallClockTime", "CompletionDate", "EnteredCurrentStatus", "MachineAttrCpus0", "RequestCpus",
    "CpusProvisioned", "MachineAttrMemory0", "RequestMemory", "RequestGPUs", "MachineAttrGPUs0", "ExitBySignal",
    "ExitSignal", "ExitCode", "ExitStatus", "RemoteUserCpu", "RemoteSysCpu", "x509userproxysubject", "AuthTokenSubject",
    "x509UserProxyVOName", "AuthTokenGroups", "ProjectName", "Owner", "MachineAttrGLIDEIN_Site0", "GLIDEIN_Site",
    "MATCH_EXP_JOBGLIDEIN_ResourceName", "MATCH_EXP_JOB_GLIDEIN_Schedd", "MATCH_EXP_JOB_GLIDEIN_ClusterId",
    "MATCH_EXP_JOB_GLIDEIN_ProcId", "LastRemoteHost", "RemoteHost", "GlideinEntryName", "JobUniverse",
    "BadputCausedByDraining", "MyType",
]  # fmt: skip
TRICKY_VALUES = [
    "3206.0", "0", "-0", "-0.0", "7", "-7", "7.9", "0.5", "1e3", "1E+3", "1e999", "-1e999", "nan", "inf", "Infinity",
    " 5", "5 ", "5\r", "1_000", "+.5", "5.", ".", "-", "1e", "2147483648", "1792957485", "1792957485.5", "9e15",
    "-1792957485", "undefined", "UNDEFINED", "Undefined ", "error", "ERROR", "true", "TRUE", "false", " true",
    "true\r", '"x"', '""', '" x "', '"a\\"b"', '"', '"/cms,/cms/prod"', '"/"', '"glidein_1_2@host.org"',
    '"slot1@glidein_12_34@wn.org"', '"5"', '"UNDEFINED"', "ifThenElse(a, 1, 2)", "(1 + 2)", "", "abc", "\x01", "info", "nano", "Inf", "NaN ",
    "9", "1700003600", "3600.0", "1",
    # near check_record's bounds: cores, GPUs and memory; exit codes; a year of wall time; now + 1 day; 1995
    "4096", "4096.5", "4097", "67108864", "67108865", "2147483647", "2147483648.5", "-2147483648", "-2147483649",
    "31622400", "31622401", "1795305599", "1795305600", "1795305601", "788918400", "788918401", "788918402",
    '"' + "x" * 201 + '"', '"' + "x" * 256 + '"', '"' + "x" * 501 + '"',
]  # fmt: skip
GOOD_START = (
    'GlobalJobId = "ce.example.org#12.0#1700000000"\nRemoteWallClockTime = 3600.0\nCompletionDate = 1700003600\n'
)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.booleans(),
    st.lists(st.tuples(st.sampled_from(MAKER_NAMES), st.sampled_from(["lower", "upper", "same"]),
                       st.sampled_from(TRICKY_VALUES) | st.text(alphabet=st.sampled_from(list('0123456789.-e"a/,#@ _')), max_size=8)),
             max_size=14),
    st.sampled_from(["HINT", ""]),
)  # fmt: skip
def test_fuzz_the_maker_reads_like_the_reference_or_leaves_the_ad_to_it(good_start, lines, site):
    text = (GOOD_START if good_start else "") + "\n".join(
        f"{getattr(name, case)() if case != 'same' else name} = {value}" for name, case, value in lines
    )
    made, reference = maker_and_reference(text.encode(), site)
    if made is not None:
        assert isinstance(reference, ParsedRecord), reference
        assert exactly(made) == exactly(reference)


HALF_MICROSECONDS = st.integers(min_value=0, max_value=8_000_000_000_000_000).map(lambda n: n / 2_000_000)


@settings(max_examples=3000, deadline=None)
@given(st.floats(min_value=0, max_value=253402300798.0) | HALF_MICROSECONDS)
def test_the_makers_utc_times_are_pythons_to_the_microsecond(epoch):
    """The maker's own epoch -> UTC datetime against `datetime.fromtimestamp(epoch, tz=UTC)` (base.utc_from_epoch),
    which rounds to the microsecond half to even: equal, with the same repr, zone object and fold."""
    from ingest.parsers import _adlines
    from ingest.parsers.base import utc_from_epoch

    made, reference = _adlines.utc_from_epoch(epoch), utc_from_epoch(epoch)
    assert (made, repr(made), made.tzinfo is reference.tzinfo, made.fold) == (reference, repr(reference), True, 0)


def test_the_makers_utc_times_on_calendar_edges():
    from ingest.parsers import _adlines

    utc = timezone.utc
    assert _adlines.utc_from_epoch(951782400.0) == datetime(2000, 2, 29, tzinfo=utc)  # a leap day of a 400-year
    assert _adlines.utc_from_epoch(4107542399.0) == datetime(2100, 2, 28, 23, 59, 59, tzinfo=utc)  # 2100: no leap day
    assert _adlines.utc_from_epoch(1704067199.9999996) == datetime(2024, 1, 1, tzinfo=utc)  # rounds up over the year
    assert _adlines.utc_from_epoch(0.0) == datetime(1970, 1, 1, tzinfo=utc)
    for outside in (-1.0, math.inf, math.nan, 253402300800.0):
        with pytest.raises(ValueError):
            _adlines.utc_from_epoch(outside)


def test_the_maker_leaves_unusual_ads_to_the_reference():
    from ingest.parsers import htcondor_history as history

    maker = history.record_maker(CONTEXT)
    good = GOOD_START.encode()
    assert maker.make(good, 1) is not None
    for unusual in (b"RemoteUserCpu = 1_000", b"Owner = \"a\\\"b\"", b"Owner =  \"x\"", b"ExitBySignal = true ",
                    b"RemoteSysCpu = nan", b"GlideinEntryName = \"e\"", b"BadputCausedByDraining = 0",
                    b"RemoteUserCpu = abc", b"CompletionDate = 1e999", b"Owner= \"x\""):  # fmt: skip
        assert maker.make(good + unusual, 1) is None, unusual
    assert maker.make(b"RemoteWallClockTime = 1\nCompletionDate = 2", 1) is None  # no GlobalJobId
    for near_a_bound in (b"RequestCpus = 4097", b"CompletionDate = 1795305600", b"RemoteWallClockTime = -1"):
        assert maker.make(good + near_a_bound, 1) is None, near_a_bound  # the reference checks and rejects
    record = history.record_maker(ParseContext(site="S", now=NOW)).make(
        good + b"RemoteUserCpu = -0.0\nOwner = UNDEFINED\nRequestCpus = ifThenElse(a, 1, 2)", 1
    )
    assert (record.cpu_user_seconds, record.local_user, record.cores, record.site, record.kind) == (0.0, "", 1, "S", "batch")
    assert repr(record.cpu_user_seconds) == "0.0" and record.resource == "ce.example.org"
