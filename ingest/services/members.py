"""The files inside a stored bundle: the file itself, or the members of a tar / zip archive.

Archives are checked before anything is read: member count, total unpacked size, compression ratio,
and names (no absolute paths, no `..`, no links or devices). Members are streamed from the archive and
never written to disk, so nothing can land outside the bundle store.

Hostile archives are bounded too:
- the limits are checked entry by entry while the archive is listed, so the listing stops at the first
  entry that breaks them, before its data is decompressed (a gzip-compressed tar is listed by reading
  through it);
- a zip's central directory is sized before Python parses it (it is held whole in memory); an encrypted
  member or one with an unknown compression method is skipped with its reason;
- a tar's extended headers (pax, GNU long names) are at most MAX_HEADER_BYTES and a pax header must be
  well formed before Python's tarfile parses it (tarfile reads them whole into memory, and before
  Python 3.11.10 parses pax records with backtracking regular expressions, CVE-2024-6232); sparse
  files are refused;
- a tar cut short or corrupt part-way keeps the members listed before the damage, and names it;
- a member is opened by the entry the listing found, never looked up again by name (a later entry of the
  same name, e.g. a link, cannot stand in for it), and the archive is kept open between members, so that
  reading the members in archive order decompresses a compressed tar once (not once per member).
"""
from __future__ import annotations

import lzma
import re
import tarfile
import threading
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import BinaryIO

MAX_MEMBERS = 10_000
MAX_TOTAL_BYTES = 20 * 1024**3
MAX_RATIO = 200
# The ratio is checked only past this size: small archives of text legitimately compress very well.
RATIO_FLOOR_BYTES = 100 * 1024**2
MAX_HEADER_BYTES = 64 * 1024  # one tar extended header (pax, GNU long name or link)
ZIP_DIRECTORY_BYTES_PER_MEMBER = 1024  # a zip's central directory may take this much per allowed member
ZIP_METHODS = {zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA}
# What reading a damaged archive raises (gzip, bz2 and short reads raise OSError or EOFError).
READ_ERRORS = (tarfile.TarError, zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, lzma.LZMAError, EOFError, OSError)
PAX_TYPES = (tarfile.XHDTYPE, tarfile.XGLTYPE, tarfile.SOLARIS_XHDTYPE)
LONG_TYPES = (tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK)
LONG_DIGITS = re.compile(rb"\d{65}")


class ArchiveRejected(ValueError):
    """The archive as a whole fails the checks; nothing in it is read."""


@dataclass
class Member:
    name: str
    size: int
    problem: str = ""  # a member that is skipped, and why
    # The archive entry found by `plan` (TarInfo or ZipInfo); None: looked up by name when opened.
    entry: object = field(default=None, repr=False, compare=False)


def archive_kind(path: Path) -> str:
    if zipfile.is_zipfile(path):
        return "zip"
    try:
        with _CheckedTarFile.open(path):
            return "tar"
    except ArchiveRejected:
        return "tar"  # a tar whose first header is refused: `plan` says why
    except READ_ERRORS:
        return ""


def unsafe_name(name: str) -> str:
    pure = PurePosixPath(name.replace("\\", "/"))
    if pure.is_absolute() or name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":"):
        return "absolute path in archive"
    if ".." in pure.parts:
        return "path with '..' in archive"
    return ""


class _Limits:
    """The running totals of an archive listing; raises ArchiveRejected as soon as one is broken."""

    def __init__(self, compressed: int) -> None:
        self.compressed = compressed
        self.count = 0
        self.total = 0

    def entry(self) -> None:
        self.count += 1
        if self.count > MAX_MEMBERS:
            raise ArchiveRejected(f"archive has more than {MAX_MEMBERS} members")

    def data(self, size: int) -> None:
        """Bytes a member unpacks to (every regular entry: a tar is read through all of them)."""
        self.total += size
        if self.total > MAX_TOTAL_BYTES:
            raise ArchiveRejected(f"archive unpacks to more than {MAX_TOTAL_BYTES} bytes (the limit)")
        if self.compressed and self.total > RATIO_FLOOR_BYTES and self.total / self.compressed > MAX_RATIO:
            raise ArchiveRejected(
                f"archive expands {self.total // self.compressed}x (a zip bomb?), over the limit of {MAX_RATIO}x"
            )


