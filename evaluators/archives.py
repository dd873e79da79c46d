"""A ``.zip`` or ``.tar`` (``.tar.gz``, ``.tgz`` too) of class folders, checked before anything is written and
then unpacked, without torch or Django: the web server unpacks an upload with it (``webapp.services.uploads``),
a worker the archive it fetched by digest (``evaluators.data_cache``).

Refused, each with a :class:`ArchiveError` naming the entry, before a single file is written:

- an entry with an absolute path (``/etc/passwd``, ``C:\\x``) or a ``..`` part (``../../x``);
- a link (symbolic or hard): one that points out of the archive is named so; links inside are refused too,
  since a class folder holds files;
- a device, FIFO or other special file;
- a file named ``.png``/``.jpg``/``.jpeg`` whose first bytes are no PNG or JPEG signature (a text file or a
  program under an image's name; a real image cut short is another matter: the scan lists it as corrupt and
  skips it), in an upload (not in the server's archive a worker fetches: its content is checked by digest);
- more unpacked bytes than ``limit`` (an archive that inflates: a zip bomb).

What is unpacked: every regular file and folder, under ``dest``. The set's root (:func:`set_root`) is ``dest``,
or the one folder it holds when the archive wraps its class folders in a single top folder (``parts/cat/...``).
"""
from __future__ import annotations

import posixpath
import shutil
import stat
import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

from evaluators import data_files
from evaluators.data_files import IMAGE_SUFFIXES

SUFFIXES = (".zip", ".tar", ".tar.gz", ".tgz")
#: The first bytes of a PNG and of a JPEG file.
SIGNATURES = (b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff")


class ArchiveError(ValueError):
    """An archive that is not unpacked, and why (nothing was written)."""


def suffix_of(name: str) -> str:
    """The archive suffix of ``name`` (one of :data:`SUFFIXES`); :class:`ArchiveError` otherwise."""
    lower = name.lower()
    for suffix in SUFFIXES:
        if lower.endswith(suffix):
            return suffix
    raise ArchiveError(f"{name!r} is not a .zip or .tar archive (the names accepted end in {', '.join(SUFFIXES)}).")


def _checked_name(name: str) -> str:
    """The entry's name, if it stays inside the archive; :class:`ArchiveError` otherwise."""
    if name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":"):
        raise ArchiveError(f"The archive's entry {name!r} has an absolute path; entries must be relative "
                           f"(class_name/image.png). Nothing was registered.")
    parts = name.replace("\\", "/").split("/")
    if ".." in parts:
        raise ArchiveError(f"The archive's entry {name!r} climbs out of the archive ('..'); nothing was registered.")
    return "/".join(p for p in parts if p not in ("", "."))


def _refuse_link(name: str, target: str, base: str | None = None) -> None:
    """Refuse a link; ``base``: the folder its target is relative to (the link's own folder by default)."""
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(name) if base is None else base, target))
    out = target.startswith("/") or resolved == ".." or resolved.startswith("../")
    where = "points out of the archive" if out else "is a link (a class folder must hold the image files themselves)"
    raise ArchiveError(f"The archive's entry {name!r} -> {target!r} {where}; nothing was registered.")


def _refuse_non_image(name: str, head: bytes) -> None:
    if name.lower().endswith(IMAGE_SUFFIXES) and not head.startswith(SIGNATURES):
        raise ArchiveError(f"The archive's entry {name!r} is named as an image but is not one (it starts with "
                           f"{head[:8]!r}, not a PNG or JPEG signature); nothing was registered.")


def _zip_members(archive: zipfile.ZipFile, sniff: bool) -> Iterator[tuple[str, str, str, int]]:
    """``(name in the archive, name to write, kind, size)`` of each entry, kind ``dir`` or ``file``, after the
    checks."""
    for info in archive.infolist():
        name = _checked_name(info.filename)
        mode = info.external_attr >> 16
        if stat.S_ISLNK(mode):
            _refuse_link(name, archive.read(info).decode(errors="replace"))
        if info.is_dir():
            yield info.filename, name, "dir", 0
            continue
        if stat.S_IFMT(mode) not in (0, stat.S_IFREG):  # 0: a zip made without Unix file types
            raise ArchiveError(f"The archive's entry {name!r} is not a regular file; nothing was registered.")
        if sniff:
            with archive.open(info) as handle:
                _refuse_non_image(name, handle.read(8))
        yield info.filename, name, "file", info.file_size


