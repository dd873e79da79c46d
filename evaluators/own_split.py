"""A registered set's train/validation split on a worker, kept decoded in memory when it fits the budget, else
decoded per batch from disk.

- **in memory** (an ``npz``, or a folder whose decoded split fits ``NAS_DATA_CACHE_MB``, default 1024 MB per
  worker process): the images are decoded once per process and kept as ``uint8`` (``N x C x S x S`` bytes,
  ``evaluators.own_data.decoded``, by digest and size) and the split as normalised ``float32`` tensors on the
  evaluation's device (``N x C x S x S x 4`` bytes), filled chunk by chunk, so the estimate ``N x C x S x S x 5``
  bytes is the most it takes.
- **streamed** (a folder past the budget): nothing of the images is kept; ``evaluators.image_stream`` decodes
  each batch (with ``NAS_DATA_WORKERS`` DataLoader processes). A first pass decodes every file once to learn
  which decode and the per-channel sums (kept per process by digest and size, a few numbers per image); every
  epoch then decodes each image again. Memory: the batches in flight (``image_stream``) and the file list.

Both give the same split (stratified by the seed over the images that decode) and the same normalised values,
so a search trains to the same weights either way. ``note`` says which was used and its memory, for the
evaluation's metrics (``data_loading``) and the worker's log.
"""
from __future__ import annotations

import dataclasses
import functools
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

from evaluators import data_files
from evaluators.image_stream import WORKERS_VARIABLE, ImageFiles, StreamedImages, first_pass, loader_workers
from evaluators.own_data import (DataSetUnreadable, add_sums, channel_stats, check_digest, decoded, folder_files,
                                 mode_of, normalise, stratified_split, where)

log = logging.getLogger(__name__)

#: The worker's budget, in MB, for a registered set's decoded images kept in memory (per process).
CACHE_VARIABLE = "NAS_DATA_CACHE_MB"
DEFAULT_CACHE_MB = 1024
#: Bytes kept in memory per decoded value: one ``uint8`` and one ``float32``.
BYTES_PER_VALUE = 5
#: Values summed or normalised at once when the in-memory tensors are filled (8 MB of int64 sums at most).
CHUNK_VALUES = 1 << 20


@dataclasses.dataclass(frozen=True)
class OwnSplit:
    train_x: torch.Tensor | StreamedImages
    train_y: torch.Tensor
    val_x: torch.Tensor | StreamedImages
    val_y: torch.Tensor
    normalization: dict[str, list[float]]
    note: str


def cache_budget_bytes() -> int:
    """``NAS_DATA_CACHE_MB`` in bytes (default 1024 MB); a clear error when it is no number."""
    raw = os.environ.get(CACHE_VARIABLE) or str(DEFAULT_CACHE_MB)
    try:
        megabytes = float(raw)
    except ValueError:
        raise ValueError(f"{CACHE_VARIABLE} must be a number of megabytes (got {raw!r}).") from None
    return int(megabytes * 1e6)


def in_memory_bytes(images: int, channels: int, size: int) -> int:
    """What keeping ``images`` decoded images and their float split takes (see the module's docstring)."""
    return images * channels * size * size * BYTES_PER_VALUE


def _megabytes(count: int) -> str:
    return f"{count / 1e6:,.1f} MB"


def over_budget(spec: Mapping[str, Any]) -> str | None:
    """Why the folder set ``spec`` is streamed (its decoded size over the budget), ``None`` to keep it in memory
    (an ``npz`` always is)."""
    if spec["kind"] != "folder":
        return None
    try:
        files, _ = folder_files(Path(spec["path"]), tuple(spec["classes"]))
    except OSError as error:
        raise DataSetUnreadable(f"{where()} cannot read the data set at {spec['path']}: {error}") from None
    needed = in_memory_bytes(len(files), int(spec["channels"]), int(spec["input_size"]))
    budget = cache_budget_bytes()
    return f"{_megabytes(needed)} decoded, over {CACHE_VARIABLE}'s {_megabytes(budget)}" if needed > budget else None


def split(spec: Mapping[str, Any], seed: int, device: str) -> OwnSplit:
    """The registered set ``spec``'s split by ``seed`` on ``device``, in memory or streamed (module docstring)."""
    why = over_budget(spec)
    return _streamed(spec, seed, device, why) if why else _in_memory(spec, seed, device)


