"""Compiled companions of Python modules (`make venv` builds them with Cython from their `.pyx`).

Each has a Python reference that gives the same results, so a compiled module that is missing or older than
its `.pyx` (edited or pulled since the build) is not used: old compiled code would run, or fail on a name it
does not have yet. The caller then runs the reference, with a warning to rebuild.
"""
from __future__ import annotations

import importlib
import warnings
from pathlib import Path
from types import ModuleType


def current(name: str) -> ModuleType | None:
    """The compiled module `name` (e.g. "ingest.parsers._adlines"), or None when it is not built or is older
    than its `.pyx`."""
    try:
        module = importlib.import_module(name)
    except ImportError:
        return None
    built = Path(module.__file__)
    source = built.with_name(f"{name.rpartition('.')[2]}.pyx")
    if source.exists() and built.stat().st_mtime < source.stat().st_mtime:
        warnings.warn(f"{built} is older than {source.name}: running its Python reference (run `make venv` to rebuild)", stacklevel=2)
        return None
    return module
