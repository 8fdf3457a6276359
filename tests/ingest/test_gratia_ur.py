"""The Gratia usage-record parser on the real GRACC / Gratia samples (GRACC's JSON renderings as the oracle),
on hand-written records and bundles, and on hostile input."""
import io
import json
import time
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingest.parsers import ParseContext, ParsedRecord, Rejection
from ingest.parsers.apel import APELParser
from ingest.parsers.gratia_ur import GratiaURParser, RecordFormatError, iso_datetime, iso_duration

PARSER = GratiaURParser()
NOW = datetime(2026, 11, 21, tzinfo=UTC)
CONTEXT = ParseContext(now=NOW)
GRACC = "gratia/gracc-collector"
ORACLE_SAMPLES = [f"JobUsageRecord0{n}" for n in range(1, 7)] + ["UsageRecord01"]


def parse(data: str | bytes, context=CONTEXT) -> list:
    raw = data.encode() if isinstance(data, str) else data
    return list(PARSER.parse(io.BytesIO(raw), "records.xml", context))


def records(items) -> list[ParsedRecord]:
    return [item for item in items if isinstance(item, ParsedRecord)]


def rejections(items) -> list[Rejection]:
    return [item for item in items if isinstance(item, Rejection)]


def jur(job_id="ce.example.org#1.0#1700000000", wall="PT1H", start="2024-03-01T10:00:00Z",
        end="2024-03-01T11:00:00Z", resource_type="Batch", extra="") -> str:  # fmt: skip
    """A condor-probe-like JobUsageRecord, eleven lines long."""
    return f"""<JobUsageRecord xmlns="http://www.gridforum.org/2003/ur-wg" xmlns:urwg="http://www.gridforum.org/2003/ur-wg">
<JobIdentity><GlobalJobId>{job_id}</GlobalJobId><LocalJobId>1</LocalJobId></JobIdentity>
<UserIdentity><LocalUserId>alice</LocalUserId><DN>/DC=org/CN=Alice</DN><VOName>/osg/Role=NULL/Capability=NULL</VOName><ReportableVOName>osg</ReportableVOName></UserIdentity>
<WallDuration>{wall}</WallDuration><CpuDuration urwg:usageType="user">PT50M</CpuDuration><CpuDuration urwg:usageType="system">PT1M</CpuDuration>
<StartTime>{start}</StartTime>
<EndTime>{end}</EndTime>
<Processors urwg:metric="max">8</Processors>
<Host primary="true" urwg:description="EXAMPLE_CE_1">wn042.example.org</Host>
<ProbeName>condor:ce.example.org</ProbeName><SiteName>EXAMPLE</SiteName>
{extra}<Resource urwg:description="ResourceType">{resource_type}</Resource>
</JobUsageRecord>"""


def envelope(*items: str) -> str:
    """A probe upload: records start on line 3, every eleven lines."""
    return '<?xml version="1.0" encoding="UTF-8"?>\n<RecordEnvelope>\n' + "\n".join(items) + "\n</RecordEnvelope>\n"


# --- GRACC's JSON rendering of each sample as the oracle ---


def from_gracc(doc: dict) -> dict:
    """What the parser must read, computed from GRACC's rendering by the module's documented mapping."""
    payload = doc["ResourceType"] == "Payload"
    vo_name = doc.get("VOName", "")
    fqan = vo_name if vo_name.startswith("/") else ""
    wall = doc["WallDuration"]
    end = datetime.fromisoformat(doc["EndTime"])
    start = datetime.fromisoformat(doc["StartTime"]) if "StartTime" in doc else end - timedelta(seconds=wall)
    user = doc.get("CpuDuration_user", doc["CpuDuration"])
    return {
        "kind": "payload" if payload else "batch",
        # the condor probe's "condor." prefix is dropped so the job keys like its HTCondor history ad
        "natural_key": doc.get("GlobalJobId", "").removeprefix("condor.") or f"{doc.get('ProbeName', '')}|{doc['LocalJobId']}|{doc['EndTime']}",
        "wall_seconds": wall,
        "cpu": (user, doc.get("CpuDuration_system", 0)),
        "start": start,
        "end": end,
        "vo": doc.get("ReportableVOName") or (fqan.split("/")[1] if fqan else vo_name),
        "fqan": fqan,
        "person": doc.get("DN") or doc.get("GlobalUsername", ""),
        "local_user": doc.get("LocalUserId", ""),
        "project": doc.get("ProjectName", ""),
        "cores": int(doc.get("Processors", 1)),
        "exit_code": int(doc["Status"]) if doc.get("Status", "").isdigit() else None,
        "site": "" if payload else doc.get("SiteName", ""),
        "resource": doc.get("Host_description", "") if payload else doc.get("ProbeName", "").partition(":")[2],
    }