def plan(path: Path) -> tuple[str, list[Member]]:
    """Check the bundle and list what will be read: ("file"|"tar"|"zip", members)."""
    close_archives()
    kind = archive_kind(path)
    if not kind:
        return "file", [Member(path.name, path.stat().st_size)]
    limits = _Limits(path.stat().st_size)
    if kind == "zip":
        return kind, _zip_members(path, limits)
    return kind, _tar_members(path, limits)


def _zip_members(path: Path, limits: _Limits) -> list[Member]:
    members: list[Member] = []
    try:
        with path.open("rb") as handle:
            end = zipfile._EndRecData(handle)  # the end-of-central-directory record, zip64 included
        directory_limit = MAX_MEMBERS * ZIP_DIRECTORY_BYTES_PER_MEMBER
        if end is None or end[zipfile._ECD_SIZE] > directory_limit:
            raise ArchiveRejected(f"zip central directory larger than {directory_limit} bytes (too many members)")
        with zipfile.ZipFile(path) as archive:
            for info in archive.infolist():
                limits.entry()
                if info.is_dir():
                    continue
                limits.data(info.file_size)
                members.append(Member(info.filename, info.file_size, _zip_problem(info), info))
    except READ_ERRORS as exc:
        raise ArchiveRejected(f"unreadable zip archive: {exc}") from None
    return members


def _zip_problem(info: zipfile.ZipInfo) -> str:
    problem = unsafe_name(info.filename)
    if not problem and (info.external_attr >> 16) & 0o170000 == 0o120000:
        problem = "symbolic link in archive"
    if not problem and info.flag_bits & 0x1:
        problem = "encrypted member in archive"
    if not problem and info.compress_type not in ZIP_METHODS:
        problem = f"unsupported compression method {info.compress_type} in archive"
    return problem


def _tar_members(path: Path, limits: _Limits) -> list[Member]:
    members: list[Member] = []
    try:
        with _CheckedTarFile.open(path) as archive:
            for info in archive:
                limits.entry()
                if info.isdir():
                    continue
                problem = unsafe_name(info.name)
                if not problem and (info.issym() or info.islnk()):
                    problem = "link in archive"
                elif not problem and not info.isfile():
                    problem = "special file in archive"
                if info.isfile() or info.type not in tarfile.SUPPORTED_TYPES:  # the entries tarfile reads past
                    limits.data(info.size)
                members.append(Member(info.name, info.size, problem, info))
    except READ_ERRORS as exc:
        if not members:
            raise ArchiveRejected(f"unreadable tar archive: {exc}") from None
        members.append(Member(f"(after {members[-1].name})", 0, f"archive cut short or corrupt, not read further: {exc}"))
    return members


class _CheckedTarInfo(tarfile.TarInfo):
    """A tar header whose extended headers are checked before Python's tarfile processes them."""

    def _proc_member(self, tarfile_):
        if self.type == tarfile.GNUTYPE_SPARSE:
            raise ArchiveRejected("sparse file in archive")
        if self.type in PAX_TYPES or self.type in LONG_TYPES:
            if self.size > MAX_HEADER_BYTES:
                raise ArchiveRejected(f"tar extended header of {self.size} bytes, over the limit of {MAX_HEADER_BYTES}")
        if self.type in PAX_TYPES:
            data = tarfile_.fileobj.read(self._block(self.size))
            problem = pax_problem(data[: self.size])
            if problem:
                raise ArchiveRejected(problem)
            outer = tarfile_.fileobj
            tarfile_.fileobj = _Replay(data, outer)  # tarfile reads the header again from here
            try:
                return super()._proc_member(tarfile_)
            finally:
                tarfile_.fileobj = outer
        return super()._proc_member(tarfile_)


