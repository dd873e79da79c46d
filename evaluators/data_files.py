"""A user's own data set on disk, read without torch: the web server scans it when it is registered
(:func:`scan`), a worker checks it has the same files before training on it (:func:`digest`).

Two formats:

- ``folder``: one sub-folder per class (``torchvision.datasets.ImageFolder``'s convention), PNG or JPEG images
  in each (``.png``, ``.jpg``, ``.jpeg``, any case; other files are ignored). The class names are the folder
  names, sorted.
- ``npz``: a NumPy ``.npz`` file with ``x`` of shape ``(N, H, W)`` or ``(N, H, W, C)`` (C 1 or 3) and ``y``, N
  integer labels; the class names are the labels, sorted.

Every image is opened and checked with Pillow (``Image.verify`` and a full decode); one that fails (a text file
named ``.png``, a truncated JPEG) is listed as corrupt and skipped. Channels: 1 for grey images (modes ``1``,
``L``, ``LA``, ``I``, ``F``...), 3 for colour ones (``RGB``, ``RGBA``, ``P``, ``CMYK``...; alpha is dropped). A
set whose images mix the two is refused, never converted silently. The content digest is SHA-256 over the
sorted relative paths and bytes of every image file (corrupt ones too, so a repaired file changes it); for an
``npz``, over the file's bytes.
"""
from __future__ import annotations

import dataclasses
import hashlib
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg")
#: Pillow modes read as one channel; every other mode is read as three (RGB, alpha dropped).
GREY_MODES = ("1", "L", "LA", "La", "I", "I;16", "I;16B", "I;16L", "I;16N", "F")


class ScanError(ValueError):
    """A data set that cannot be trained on, with the reason (nothing is registered)."""


@dataclasses.dataclass(frozen=True)
class Scan:
    """What a scan found: the class names and their image counts, the image sizes (``"WxH"`` -> count), the
    channel count, the corrupt files skipped (relative paths), and the content digest."""

    kind: str
    classes: list[str]
    counts: list[int]
    sizes: dict[str, int]
    channels: int
    corrupt: list[str]
    digest: str

    @property
    def images(self) -> int:
        return sum(self.counts)

    @property
    def imbalance(self) -> float:
        """The largest class's image count over the smallest's (1.0: balanced)."""
        return max(self.counts) / min(self.counts)

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "images": self.images, "imbalance": round(self.imbalance, 3)}


def kind_of(path: Path) -> str:
    """``folder`` for a directory, ``npz`` for a ``.npz`` file; :class:`ScanError` otherwise."""
    if path.is_dir():
        return "folder"
    if path.is_file() and path.suffix.lower() == ".npz":
        return "npz"
    if not path.exists():
        raise ScanError(f"{path} does not exist (or cannot be read here).")
    raise ScanError(f"{path} is neither a folder of class folders nor a .npz file.")