@pytest.mark.parametrize("name", ORACLE_SAMPLES)
def test_real_samples_agree_with_gracc_rendering(samples_dir, name):
    doc = json.loads((samples_dir / GRACC / "test_data" / f"{name}.json").read_text())
    (record,) = parse((samples_dir / GRACC / "test_data" / f"{name}.xml").read_bytes())
    expected = from_gracc(doc)
    assert record.kind == expected["kind"]
    assert record.natural_key == expected["natural_key"]
    assert record.wall_seconds == pytest.approx(expected["wall_seconds"])
    assert (record.cpu_user_seconds, record.cpu_sys_seconds) == pytest.approx(expected["cpu"])
    assert record.cpu_user_seconds + record.cpu_sys_seconds == pytest.approx(doc["CpuDuration"])
    assert (record.start, record.end) == (expected["start"], expected["end"])
    assert (record.vo, record.fqan, record.person) == (expected["vo"], expected["fqan"], expected["person"])
    assert (record.local_user, record.project) == (expected["local_user"], expected["project"])
    assert (record.cores, record.exit_code) == (expected["cores"], expected["exit_code"])
    assert (record.site, record.resource) == (expected["site"], expected["resource"])
    assert record.line == (2 if name == "JobUsageRecord03" else 1)  # 03 opens with an XML declaration


def test_payload_sample_field_by_field(samples_dir):
    """JobUsageRecord05: a CHTC job that flocked to a CloudLab glidein (BatchPilot, GRACC's Payload)."""
    (record,) = parse((samples_dir / GRACC / "test_data/JobUsageRecord05.xml").read_bytes())
    assert record.kind == "payload"
    assert record.natural_key == "submit-3.chtc.wisc.edu#60242911.0#1464388571"
    assert record.resource == "wisc.edu"  # Host description: where the payload ran
    assert record.site == ""  # left to the sites mapping of that resource
    assert record.extra["submit_site"] == "CHTC"
    assert record.extra["host"] == "c220g2-030631.wisc.cloudlab.us"
    assert record.extra["resource_type"] == "BatchPilot"
    assert record.pilot_ref == ""  # the probe was not configured to send the glidein's identity
    assert (record.vo, record.fqan, record.person) == ("GLOW", "", "kavandermeul@chtc.wisc.edu")
    assert (record.wall_seconds, record.exit_code, record.exit_signal) == (5.0, 0, None)


def test_batch_sample_at_a_ce_field_by_field(samples_dir):
    (record,) = parse((samples_dir / GRACC / "test_data/JobUsageRecord06.xml").read_bytes())
    assert record.kind == "batch"
    assert (record.site, record.resource) == ("UCSDT2-D", "osg-gw-7.t2.ucsd.edu")
    assert record.vo == "cms"
    assert record.fqan == "/cms/Role=production/Capability=NULL"
    assert record.person == "/DC=ch/DC=cern/OU=Organic Units/OU=Users/CN=sciaba/CN=430796/CN=Andrea Sciaba"
    assert record.local_user == "cmsuser"
    assert (record.wall_seconds, record.cpu_user_seconds, record.cpu_sys_seconds) == (617.0, 0.0, 18.0)
    assert record.start == datetime(2016, 5, 27, 22, 33, 51, tzinfo=UTC)
    assert record.end == datetime(2016, 5, 27, 22, 44, 8, tzinfo=UTC)
    assert record.memory_mb is None
    assert record.extra["record_id"] == "osg-gw-7.t2.ucsd.edu:35741.2"


