"""Format parsers, one module per format (CONTRACT.md names), all with the interface of `base.Parser`."""
# ruff: noqa: E402 - the parsers are imported after the check of the compiled module below
import importlib.util
import sys
import warnings
from pathlib import Path


def _never_stale(name: str) -> None:
    """`make venv` compiles the module `name` of this package; Python prefers the compiled file to the source.
    A compiled file older than its source (the source edited or pulled since) would run old code: the source
    is loaded instead, with a warning to rebuild."""
    source = Path(__file__).with_name(f"{name}.py")
    spec = importlib.util.find_spec(f"{__name__}.{name}")
    if spec is None or spec.origin == str(source) or Path(spec.origin).stat().st_mtime >= source.stat().st_mtime:
        return
    warnings.warn(f"{spec.origin} is older than {source.name}: running the source (run `make venv` to rebuild)", stacklevel=2)
    spec = importlib.util.spec_from_file_location(f"{__name__}.{name}", source)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)


_never_stale("htcondor_history")

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
