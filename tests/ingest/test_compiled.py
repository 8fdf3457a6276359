"""Compiled modules older than their `.pyx` are not used: their Python references run instead (ingest.compiled)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run_with_an_older_build(built: Path, source: Path, probe: str) -> tuple[subprocess.CompletedProcess, subprocess.CompletedProcess]:
    """`probe` run in a fresh Python as built, then with `built` made older than `source` (restored after)."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "portal.settings"}
    run = lambda: subprocess.run([sys.executable, "-c", f"import django; django.setup(); {probe}"], capture_output=True,  # noqa: E731
                                 text=True, check=True, cwd=ROOT, env=env)  # fmt: skip
    current = run()
    times = built.stat()
    try:
        os.utime(built, (times.st_atime, source.stat().st_mtime - 10))
        return current, run()
    finally:
        os.utime(built, (times.st_atime, times.st_mtime))


@pytest.mark.parametrize(
    ("compiled", "probe"),
    [
        ("ingest.parsers._adlines", "import ingest.parsers.htcondor_history as h; print(h._adlines is None, h.PICKER.compiled is None)"),
        ("ingest.services._record_hash", "import ingest.services.loader as l; print(l._record_hash is None, l.record_hash is l.python_record_hash)"),
        ("ingest.services._copy_rows", "import ingest.services.loader as l; print(l._copy_rows is None, not hasattr(l._copy_rows, 'CopyRows'))"),
    ],
)  # fmt: skip
def test_a_compiled_module_older_than_its_pyx_is_not_used(compiled, probe):
    import importlib

    built = Path(importlib.import_module(compiled).__file__)
    current, stale = run_with_an_older_build(built, built.with_name(compiled.rpartition(".")[2] + ".pyx"), probe)
    assert current.stdout.split() == ["False", "False"]  # built and current: used
    assert stale.stdout.split() == ["True", "True"]
    assert f"older than {compiled.rpartition('.')[2]}.pyx" in stale.stderr and "make venv" in stale.stderr


def test_a_compiled_module_older_than_its_python_source_is_not_run():
    """Python prefers the compiled htcondor_history to its .py; after an edit without `make venv` the source runs."""
    from ingest.parsers import htcondor_history

    built = Path(htcondor_history.__file__)
    source = built.with_name("htcondor_history.py")
    current, stale = run_with_an_older_build(built, source, "import ingest.parsers.htcondor_history as h; print(h.__file__)")
    assert current.stdout.strip() == str(built)
    assert stale.stdout.strip() == str(source)
    assert "older than htcondor_history.py" in stale.stderr and "make venv" in stale.stderr


def test_the_parser_reads_the_same_without_its_compiled_module():
    """What runs when the module is stale or not built: the references, which the other tests compare too."""
    import io
    from unittest import mock

    from ingest.parsers import ParseContext
    from ingest.parsers import htcondor_history as history
    from tests.ingest.test_htcondor_history import PAYLOAD, exactly

    compiled = list(history.HTCondorHistoryParser().parse(io.BytesIO(PAYLOAD.encode()), "h", ParseContext()))
    with mock.patch.multiple(history, _adlines=None, PICKER=history.AttributePicker(history.MAPPED_ATTRIBUTES)):
        reference = list(history.HTCondorHistoryParser().parse(io.BytesIO(PAYLOAD.encode()), "h", ParseContext()))
    assert history.PICKER.compiled is not None and len(compiled) == 1
    assert [exactly(r) for r in compiled] == [exactly(r) for r in reference]