class _CheckedTarFile(tarfile.TarFile):
    tarinfo = _CheckedTarInfo


def pax_problem(data: bytes) -> str:
    """Why a pax extended header is refused ("" when it is well formed): each record `LEN key=value\\n`
    exactly LEN bytes long, no sparse-file keys, no run of digits long enough to slow tarfile's parse."""
    end = len(data.rstrip(b"\0"))
    position = 0
    while position < end:
        space = data.find(b" ", position, min(position + 21, end))
        length = int(data[position:space]) if space > position and data[position:space].isdigit() else 0
        record = data[position : position + length]
        equals = record.find(b"=", space - position)
        if length <= space - position + 2 or len(record) < length or not record.endswith(b"\n") or equals < 0:
            return f"malformed pax header record at byte {position}"
        if record[space - position + 1 : equals].startswith(b"GNU.sparse"):
            return "sparse file in archive"
        position += length
    if LONG_DIGITS.search(data, 0, end):
        return "pax header with an over-long number"
    return ""


class _Replay:
    """A tar's file object with the bytes already read from it put back in front (for `_CheckedTarInfo`)."""

    def __init__(self, data: bytes, fileobj) -> None:
        self.data = data
        self.offset = 0
        self.fileobj = fileobj

    def read(self, size: int = -1) -> bytes:
        head = self.data[self.offset :] if size < 0 else self.data[self.offset : self.offset + size]
        self.offset += len(head)
        if size < 0:
            return head + self.fileobj.read()
        return head + self.fileobj.read(size - len(head)) if len(head) < size else head

    def tell(self) -> int:
        return self.fileobj.tell() - (len(self.data) - self.offset)


_open = threading.local()


def close_archives() -> None:
    """Close the archive kept open between members (a new plan, or at the end of a bundle)."""
    archive = getattr(_open, "archive", None)
    _open.key, _open.archive = None, None
    if archive is not None:
        archive.close()


def _archive(path: Path, kind: str):
    """The open TarFile / ZipFile of `path`, reused while members of the same file are read."""
    stat = path.stat()
    key = (str(path), kind, stat.st_ino, stat.st_mtime_ns, stat.st_size)
    if getattr(_open, "key", None) != key:
        close_archives()
        _open.archive = zipfile.ZipFile(path) if kind == "zip" else _CheckedTarFile.open(path)
        _open.key = key
    return _open.archive


@contextmanager
def open_member(path: Path, kind: str, member: Member) -> Iterator[BinaryIO]:
    """A bounded binary stream of one member (reads stop at the size the archive declared).

    A damaged member (bad CRC, cut compressed data) raises ArchiveRejected naming it."""
    if kind == "file":
        with path.open("rb") as handle:
            yield handle
        return
    try:
        archive = _archive(path, kind)
        handle = _open_entry(archive, kind, member)
    except READ_ERRORS as exc:
        close_archives()
        raise ArchiveRejected(f"{member.name}: {exc}") from None
    with handle:
        try:
            yield handle
        except READ_ERRORS as exc:
            close_archives()
            raise ArchiveRejected(f"{member.name}: {exc}") from None


def _open_entry(archive, kind: str, member: Member) -> BinaryIO:
    entry = member.entry
    if kind == "zip":
        info = entry if isinstance(entry, zipfile.ZipInfo) else archive.getinfo(member.name)
        if _zip_problem(info):
            raise ArchiveRejected(f"{member.name}: {_zip_problem(info)}")
        return archive.open(info)
    info = entry if isinstance(entry, tarfile.TarInfo) else archive.getmember(member.name)
    if not info.isfile() or unsafe_name(info.name):
        raise ArchiveRejected(f"{member.name}: not a regular file")
    handle = archive.extractfile(info)
    if handle is None:
        raise ArchiveRejected(f"{member.name}: not a regular file")
    return handle
