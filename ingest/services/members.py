"""The files inside a stored bundle: the file itself, or the members of a tar / zip archive.

Archives are checked before anything is read: member count, total unpacked size, compression ratio,
and names (no absolute paths, no `..`, no links or devices). Members are streamed from the archive and
never written to disk, so nothing can land outside the bundle store.
"""
from __future__ import annotations

import tarfile
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import BinaryIO

MAX_MEMBERS = 10_000
MAX_TOTAL_BYTES = 20 * 1024**3
MAX_RATIO = 200


class ArchiveRejected(ValueError):
    """The archive as a whole fails the checks; nothing in it is read."""


@dataclass
class Member:
    name: str
    size: int
    problem: str = ""  # a member that is skipped, and why


def archive_kind(path: Path) -> str:
    if zipfile.is_zipfile(path):
        return "zip"
    try:
        if tarfile.is_tarfile(path):
            return "tar"
    except OSError:
        pass
    return ""


def unsafe_name(name: str) -> str:
    pure = PurePosixPath(name.replace("\\", "/"))
    if pure.is_absolute() or name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":"):
        return "absolute path in archive"
    if ".." in pure.parts:
        return "path with '..' in archive"
    return ""


def plan(path: Path) -> tuple[str, list[Member]]:
    """Check the bundle and list what will be read: ("file"|"tar"|"zip", members)."""
    kind = archive_kind(path)
    if not kind:
        return "file", [Member(path.name, path.stat().st_size)]
    compressed = path.stat().st_size
    members: list[Member] = []
    total = 0
    if kind == "zip":
        with zipfile.ZipFile(path) as archive:
            infos = archive.infolist()
            if len(infos) > MAX_MEMBERS:
                raise ArchiveRejected(f"archive has more than {MAX_MEMBERS} members")
            for info in infos:
                if info.is_dir():
                    continue
                problem = unsafe_name(info.filename)
                mode = (info.external_attr >> 16) & 0o170000
                if not problem and mode == 0o120000:
                    problem = "symbolic link in archive"
                members.append(Member(info.filename, info.file_size, problem))
                total += 0 if problem else info.file_size
    else:
        with tarfile.open(path) as archive:
            count = 0
            for info in archive:
                count += 1
                if count > MAX_MEMBERS:
                    raise ArchiveRejected(f"archive has more than {MAX_MEMBERS} members")
                if info.isdir():
                    continue
                problem = unsafe_name(info.name)
                if not problem and (info.issym() or info.islnk()):
                    problem = "link in archive"
                elif not problem and not info.isfile():
                    problem = "special file in archive"
                members.append(Member(info.name, info.size, problem))
                total += 0 if problem else info.size
    if total > MAX_TOTAL_BYTES:
        raise ArchiveRejected(f"archive unpacks to {total} bytes, over the limit of {MAX_TOTAL_BYTES}")
    if compressed and total / compressed > MAX_RATIO and total > 100 * 1024 * 1024:
        raise ArchiveRejected(f"archive expands {total // compressed}x (a zip bomb?), over the limit of {MAX_RATIO}x")
    return kind, members


@contextmanager
def open_member(path: Path, kind: str, member: Member) -> Iterator[BinaryIO]:
    """A bounded binary stream of one member (reads stop at the size the archive declared)."""
    if kind == "file":
        with path.open("rb") as handle:
            yield handle
    elif kind == "zip":
        with zipfile.ZipFile(path) as archive, archive.open(member.name) as handle:
            yield handle
    else:
        with tarfile.open(path) as archive:
            handle = archive.extractfile(member.name)
            if handle is None:
                raise ArchiveRejected(f"{member.name}: not a regular file")
            with handle:
                yield handle
