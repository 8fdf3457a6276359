"""The factory `completed_jobs_*.log` parser on lines written in the factory's own format (seed 002, figure 9;
glideinwms `glideFactoryMonitoring.logCompleted`), on hostile input, and its detection against the samples."""

import io
from datetime import datetime, timezone

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingest.parsers import ParseContext, ParsedRecord, Rejection
from ingest.parsers.gwms_completed import GWMSCompletedParser

PARSER = GWMSCompletedParser()
NOW = datetime(2026, 11, 21, tzinfo=timezone.utc)
CONTEXT = ParseContext(now=NOW)
SCHEDD = "schedd_glideins2@gfactory-2.opensciencegrid.org"
LOG_PATH = "/var/log/gwms-factory/server/entry_OSG_US_FNAL_okd/completed_jobs_20220209.log"

# The seed's example line, padded as the factory's format string pads it.
SEED_LINE = (
    '<job    terminated="2022-02-09T05:55:38-08:00" client="fermilab_okd_gpfe01_frontend"  username="fefermilab"'
    '  id="6767402.000"   duration="1359"  condor_started="True"   condor_duration="1266"><user     jobsnr="0"'
    '      duration="0"      goodput="0"      terminated="0"/><wastemill   validation="66" idle="1000"'
    '    nosuccess="0" badput="1000"/></job>'
)


def job_line(**values) -> str:
    """A completed_jobs line; keyword values replace the defaults (a busy 4-hour glidein)."""
    attrs = {
        "terminated": "2024-03-05T14:00:00+01:00", "client": "osg-frontend.main", "username": "feosg",
        "id": "4242.003", "duration": "14400", "condor_started": "True", "condor_duration": "14000",
        "jobsnr": "5", "jobs_duration": "12000", "goodput": "9000", "jobs_terminated": "11000",
        "validation": "25", "idle": "142", "nosuccess": "250", "badput": "236",
    } | values  # fmt: skip
    return (
        f'<job terminated="{attrs["terminated"]}" client="{attrs["client"]}" username="{attrs["username"]}" '
        f'id="{attrs["id"]}" duration="{attrs["duration"]}" condor_started="{attrs["condor_started"]}" '
        f'condor_duration="{attrs["condor_duration"]}">'
        f'<user jobsnr="{attrs["jobsnr"]}" duration="{attrs["jobs_duration"]}" goodput="{attrs["goodput"]}" '
        f'terminated="{attrs["jobs_terminated"]}"/>'
        f'<wastemill validation="{attrs["validation"]}" idle="{attrs["idle"]}" nosuccess="{attrs["nosuccess"]}" '
        f'badput="{attrs["badput"]}"/></job>'
    )


def parse(data: str | bytes, filename: str = LOG_PATH, schedd: str = SCHEDD, context=CONTEXT) -> list:
    raw = data.encode() if isinstance(data, str) else data
    return list(PARSER.parse(io.BytesIO(raw), filename, context, schedd=schedd))


def test_seed_line_field_by_field():
    (record,) = parse(SEED_LINE + "\n")
    assert isinstance(record, ParsedRecord)
    assert record.kind == "pilot"
    assert record.natural_key == f"{SCHEDD}#6767402.0"
    assert record.line == 1
    # end = the factory's log time (05:55:38 at UTC-8), start = end - duration
    assert record.end == datetime(2022, 2, 9, 13, 55, 38, tzinfo=timezone.utc)
    assert record.start == datetime(2022, 2, 9, 13, 32, 59, tzinfo=timezone.utc)
    assert record.wall_seconds == 1359.0
    assert record.cores == 1
    assert record.memory_mb is None
    assert (record.site, record.resource) == ("", "OSG_US_FNAL_okd")
    pilot = record.pilot
    assert pilot.frontend_client == "fermilab_okd_gpfe01_frontend"
    assert pilot.entry == "OSG_US_FNAL_okd"
    assert pilot.cores == 1
    assert pilot.condor_started is True
    assert pilot.condor_seconds == 1266.0
    assert pilot.validation_seconds == pytest.approx(66 * 1359 / 1000)
    assert pilot.claims is None
    assert pilot.glidein_name == ""
    assert record.extra == {
        "logged_at": datetime(2022, 2, 9, 13, 55, 38, tzinfo=timezone.utc),
        "username": "fefermilab",
        "jobs_count": 0,
        "jobs_seconds": 0,
        "goodput_seconds": 0,
        "terminated_seconds": 0,
        "wastemill": {"validation": 66, "idle": 1000, "nosuccess": 0, "badput": 1000},
        "validation_seconds": pytest.approx(89.694),
        "idle_seconds": 1266.0,
        "nosuccess_seconds": 0.0,
        "badput_seconds": 1359.0,
    }