def whole(spec: Mapping[str, Any], normalization: Mapping[str, list[float]],
          device: str) -> tuple[torch.Tensor | StreamedImages, torch.Tensor]:
    """Every image of ``spec`` (a held-out set), normalised with another set's ``normalization``, in memory or
    streamed as :func:`split` would, and the labels."""
    mean = np.asarray(normalization["mean"], dtype=np.float32).reshape(1, -1, 1, 1)
    std = np.asarray(normalization["std"], dtype=np.float32).reshape(1, -1, 1, 1)
    if over_budget(spec):
        files, y, _ = _first_pass(spec["path"], spec["digest"], tuple(spec["classes"]), int(spec["channels"]),
                                  int(spec["input_size"]))
        return StreamedImages(files, np.arange(len(y)), int(spec["channels"]), mean, std, device), \
            torch.from_numpy(y).to(device)
    x, y = decoded(spec["kind"], spec["path"], spec["digest"], tuple(spec["classes"]), int(spec["channels"]),
                   int(spec["input_size"]))
    if x.dtype == np.uint8:
        images = _rows_normalised(x, np.arange(len(y)), mean, std, device)
    else:
        images = torch.from_numpy(np.ascontiguousarray((x - mean) / std, dtype=np.float32)).to(device)
    return images, torch.from_numpy(y).to(device)


def _rows_normalised(x: np.ndarray, rows: np.ndarray, mean: np.ndarray, std: np.ndarray,
                     device: str) -> torch.Tensor:
    """``normalise(x[rows])`` on ``device``, made a chunk at a time (no full float copy on the side)."""
    out = torch.empty((len(rows), *x.shape[1:]), dtype=torch.float32, device=device)
    step = max(1, CHUNK_VALUES // max(1, int(np.prod(x.shape[1:]))))
    for start in range(0, len(rows), step):
        out[start:start + step] = torch.from_numpy(normalise(x[rows[start:start + step]], mean, std))
    return out


def _in_memory(spec: Mapping[str, Any], seed: int, device: str) -> OwnSplit:
    x, y = decoded(spec["kind"], spec["path"], spec["digest"], tuple(spec["classes"]), int(spec["channels"]),
                   int(spec["input_size"]))
    train, val = stratified_split(y, float(spec["validation_share"]), seed)
    if x.dtype == np.uint8:
        step = max(1, CHUNK_VALUES // x[0].size)
        sums = sum(add_sums(x[train[i:i + step]]).sum(axis=0) for i in range(0, len(train), step))
        mean, std = channel_stats(sums, len(train) * x.shape[2] * x.shape[3])

        def put(rows: np.ndarray) -> torch.Tensor:
            return _rows_normalised(x, rows, mean, std, device)
    else:  # an npz of floats: taken as it is
        mean = x[train].mean(axis=(0, 2, 3), keepdims=True)
        std = x[train].std(axis=(0, 2, 3), keepdims=True) + 1e-6

        def put(rows: np.ndarray) -> torch.Tensor:
            return torch.from_numpy(np.ascontiguousarray((x[rows] - mean) / std, dtype=np.float32)).to(device)
    note = (f"decoded in memory: {_megabytes(x.nbytes)} of images kept per worker process and "
            f"{_megabytes(x[0].size * len(y) * 4)} of float32 split on {device}")
    log.info("data set %s: %s", spec["name"], note)
    labels = torch.from_numpy(y)
    return OwnSplit(put(train), labels[train].to(device), put(val), labels[val].to(device),
                    {"mean": [float(v) for v in mean.ravel()], "std": [float(v) for v in std.ravel()]}, note)


@functools.lru_cache(maxsize=4)
def _first_pass(path: str, digest: str, classes: tuple[str, ...], channels: int,
                size: int) -> tuple[ImageFiles, np.ndarray, np.ndarray]:
    """The files that decode, their labels and sums; the digest checked first."""
    check_digest("folder", path, digest)
    files, labels = folder_files(Path(path), classes)
    good, sums = first_pass(ImageFiles(files, size, mode_of(channels), tolerant=True))
    kept = [file for file, ok in zip(files, good) if ok]
    return ImageFiles(kept, size, mode_of(channels)), labels[good], sums


def _streamed(spec: Mapping[str, Any], seed: int, device: str, why: str) -> OwnSplit:
    size, channels = int(spec["input_size"]), int(spec["channels"])
    files, y, sums = _first_pass(spec["path"], spec["digest"], tuple(spec["classes"]), channels, size)
    if not len(files):
        raise data_files.ScanError(f"{where()}: no image of {spec['path']} decodes")
    train, val = stratified_split(y, float(spec["validation_share"]), seed)
    mean, std = channel_stats(sums[train].sum(axis=0), len(train) * size * size)
    labels = torch.from_numpy(y)
    train_x = StreamedImages(files, train, channels, mean, std, device)
    workers = loader_workers()
    by = f"{workers} DataLoader worker process(es)" if workers else f"the training process ({WORKERS_VARIABLE}=0)"
    note = (f"streamed from disk ({why}): decoded per batch by {by}, {_megabytes(train_x.batch_bytes(256))} of "
            f"batches in flight at batch size 256, nothing kept")
    log.info("data set %s: %s", spec["name"], note)
    return OwnSplit(train_x, labels[train].to(device), StreamedImages(files, val, channels, mean, std, device),
                    labels[val].to(device), {"mean": [float(v) for v in mean.ravel()],
                                             "std": [float(v) for v in std.ravel()]}, note)