def test_old_urf_records_without_global_id_start_time_or_site(samples_dir):
    """The 2003 OGF examples: urf namespace, a prefixed JobIdentity, no GlobalJobId, StartTime or ProbeName."""
    (pbs,) = parse((samples_dir / GRACC / "test_data/JobUsageRecord02.xml").read_bytes())
    assert pbs.natural_key == "|PBS.1234.0|2003-08-13T18:37:38Z"  # ProbeName|LocalJobId|EndTime
    assert (pbs.memory_mb, pbs.cores, pbs.exit_code) == (1234, 4, None)  # Status "completed" is no exit code
    assert (pbs.cpu_user_seconds, pbs.site) == (0.0, "")
    (nasa,) = parse((samples_dir / GRACC / "test_data/JobUsageRecord03.xml").read_bytes())
    assert nasa.memory_mb == round(1060991 / 1024)  # storageUnit KB
    assert nasa.start == datetime(2003, 6, 16, 7, 38, 44, tzinfo=UTC)  # EndTime - PT45M48S
    assert nasa.cpu_user_seconds == 15.0  # an untyped CpuDuration is the total, counted as user time
    (nasa_here,) = parse((samples_dir / GRACC / "test_data/JobUsageRecord03.xml").read_bytes(), ParseContext(site="NAS", now=NOW))
    assert nasa_here.site == "NAS"  # --site for a record that names none


def test_aws_vm_record_is_batch_and_keeps_its_resource_type(samples_dir):
    (record,) = parse((samples_dir / GRACC / "test_data/UsageRecord01.xml").read_bytes())
    assert record.kind == "batch"
    assert record.extra["resource_type"] == "AWSVM"
    assert record.resource == "kretzke-dev"  # host part of ProbeName awsvm:kretzke-dev
    assert record.memory_mb is None  # 3.75 without a storageUnit: not guessed
    assert record.exit_code == 1


@pytest.mark.parametrize(
    ("name", "kind", "site", "resource", "vo", "cores", "wall"),
    [
        ("condor-Batch.xml", "batch", "MWT2_CE_UC", "uct2-gk.mwt2.org", "atlas", 1, 152.0),
        ("condor-BatchPilot-payload.xml", "payload", "", "TACC", "osg", 1, 659.0),
        ("htcondor-ce-Batch.xml", "batch", "OSG_US_LSU_SuperMIC", "hosted-ce23.grid.uchicago.edu", "osg", 20, 2466.0),
    ],
)
def test_readme_records_with_undeclared_prefixes(samples_dir, name, kind, site, resource, vo, cores, wall):
    """The condor probe README's records use `urwg:` attributes without declaring the namespace."""
    (record,) = parse((samples_dir / "gratia/gratia-probe/readme-xml" / name).read_bytes())
    assert (record.kind, record.site, record.resource, record.vo) == (kind, site, resource, vo)
    assert (record.cores, record.wall_seconds, record.line) == (cores, wall, 1)


def test_payload_readme_record_field_by_field(samples_dir):
    (record,) = parse((samples_dir / "gratia/gratia-probe/readme-xml/condor-BatchPilot-payload.xml").read_bytes())
    assert record.natural_key == "xd-login.opensciencegrid.org#130244362.0#1555195970"
    assert (record.fqan, record.person, record.project) == ("/osg/LocalGroup=xsede", "/OU=LocalUser/CN=donkri", "IBN130001-Plus")
    assert (record.cpu_user_seconds, record.cpu_sys_seconds) == (449.0, 9.0)
    assert record.extra["submit_site"] == "XD-LOGIN"


