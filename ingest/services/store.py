"""The bundle store: original files kept for ever under their sha256, never outside the store's root."""
from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import BinaryIO

from django.conf import settings


def store_root() -> Path:
    root = Path(settings.BUNDLE_STORE)
    root.mkdir(parents=True, exist_ok=True)
    return root


def save_stream(stream: BinaryIO, max_bytes: int | None = None) -> tuple[str, str, int]:
    """Copy `stream` into the store; return (path relative to the store, sha256, size).

    Raises ValueError when the stream is larger than `max_bytes` (nothing is kept then).
    """
    root = store_root()
    digest = hashlib.sha256()
    size = 0
    fd, tmp_name = tempfile.mkstemp(dir=root, prefix=".incoming-")
    try:
        with os.fdopen(fd, "wb") as out:
            while chunk := stream.read(1024 * 1024):
                size += len(chunk)
                if max_bytes is not None and size > max_bytes:
                    raise ValueError(f"file larger than the limit of {max_bytes} bytes")
                digest.update(chunk)
                out.write(chunk)
        sha = digest.hexdigest()
        relative = Path(sha[:2]) / sha
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.exists():
            os.unlink(tmp_name)
        else:
            os.replace(tmp_name, target)
        return str(relative), sha, size
    except BaseException:
        if os.path.exists(tmp_name):
            os.unlink(tmp_name)
        raise


def save_path(path: Path) -> tuple[str, str, int]:
    """Store a local file, or a directory as an uncompressed tar of its regular files (spooled inside the
    store, never in TMPDIR: a directory bundle can be as large as the data it holds)."""
    if path.is_dir():
        with tempfile.TemporaryFile(dir=store_root(), prefix=".incoming-") as tmp:
            import tarfile

            with tarfile.open(fileobj=tmp, mode="w") as tar:
                for child in sorted(path.rglob("*")):
                    if child.is_file() and not child.is_symlink():
                        tar.add(child, arcname=str(child.relative_to(path)), recursive=False)
            tmp.seek(0)
            return save_stream(tmp)
    with path.open("rb") as handle:
        return save_stream(handle)


def absolute(relative: str) -> Path:
    path = (store_root() / relative).resolve()
    if store_root().resolve() not in path.parents:
        raise ValueError(f"bundle path {relative!r} escapes the bundle store")
    return path


def remove_all() -> None:
    """Test helper: empty the store."""
    shutil.rmtree(store_root(), ignore_errors=True)