def class_folders(root: Path) -> list[Path]:
    """The class folders of ``root``, sorted by name (hidden ones skipped)."""
    return sorted((p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")), key=lambda p: p.name)


def image_files(folder: Path) -> list[Path]:
    """The image files of one class folder, sorted (in sub-folders too, as ImageFolder reads them)."""
    return sorted(p for p in folder.rglob("*") if p.suffix.lower() in IMAGE_SUFFIXES and p.is_file()
                  and not any(part.startswith(".") for part in p.relative_to(folder).parts))


def digest(path: str | Path, kind: str) -> str:
    """The content digest of the set at ``path`` (see the module's docstring); ``OSError`` when unreadable."""
    path = Path(path)
    sha = hashlib.sha256()
    if kind == "npz":
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                sha.update(block)
        return sha.hexdigest()
    for folder in class_folders(path):
        for file in image_files(folder):
            sha.update(file.relative_to(path).as_posix().encode() + b"\0")
            sha.update(file.read_bytes())
    return sha.hexdigest()


def channels_of(mode: str) -> int:
    return 1 if mode in GREY_MODES else 3


def _check_image(file: Path, root: Path) -> tuple[int, int, int]:
    """``(width, height, channels)`` of one image; ``ValueError``/``OSError`` when it is not a readable one."""
    if not file.resolve().is_relative_to(root):
        raise ValueError("a link out of the data set")
    from PIL import Image

    with Image.open(file) as image:
        image.verify()
    with Image.open(file) as image:  # verify() leaves the image unusable; a full decode catches truncated data
        image.load()
        return image.size[0], image.size[1], channels_of(image.mode)


def _refuse_classes(classes: list[str], counts: list[int], where: str) -> None:
    if len(classes) < 2:
        raise ScanError(f"{where} has {len(classes)} class{'es' if len(classes) != 1 else ''} "
                        f"({', '.join(classes) or 'none'}); a classifier needs two at least.")
    empty = [name for name, count in zip(classes, counts) if count == 0]
    if empty:
        raise ScanError(f"{where}: the class{'es' if len(empty) > 1 else ''} {', '.join(empty)} "
                        f"{'have' if len(empty) > 1 else 'has'} no readable image.")


def _refuse_mixed(channels: Counter, examples: dict[int, str], where: str) -> None:
    if len(channels) > 1:
        found = ", ".join(f"{count} with {c} channel{'s' if c > 1 else ''} (e.g. {examples[c]})"
                          for c, count in sorted(channels.items()))
        raise ScanError(f"{where} mixes grey and colour images: {found}. Convert them to one kind first; they are "
                        f"not converted silently.")


def scan_folder(path: Path) -> Scan:
    root = path.resolve()
    classes = [folder.name for folder in class_folders(root)]
    counts, sizes, channels, examples, corrupt = [], Counter(), Counter(), {}, []
    for name in classes:
        good = 0
        for file in image_files(root / name):
            relative = file.relative_to(root).as_posix()
            try:
                width, height, channel = _check_image(file, root)
            except Exception as error:  # noqa: BLE001 - Pillow raises many kinds for a bad file
                corrupt.append(f"{relative} ({type(error).__name__}: {str(error)[:120]})")
                continue
            good += 1
            sizes[f"{width}x{height}"] += 1
            channels[channel] += 1
            examples.setdefault(channel, relative)
        counts.append(good)
    _refuse_classes(classes, counts, str(path))
    _refuse_mixed(channels, examples, str(path))
    return Scan("folder", classes, counts, dict(sizes.most_common()), next(iter(channels)), corrupt,
                digest(root, "folder"))


def read_npz(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """``x`` as ``(N, H, W, C)`` and ``y`` as integers; :class:`ScanError` naming what is wrong."""
    try:
        with np.load(path, allow_pickle=False) as data:
            if "x" not in data or "y" not in data:
                raise ScanError(f"{path} must hold arrays named x and y (it holds {', '.join(data.files)}).")
            x, y = data["x"], data["y"]
    except (OSError, ValueError) as error:
        if isinstance(error, ScanError):
            raise
        raise ScanError(f"{path} is not a readable .npz file: {error}") from None
    if x.ndim == 3:
        x = x[..., None]
    if x.ndim != 4 or x.shape[-1] not in (1, 3):
        raise ScanError(f"{path}: x must be (N, H, W) or (N, H, W, C) with C 1 or 3 (got shape {x.shape}).")
    if y.ndim != 1 or len(y) != len(x) or not np.issubdtype(y.dtype, np.integer):
        raise ScanError(f"{path}: y must be {len(x)} integer labels (got shape {y.shape}, dtype {y.dtype}).")
    if not (np.issubdtype(x.dtype, np.integer) or np.issubdtype(x.dtype, np.floating)):
        raise ScanError(f"{path}: x must hold numbers (got dtype {x.dtype}).")
    return x, y


def scan_npz(path: Path) -> Scan:
    x, y = read_npz(path)
    labels, counts = np.unique(y, return_counts=True)
    classes = [str(int(label)) for label in labels]
    _refuse_classes(classes, [int(c) for c in counts], str(path))
    return Scan("npz", classes, [int(c) for c in counts], {f"{x.shape[2]}x{x.shape[1]}": len(x)}, int(x.shape[-1]),
                [], digest(path, "npz"))


def scan(path: str | Path) -> Scan:
    """Scan the set at ``path`` (a folder of class folders or a ``.npz``); :class:`ScanError` when it cannot be
    trained on: fewer than two classes, a class without a readable image, grey and colour images mixed."""
    path = Path(path)
    return scan_folder(path) if kind_of(path) == "folder" else scan_npz(path)
