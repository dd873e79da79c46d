"""A registered data set (``evaluators.catalog``'s description: path, digest, classes, input size...) read on
a worker: its digest checked against the registered one, its images decoded once per process and kept.

- ``folder``: every image of every class folder opened with Pillow, converted to ``L`` (one channel) or ``RGB``
  (three), fitted to ``input_size`` x ``input_size`` with ``PIL.ImageOps.fit`` (resized so the shorter side is
  ``input_size``, bilinear, then centre cropped: torchvision's ``Resize`` then ``CenterCrop``); an image that
  does not open is skipped, as the registration's scan listed it.
- ``npz``: ``x`` and ``y`` read with NumPy; images of another size are resized the same way; ``uint8`` values
  are divided by 255, others taken as they are.

Memory: the decoded set is kept per worker process as ``uint8`` (N*C*S*S bytes, S the input size; floats for
an ``npz`` of floats), cached by digest and size, and the split's float32 tensors take N*C*S*S*4 bytes on the
evaluation's device: 10,000 RGB images at 64x64 are 492 MB of floats (123 MB of bytes; loading briefly holds
two more float copies on the CPU). Sets larger than memory are not supported
this round (there is no per-batch decoding).
"""
from __future__ import annotations

import functools
import os
import socket
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from evaluators import data_files


class DataSetUnreadable(OSError):
    """The registered set cannot be read on this worker, or is not the set that was registered."""


def where() -> str:
    """This worker, as failure messages name it: its node (``NAS_NODE``, as the nodes page names it), and its
    host when that differs."""
    host = socket.gethostname()
    node = os.environ.get("NAS_NODE") or host
    return f"worker {node}" + (f" (host {host})" if node != host else "")


def _fit(image: Any, size: int, mode: str) -> np.ndarray:
    from PIL import Image, ImageOps

    image = ImageOps.fit(image.convert(mode), (size, size), method=Image.Resampling.BILINEAR)
    array = np.asarray(image, dtype=np.uint8)
    return array[None] if array.ndim == 2 else array.transpose(2, 0, 1)


def _read_folder(path: Path, classes: tuple[str, ...], channels: int, size: int) -> tuple[np.ndarray, np.ndarray]:
    from PIL import Image

    mode = "L" if channels == 1 else "RGB"
    images, labels = [], []
    for label, name in enumerate(classes):
        folder = path / name
        if not folder.is_dir():
            raise DataSetUnreadable(f"{where()}: {folder} is missing (the class {name!r} was registered).")
        for file in data_files.image_files(folder):
            try:
                with Image.open(file) as image:
                    images.append(_fit(image, size, mode))
            except Exception:  # noqa: BLE001 - corrupt files were listed at registration and are skipped
                continue
            labels.append(label)
    return np.stack(images), np.asarray(labels, dtype=np.int64)


def _read_npz(path: Path, classes: tuple[str, ...], size: int) -> tuple[np.ndarray, np.ndarray]:
    from PIL import Image

    x, y = data_files.read_npz(path)
    index = {name: label for label, name in enumerate(classes)}
    labels = np.asarray([index[str(int(v))] for v in y], dtype=np.int64)
    if x.shape[1:3] != (size, size):
        mode = "L" if x.shape[-1] == 1 else "RGB"
        scale = 255.0 / max(float(x.max()), 1e-12) if x.dtype != np.uint8 else 1.0
        pixels = np.clip(x * scale, 0, 255).astype(np.uint8)
        x = np.stack([_fit(Image.fromarray(p[..., 0] if p.shape[-1] == 1 else p), size, mode) for p in pixels])
        return x, labels
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2)), labels


@functools.lru_cache(maxsize=2)
def decoded(kind: str, path: str, digest: str, classes: tuple[str, ...], channels: int,
            size: int) -> tuple[np.ndarray, np.ndarray]:
    """Images ``(N, C, S, S)`` (``uint8`` for images, values 0..255) and labels of the registered set, its digest
    checked first; cached per process by digest and size. :class:`DataSetUnreadable` naming this worker and the
    path when the path cannot be read here or holds other files than were registered."""
    try:
        found = data_files.digest(path, kind)
    except OSError as error:
        raise DataSetUnreadable(f"{where()} cannot read the data set at {path}: {error}") from None
    if found != digest:
        raise DataSetUnreadable(f"{where()}: the data set at {path} is not the one registered (digest "
                                f"{found[:12]}, registered {digest[:12]}): its files changed since registration.")
    if kind == "npz":
        return _read_npz(Path(path), classes, size)
    return _read_folder(Path(path), classes, channels, size)


def stratified_split(labels: np.ndarray, share: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(train, validation) indices: ``share`` of each class held out (at least one image where a class has two
    or more), drawn by ``seed``."""
    rng = np.random.default_rng(seed)
    train, val = [], []
    for label in np.unique(labels):
        members = rng.permutation(np.flatnonzero(labels == label))
        held = min(max(1, int(round(len(members) * share))), len(members) - 1) if len(members) > 1 else 0
        val.append(members[:held])
        train.append(members[held:])
    return np.sort(np.concatenate(train)), np.sort(np.concatenate(val))


def registered_arrays(spec: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """The set as float32 images in [0, 1] (uint8 sources) and labels."""
    x, y = decoded(spec["kind"], spec["path"], spec["digest"], tuple(spec["classes"]), int(spec["channels"]),
                   int(spec["input_size"]))
    return (x.astype(np.float32) / 255.0 if x.dtype == np.uint8 else x.astype(np.float32)), y
