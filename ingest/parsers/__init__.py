"""Format parsers, one module per format (CONTRACT.md names), all with the interface of `base.Parser`."""
from ingest.parsers.apel import APELParser
from ingest.parsers.base import ParseContext, ParsedRecord, Parser, PilotInfo, PilotRuns, Rejection
from ingest.parsers.gratia_ur import GratiaURParser
from ingest.parsers.gwms_completed import GWMSCompletedParser
from ingest.parsers.gwms_glidein import GWMSGlideinParser
from ingest.parsers.htcondor_history import HTCondorHistoryParser
from ingest.parsers.ncsa import NCSAParser
from ingest.parsers.pbs import PBSParser
from ingest.parsers.slurm import SlurmParser
from ingest.parsers.snapshot import SnapshotParser

# Detection tries them in this order: the most specific formats first.
PARSERS: dict[str, Parser] = {
    parser.name: parser
    for parser in (
        GWMSGlideinParser(),
        GWMSCompletedParser(),
        GratiaURParser(),
        APELParser(),
        NCSAParser(),
        SnapshotParser(),
        SlurmParser(),
        PBSParser(),
        HTCondorHistoryParser(),
    )
}
DETECT_BYTES = 64 * 1024


def get_parser(name: str) -> Parser:
    try:
        return PARSERS[name]
    except KeyError:
        raise ValueError(f"unknown format {name!r}; known: {', '.join(sorted(PARSERS))}") from None


def detect_format(head: bytes, filename: str) -> Parser | None:
    """The parser whose `detect` accepts the file's first bytes, or None."""
    for parser in PARSERS.values():
        if parser.detect(head, filename):
            return parser
    return None


__all__ = ["PARSERS", "ParseContext", "ParsedRecord", "Parser", "PilotInfo", "PilotRuns", "Rejection", "detect_format", "get_parser"]