def test_replication_bundle(samples_dir):
    """test.bundle: 15 `replication|xml|rawxml|extraxml|` entries: 11 job records, 4 storage records."""
    items = parse((samples_dir / GRACC / "test.bundle").read_bytes())
    jobs = records(items)
    assert [r.line for r in jobs] == [1, 90, 179, 268, 330, 392, 454, 516, 578, 640, 762]
    assert [r.line for r in rejections(items)] == [702, 724, 736, 753]
    assert all("not a job usage record" in r.reason for r in rejections(items))
    first = jobs[0]
    assert first.natural_key == "fermicloud121.fnal.gov#2391.0#1456365750"
    assert (first.site, first.resource, first.cores, first.wall_seconds) == ("MMTEST-FC1-CE1", "fermicloud121.fnal.gov", 4, 1395.0)
    pbs = jobs[3]  # the collector's rendering, not the raw UsageRecord beside it
    assert pbs.natural_key == "itbv-pbs.uc.mwt2.org:158494.itbv-pbs.uc.mwt2.org_1456366578"
    assert (pbs.local_user, pbs.vo, pbs.person, pbs.memory_mb) == ("glow", "GLOW", "", 4)
    assert pbs.resource == "itbv-ce-pbs.mwt2.org"
    assert jobs[-1].natural_key == "i-065c9ddf#1446582511.798504"


def test_record_envelope_reads_like_the_single_files(samples_dir):
    items = parse((samples_dir / GRACC / "test_bundle.xml").read_bytes())
    jobs = records(items)
    assert [r.line for r in jobs] == [3, 38, 66, 89, 117, 158, 268]
    assert [r.line for r in rejections(items)] == [203, 226, 240, 258]  # StorageElement(Record)s
    singles = [parse((samples_dir / GRACC / "test_data" / f"{name}.xml").read_bytes())[0] for name in ORACLE_SAMPLES]
    for ours, single in zip(jobs, singles, strict=True):
        single.line = ours.line
        assert ours == single


# --- Hand-written records ---


def test_hand_written_envelope_maps_every_field():
    items = parse(envelope(jur(), jur(job_id="ce.example.org#2.0#1700000000", resource_type="BatchPilot")))
    batch, payload = items
    assert (batch.line, payload.line) == (3, 14)
    assert batch.kind == "batch"
    assert (batch.site, batch.resource, batch.cores) == ("EXAMPLE", "ce.example.org", 8)
    assert (batch.vo, batch.fqan, batch.person, batch.local_user) == ("osg", "/osg/Role=NULL/Capability=NULL", "/DC=org/CN=Alice", "alice")
    assert (batch.wall_seconds, batch.cpu_user_seconds, batch.cpu_sys_seconds) == (3600.0, 3000.0, 60.0)
    assert payload.kind == "payload"
    assert (payload.site, payload.resource) == ("", "EXAMPLE_CE_1")


@pytest.mark.parametrize(
    ("resources", "pilot_ref"),
    [
        ('<Resource urwg:description="MATCH_EXP_JOB_GLIDEIN_Schedd">schedd_glideins4@gfactory-1.example.org</Resource>'
         '<Resource urwg:description="MATCH_EXP_JOB_GLIDEIN_ClusterId">555</Resource>'
         '<Resource urwg:description="MATCH_EXP_JOB_GLIDEIN_ProcId">7</Resource>\n',
         "schedd_glideins4@gfactory-1.example.org#555.7"),
        ('<Resource urwg:description="LastRemoteHost">slot1_1@glidein_123_456@wn1.example.org</Resource>\n',
         "glidein_123_456@wn1.example.org"),
        ("", ""),
    ],
)  # fmt: skip
def test_payload_pilot_link_like_htcondor_history(resources, pilot_ref):
    (record,) = parse(jur(resource_type="BatchPilot", extra=resources))
    assert record.pilot_ref == pilot_ref


def test_signal_exit_and_memory_units():
    extra = ('<Status>0</Status><Memory urwg:storageUnit="GB" urwg:metric="max">2</Memory><GPUs>2</GPUs>'
             '<Resource urwg:description="ExitBySignal">true</Resource><Resource urwg:description="ExitSignal">9</Resource>\n')  # fmt: skip
    (record,) = parse(jur(extra=extra))
    assert (record.exit_code, record.exit_signal) == (None, 9)
    assert (record.memory_mb, record.gpus) == (2048, 2)