def test_each_wastemill_has_its_own_denominator():
    (record,) = parse(job_line())
    extra = record.extra
    assert extra["validation_seconds"] == pytest.approx(0.025 * 14400)  # of the glidein's lifetime
    assert extra["badput_seconds"] == pytest.approx(0.236 * 14400)  # of the glidein's lifetime
    assert extra["idle_seconds"] == pytest.approx(0.142 * 14000)  # of the condor time
    assert extra["nosuccess_seconds"] == pytest.approx(0.250 * 12000)  # of the jobs' time
    assert (extra["jobs_count"], extra["jobs_seconds"], extra["goodput_seconds"], extra["terminated_seconds"]) == (
        5, 12000, 9000, 11000,
    )  # fmt: skip
    assert record.pilot.validation_seconds == extra["validation_seconds"]
    assert record.natural_key == f"{SCHEDD}#4242.3"
    assert record.end == datetime(2024, 3, 5, 13, 0, tzinfo=timezone.utc)


def test_glidein_whose_condor_never_started_is_all_validation():
    line = job_line(condor_started="False", condor_duration="0", jobsnr="0", jobs_duration="0", goodput="0",
                    jobs_terminated="0", validation="1000", idle="0", nosuccess="0", badput="1000")  # fmt: skip
    (record,) = parse(line)
    assert record.pilot.condor_started is False
    assert record.pilot.condor_seconds is None
    assert record.pilot.validation_seconds == 14400.0
    assert record.extra["badput_seconds"] == 14400.0


def test_per_mille_out_of_range_is_clamped():
    (record,) = parse(job_line(idle="-85", badput="1200"))
    assert record.extra["idle_seconds"] == 0.0
    assert record.extra["badput_seconds"] == 14400.0
    assert record.extra["wastemill"]["idle"] == -85  # kept as written


def test_id_that_names_its_schedd_needs_no_schedd_argument():
    (record,) = parse(job_line(id="schedd_glideins5@f.example.org#77.010"), schedd="")
    assert record.natural_key == "schedd_glideins5@f.example.org#77.10"


def test_without_schedd_every_line_is_rejected_with_the_reason():
    (item,) = parse(SEED_LINE, schedd="")
    assert isinstance(item, Rejection) and item.line == 1
    assert "factory schedd unknown" in item.reason and "6767402.000" in item.reason


def test_cores_attribute_is_used_when_present_and_entry_unknown_outside_an_entry_directory():
    line = job_line().replace(' condor_duration="14000"', ' condor_duration="14000" cores="8"')
    (record,) = parse(line, filename="completed_jobs_20240305.log", context=ParseContext(site="FNAL", now=NOW))
    assert record.cores == record.pilot.cores == 8
    assert (record.pilot.entry, record.resource, record.site) == ("", "", "FNAL")


def test_bad_line_is_rejected_alone_and_records_keep_file_order():
    text = "\n".join([job_line(id="1.0"), "", job_line(id="2.0", duration="-1"), job_line(id="3.0")]) + "\n"
    items = parse(text)
    assert [type(item) for item in items] == [ParsedRecord, Rejection, ParsedRecord]
    assert [items[0].line, items[1].line, items[2].line] == [1, 3, 4]
    assert "negative glidein duration (-1 s)" in items[1].reason


ENTITY_BOMB = (
    '<!DOCTYPE job [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">'
    '<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]>' + job_line(client="&c;")
)
EXTERNAL_ENTITY = '<!DOCTYPE job [<!ENTITY x SYSTEM "file:///etc/passwd">]>' + job_line(client="&x;")


