"""Fixtures shared by the whole suite."""
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """`../shared` beside the repository (DOMAIN.md, samples); CI clones it there."""
    if not SHARED.is_dir():
        pytest.fail(f"{SHARED} is missing: the suite reads the real samples from ../shared")
    return SHARED


@pytest.fixture(scope="session")
def samples_dir(shared_dir) -> Path:
    return shared_dir / "samples" / "real"


@pytest.fixture
def bundle_store(settings, tmp_path):
    """A fresh, empty bundle store for one test."""
    settings.BUNDLE_STORE = tmp_path / "bundles"
    return settings.BUNDLE_STORE


@pytest.fixture
def write(tmp_path):
    """Write bytes or text to a file under tmp_path and return its path."""

    def _write(name: str, content: str | bytes) -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, str):
            content = content.encode("utf-8")
        path.write_bytes(content)
        return path

    return _write