def test_missing_times_are_derived_from_the_wall_time():
    text = jur().replace("<StartTime>2024-03-01T10:00:00Z</StartTime>", "")
    (record,) = parse(text)
    assert record.start == datetime(2024, 3, 1, 10, tzinfo=UTC)
    (record,) = parse(jur(end="2024-03-01T13:00:00+02:00").replace("<WallDuration>PT1H</WallDuration>", ""))
    assert record.wall_seconds == 3600.0  # EndTime (11:00 UTC) - StartTime


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("PT910S", 910), ("P1DT2H", 93600), ("PT1M5.32S", 65.32), ("PT21.0S", 21), ("PT0S", 0), ("P2W", 1209600),
     ("PT1H", 3600), ("PT0,5S", 0.5), (" PT5S\n", 5), ("P1D", 86400), ("PT10M17.0S", 617)],
)  # fmt: skip
def test_iso_durations(text, seconds):
    assert iso_duration(text, "WallDuration") == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "P", "PT", "P1Y", "P1M", "P1Y2M", "-PT5S", "PT1.5H", "PT5", "5", "PTNaNS", "P1DT", "PT5S x", "pt5s"])
def test_malformed_iso_durations_are_refused(text):
    with pytest.raises(RecordFormatError, match="not an ISO 8601 duration"):
        iso_duration(text, "WallDuration")


def test_iso_datetimes_to_utc():
    assert iso_datetime("2016-05-27T22:36:42Z", "EndTime") == datetime(2016, 5, 27, 22, 36, 42, tzinfo=UTC)
    assert iso_datetime("2016-05-28T00:36:42.25+02:00", "EndTime") == datetime(2016, 5, 27, 22, 36, 42, 250000, tzinfo=UTC)
    for bad in ("2016-05-27T22:36:42", "2016-13-01T00:00:00Z", "yesterday", "2016-05-27 22:36:42Z"):
        with pytest.raises(RecordFormatError):
            iso_datetime(bad, "EndTime")


# --- Hostile input: a Rejection naming the line, never an exception, the good records still read ---


NO_START = "<StartTime>2024-03-01T10:00:00Z</StartTime>"
PROCESSORS = '<Processors urwg:metric="max">8'
JOB_IDENTITY = "<JobIdentity><GlobalJobId>ce.example.org#1.0#1700000000</GlobalJobId><LocalJobId>1</LocalJobId></JobIdentity>"


@pytest.mark.parametrize(
    ("record", "reason"),
    [
        (jur(wall="-PT5S"), "WallDuration is not an ISO 8601 duration"),
        (jur(wall="PTNaNS"), "WallDuration is not an ISO 8601 duration"),
        (jur(wall="P9999D"), "absurd wall time"),
        (jur(wall="P999999999D").replace(NO_START, ""), "absurd WallDuration"),
        (jur(start="2024-03-01T12:00:00Z"), "is before start"),
        (jur(start="2999-01-01T00:00:00Z", end="2999-01-01T01:00:00Z"), "in the future"),
        (jur(start="1970-01-01T00:00:00Z"), "before 1995"),
        (jur(end="2024-03-01T11:00:00"), "EndTime is not an ISO 8601 date-time with a time zone"),
        (jur().replace(PROCESSORS, "<Processors>eight"), "Processors is not a whole number"),
        (jur().replace(PROCESSORS, "<Processors>100000"), "absurd core count"),
        (jur().replace(JOB_IDENTITY, ""), "no GlobalJobId or LocalJobId"),
        (jur().replace("<CpuDuration urwg:usageType=\"user\">PT50M", "<CpuDuration urwg:usageType=\"user\">PT-5M"),
         "CpuDuration is not an ISO 8601 duration"),
        (jur(extra='<Memory urwg:storageUnit="MB">lots</Memory>\n'), "Memory is not a number"),
    ],
)  # fmt: skip
def test_bad_records_are_rejected_between_good_ones(record, reason):
    good = jur(job_id="ce.example.org#9.0#1700000000")
    items = parse(envelope(good, record, good))
    assert [type(item) for item in items] == [ParsedRecord, Rejection, ParsedRecord]
    assert items[1].line == 14
    assert reason in items[1].reason