@pytest.mark.parametrize(
    "data, line, reason",
    [
        (b"", None, "empty file"),
        (b"\n\n  \n", None, "empty file"),
        (job_line()[:150].encode(), 1, "not a well-formed <job> element"),
        (b"\x00\x01\x02\xff\xfe binary \x89PNG\r\n\x1a\n", 1, "not UTF-8"),
        (b"\x7fELF\x02\x01\x01\x00 garbage", 1, "not a well-formed <job> element"),
        (job_line(client="caf\xe9").encode("latin-1"), 1, "not UTF-8 (byte 0xe9"),
        (job_line(duration="-1").encode(), 1, "negative glidein duration"),
        (job_line(duration="99999999999").encode(), 1, "absurd glidein duration"),
        (job_line(duration="1e5").encode(), 1, "duration in <job> is not an integer"),
        (job_line(terminated="2024-03-05T14:00:00").encode(), 1, "no UTC offset"),
        (job_line(terminated="yesterday").encode(), 1, "not an ISO 8601 time"),
        (job_line(terminated="0001-01-01T00:00:00+05:00").encode(), 1, "not an ISO 8601 time"),
        (job_line(terminated="2099-01-01T00:00:00+00:00").encode(), 1, "in the future"),
        (job_line(condor_started="maybe").encode(), 1, "neither True nor False"),
        (job_line(id="glidein-7").encode(), 1, "id is not a glidein cluster.proc"),
        (
            job_line().replace('<wastemill validation="25" idle="142" nosuccess="250" badput="236"/>', "").encode(),
            1,
            "no <wastemill> element",
        ),
        (b'<jobs terminated="x"/>', 1, "root element <jobs>"),
        (ENTITY_BOMB.encode(), 1, "refused XML construct (DTDForbidden)"),
        (EXTERNAL_ENTITY.encode(), 1, "refused XML construct (DTDForbidden)"),
    ],
)
def test_hostile_input_gives_rejections_naming_the_line(data, line, reason):
    items = parse(data)
    assert all(isinstance(item, Rejection) for item in items)
    item = items[0]
    assert item.line == line
    assert reason in item.reason


def test_over_long_line_is_rejected_and_the_next_line_still_read():
    data = b"<job " + b"x" * (2 * 1024 * 1024) + b"\n" + job_line().encode() + b"\n"
    items = parse(data)
    assert isinstance(items[0], Rejection) and "longer than 1 MiB" in items[0].reason
    assert isinstance(items[1], ParsedRecord) and items[1].line == 2


def test_detect_claims_completed_logs_and_nothing_else(samples_dir):
    assert PARSER.detect(SEED_LINE.encode() + b"\n" + job_line().encode(), "completed_jobs_20220209.log")
    assert PARSER.detect(b"\n" + job_line().encode(), "anything.log")
    others = [
        "gratia/gratia-probe/condor-ap-history/history.377260.0",
        "gratia/gracc-collector/test_data/JobUsageRecord01.xml",
        "gratia/gracc-collector/test_bundle.xml",
        "gratia/gratia-probe/readme-xml/condor-Batch.xml",
        "glideinwms/job.out.glideFactoryLogParser_glidein_stdout.out",
        "glideinwms/cs.fixture.condor_status_glidein_startds.xml",
        "htcondor/test.old.ad",
    ]
    for name in others:
        assert not PARSER.detect((samples_dir / name).read_bytes()[:65536], name), name
    assert not PARSER.detect(b"", "completed_jobs_20220209.log")
    assert not PARSER.detect(b"\x00\x01\x02 binary garbage \xff" * 100, "completed_jobs_20220209.log")


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.binary(max_size=2000)
    | st.text(
        alphabet=st.sampled_from(list('<>/="job terminatedidurationwastemilluser 0123456789-:T.&;!#\n')), max_size=400
    ).map(str.encode)  # fmt: skip
    | st.sampled_from([SEED_LINE, job_line()])
    .map(str.encode)
    .flatmap(lambda line: st.integers(0, len(line)).map(lambda cut: line[:cut]))
)
def test_fuzz_any_input_yields_records_or_rejections(data):
    for item in parse(data):
        assert isinstance(item, (ParsedRecord, Rejection))