def _tar_members(archive: tarfile.TarFile, sniff: bool) -> Iterator[tuple[str, str, str, int]]:
    for member in archive.getmembers():
        name = _checked_name(member.name)
        if member.issym() or member.islnk():
            _refuse_link(name, member.linkname, None if member.issym() else "")
        if member.isdir():
            yield member.name, name, "dir", 0
            continue
        if not member.isfile():
            raise ArchiveError(f"The archive's entry {name!r} is not a regular file; nothing was registered.")
        if sniff:
            handle = archive.extractfile(member)
            _refuse_non_image(name, handle.read(8) if handle else b"")
        yield member.name, name, "file", member.size


def _open(path: Path):
    """The open archive and its member reader, by content (a zip's or a tar's), not by name."""
    if zipfile.is_zipfile(path):
        try:
            return zipfile.ZipFile(path), _zip_members
        except (zipfile.BadZipFile, OSError) as error:
            raise ArchiveError(f"{path.name} is not a readable zip archive: {error}") from None
    try:
        return tarfile.open(path, "r:*"), _tar_members
    except (tarfile.TarError, OSError) as error:
        kind = "zip" if path.name.lower().endswith(".zip") else "tar"
        raise ArchiveError(f"{path.name} is not a readable {kind} archive: {error}") from None


def check(path: Path, limit: int, sniff: bool = True) -> list[tuple[str, str, str, int]]:
    """The archive's entries ``(name in the archive, name to write, kind, size)`` after every check above; :class:`ArchiveError`."""
    handle, members = _open(path)
    with handle:
        try:
            entries = list(members(handle, sniff))
        except (zipfile.BadZipFile, tarfile.TarError, EOFError, OSError) as error:
            raise ArchiveError(f"{path.name} is damaged: {error}") from None
    total = sum(size for *_, size in entries)
    if total > limit:
        raise ArchiveError(f"{path.name} unpacks to {total:,} bytes, over the limit of {limit:,} "
                           f"(NAS_DATASET_MAX_BYTES); nothing was registered.")
    if not any(kind == "file" for _, _, kind, _ in entries):
        raise ArchiveError(f"{path.name} holds no file; nothing was registered.")
    return entries


def unpack(path: Path, dest: Path, limit: int, sniff: bool = True) -> Path:
    """Check the archive (:func:`check`), unpack it into ``dest`` (made; removed again on any failure) and return
    the set's root (:func:`set_root`). ``sniff=False``: no check of the image files' first bytes (a worker
    unpacking the server's archive of a registered set: it holds the corrupt files the registration listed,
    and the digest checks its content)."""
    entries = check(path, limit, sniff)
    dest.mkdir(parents=True)
    try:
        handle, _ = _open(path)
        with handle:
            for original, name, kind, _ in entries:
                if not name:
                    continue
                target = dest / name
                if kind == "dir":
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                zipped = isinstance(handle, zipfile.ZipFile)
                source = handle.open(original) if zipped else handle.extractfile(original)
                with source, open(target, "wb") as out:
                    shutil.copyfileobj(source, out, 1 << 20)
    except BaseException:
        shutil.rmtree(dest, ignore_errors=True)
        raise
    return set_root(dest)


def write_tar(root: Path, target: Path) -> Path:
    """A ``.tar`` at ``target`` of the image files of ``root``'s class folders (as ``class/relative path``): what
    the server sends a worker for a set registered by path (corrupt files too: the digest covers them)."""
    part = target.with_name(target.name + ".part")
    with tarfile.open(part, "w") as archive:
        for classes in data_files.class_folders(root):
            for file in data_files.image_files(classes):
                archive.add(file, arcname=file.relative_to(root).as_posix(), recursive=False)
    part.replace(target)
    return target


def set_root(folder: Path) -> Path:
    """``folder``, or the single folder it holds when that one holds folders itself (a wrapping top folder);
    hidden entries (``.DS_Store``, ``__MACOSX``) do not count."""
    entries = [p for p in folder.iterdir() if not p.name.startswith(".") and p.name != "__MACOSX"]
    if len(entries) == 1 and entries[0].is_dir() and any(p.is_dir() for p in entries[0].iterdir()):
        return entries[0]
    return folder