def test_without_global_job_id_the_key_is_probe_local_id_and_end():
    (record,) = parse(jur(job_id=""))
    assert record.natural_key == "condor:ce.example.org|1|2024-03-01T11:00:00Z"


def test_duplicated_records_are_both_yielded():
    first, second = parse(envelope(jur(), jur()))
    assert first.natural_key == second.natural_key
    assert (first.line, second.line) == (3, 14)


@pytest.mark.parametrize("data", [b"", b"   \n\n", b"\x00\x01\x02\xff binary garbage \xfe" * 50, b"not xml at all\n"])
def test_empty_or_garbage_is_one_rejection(data):
    (item,) = parse(data)
    assert isinstance(item, Rejection)
    assert "not well-formed XML" in item.reason


@pytest.mark.parametrize("encoding", ["EBCDIC-XYZ", "shift_jis", "utf-7", "rot13", "idna", "punycode", "undefined", "cp037"])
def test_unreadable_encodings_are_one_rejection(encoding):
    data = f'<?xml version="1.0" encoding="{encoding}"?>\n<JobUsageRecord>\x81\xff</JobUsageRecord>'.encode("latin-1")
    (item,) = parse(data)
    assert isinstance(item, Rejection) and item.line == 1


def test_truncated_envelope_keeps_the_records_before_the_cut():
    text = envelope(jur(), jur(job_id="ce.example.org#2.0#1700000000"))
    items = parse(text[: text.index("<SiteName>", text.index("#2.0#"))])
    assert isinstance(items[0], ParsedRecord)
    (rejection,) = items[1:]
    assert rejection.line == 14
    assert "at line 22" in rejection.reason and "this record is lost" in rejection.reason


def test_non_utf8_bytes_reject_their_record():
    second = jur(job_id="ce.example.org#2.0#1700000000").encode().replace(b"alice<", b"caf\xe9<")
    good, bad = parse(envelope(jur(), "SECOND").encode().replace(b"SECOND", second))
    assert isinstance(good, ParsedRecord)
    assert bad.line == 14 and "not well-formed XML" in bad.reason and "line 16" in bad.reason


BILLION_LAUGHS = """<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol9 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
]>
<JobUsageRecord><JobIdentity><GlobalJobId>&lol9;</GlobalJobId></JobIdentity></JobUsageRecord>
"""
EXTERNAL_ENTITY = """<?xml version="1.0"?>
<!DOCTYPE JobUsageRecord [<!ENTITY secret SYSTEM "file:///etc/passwd">]>
<JobUsageRecord><UserIdentity><LocalUserId>&secret;</LocalUserId></UserIdentity></JobUsageRecord>
"""
EXTERNAL_DTD = '<?xml version="1.0"?>\n<!DOCTYPE JobUsageRecord SYSTEM "http://attacker.example/evil.dtd">\n<JobUsageRecord/>\n'


@pytest.mark.parametrize("text", [BILLION_LAUGHS, EXTERNAL_ENTITY, EXTERNAL_DTD])
def test_dtds_entities_and_external_references_are_refused_not_expanded(text):
    started = time.monotonic()
    (item,) = parse(text)
    assert isinstance(item, Rejection)
    assert item.line == 2  # the DOCTYPE
    assert "DTD" in item.reason and "refused" in item.reason
    assert time.monotonic() - started < 1


def test_a_bomb_in_one_replication_entry_spares_the_others():
    bundle = f"replication|{jur()}|{jur()}||replication|{BILLION_LAUGHS}|||replication|{jur(job_id='x#2.0#1')}|||"
    items = parse(bundle)
    assert [type(item) for item in items] == [ParsedRecord, Rejection, ParsedRecord]
    assert items[1].line == 22 and "DTD" in items[1].reason  # the DOCTYPE line of the second entry
    assert items[2].line == 30


def test_replication_fields_keep_a_pipe_inside_an_attribute_value():
    record = jur(extra='<Resource urwg:description="a|b">x</Resource>\n')
    (item,) = parse(f"replication|{record}|{record}||\n")
    assert isinstance(item, ParsedRecord)


def test_truncated_bundle_and_stray_text_are_rejected():
    bundle = f"replication|{jur()}|||garbage|replication|{jur(job_id='x#2.0#1')[:300]}"
    first, stray, cut = parse(bundle)
    assert isinstance(first, ParsedRecord)
    assert stray.line == 11 and "expected a 'replication|' entry" in stray.reason
    assert cut.line == 11 and "not well-formed XML" in cut.reason


def test_oversized_record_is_rejected_and_the_next_one_read():
    huge = jur(extra=f"<JobName>{'x' * (2 * 1024 * 1024)}</JobName>\n")
    items = parse(envelope(huge, jur()))
    assert isinstance(items[0], Rejection) and "larger than" in items[0].reason
    assert isinstance(items[1], ParsedRecord)


class CountingStream(io.BytesIO):
    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.bytes_read = 0

    def read(self, size=-1):
        chunk = super().read(size)
        self.bytes_read += len(chunk)
        return chunk


def test_big_envelope_is_streamed_not_read_whole():
    data = envelope(*(jur(job_id=f"ce.example.org#{n}.0#1700000000") for n in range(3000))).encode()
    stream = CountingStream(data)
    items = PARSER.parse(stream, "big.xml", CONTEXT)
    assert isinstance(next(items), ParsedRecord)
    assert stream.bytes_read < len(data) / 10
    assert sum(1 for _ in items) == 2999


# --- Detection and fuzzing ---


def test_detect_accepts_gratia_files(samples_dir):
    for path in [*(samples_dir / GRACC / "test_data").glob("*UsageRecord*.xml"), samples_dir / GRACC / "test.bundle",
                 samples_dir / GRACC / "test_bundle.xml", *(samples_dir / "gratia/gratia-probe/readme-xml").glob("*.xml")]:  # fmt: skip
        assert PARSER.detect(path.read_bytes()[:65536], path.name), path.name


def test_detect_refuses_other_formats(samples_dir):
    others = [*(samples_dir / "gratia/gratia-probe/condor-ap-history").glob("history.*"), *(samples_dir / "glideinwms").iterdir(),
              *(samples_dir / "htcondor").iterdir()]  # fmt: skip
    for path in others:
        if path.suffix != ".md":
            assert not PARSER.detect(path.read_bytes()[:65536], path.name), path.name
    assert not PARSER.detect(b"APEL-individual-job-message: v0.3\nSite: X\n", "apel.msg")
    assert not PARSER.detect(b"", "empty")
    assert not PARSER.detect(b"\x00\x01\x02 binary \xff" * 100, "blob")


def test_apel_parser_does_not_claim_gratia_files(samples_dir):
    assert not APELParser().detect((samples_dir / GRACC / "test.bundle").read_bytes()[:65536], "test.bundle")
    assert not APELParser().detect((samples_dir / GRACC / "test_bundle.xml").read_bytes()[:65536], "test_bundle.xml")


XML_TOKENS = [*"<>/=\"' |&;!?-:xPTSHM0123456789.\n", "JobUsageRecord", "RecordEnvelope", "replication|", "<WallDuration>",
              "</WallDuration>", "<!DOCTYPE a [", "<!ENTITY e 'x'>", "&e;", "urwg:", "\xe9"]  # fmt: skip
XMLISH = st.lists(st.sampled_from(XML_TOKENS), max_size=60).map(lambda parts: "".join(parts).encode())
DECLARED = st.builds(lambda encoding, body: f'<?xml version="1.0" encoding="{encoding}"?>'.encode() + body,
                     st.sampled_from(["utf-8", "latin-1", "utf-7", "rot13", "cp037", "nonsense"]), XMLISH)  # fmt: skip


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=2000) | XMLISH | DECLARED | st.sampled_from([jur(), envelope(jur())]).flatmap(
    lambda text: st.integers(0, len(text)).map(lambda cut: text[:cut].encode())))  # fmt: skip
def test_fuzz_any_input_yields_records_or_rejections(data):
    for item in parse(data):
        assert isinstance(item, (ParsedRecord, Rejection))
        if isinstance(item, Rejection):
            assert item.line is None or item.line >= 1
