"""A registered folder set decoded per batch from disk, for sets whose decoded images do not fit the worker's
memory budget (``evaluators.own_split`` decides): a ``torch.utils.data.Dataset`` of the image files, read by a
``DataLoader`` with ``NAS_DATA_WORKERS`` worker processes (0: decoded in the training process itself), each image
decoded and fitted as the in-memory path does it (``evaluators.own_data.fit_file``) and normalised with the same
function, so a batch holds the very values the in-memory tensors would.

:class:`StreamedImages` stands in for the ``(N, C, S, S)`` tensor of a split: ``len``, ``shape``, ``device``,
slices (``[a:b]``, ``[rank::world]``: another view, nothing decoded), ``index_select``/``[index]`` (a decoded
batch), and :meth:`StreamedImages.batches`, what ``evaluators.training`` iterates. Memory: one batch per
DataLoader worker in flight (``prefetch_factor`` of 2 each) plus the one being trained on, each ``B x C x S x S x
4`` bytes, and the file list; nothing is kept between batches.
"""
from __future__ import annotations

import logging
import multiprocessing
import os
from collections.abc import Iterator, Sequence

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

from evaluators.own_data import DataSetUnreadable, add_sums, fit_file, normalise, where

log = logging.getLogger(__name__)

#: DataLoader worker processes that decode a streamed set's batches (0: in the training process).
WORKERS_VARIABLE = "NAS_DATA_WORKERS"
#: Batches each DataLoader worker decodes ahead (torch's default).
PREFETCH = 2


def loader_workers() -> int:
    """``NAS_DATA_WORKERS`` (default 0); 0 in a daemonic process (which may not start children)."""
    try:
        workers = max(0, int(os.environ.get(WORKERS_VARIABLE) or 0))
    except ValueError:
        raise ValueError(f"{WORKERS_VARIABLE} must be a whole number of processes (got "
                         f"{os.environ.get(WORKERS_VARIABLE)!r}).") from None
    if workers and multiprocessing.current_process().daemon:
        log.warning("%s=%d ignored: this process is daemonic and may not start DataLoader workers; decoding here",
                    WORKERS_VARIABLE, workers)
        return 0
    return workers


class ImageFiles(Dataset):
    """The set's image files, item ``i`` the ``uint8`` ``(C, S, S)`` image of file ``i`` (``None`` when
    ``tolerant`` and it does not decode; :class:`DataSetUnreadable` otherwise)."""

    def __init__(self, files: Sequence[str], size: int, mode: str, tolerant: bool = False) -> None:
        self.files, self.size, self.mode, self.tolerant = list(files), size, mode, tolerant

    def __len__(self) -> int:
        return len(self.files)

    def __getitem__(self, index: int) -> np.ndarray | None:
        image = fit_file(self.files[index], self.size, self.mode)
        if image is None and not self.tolerant:
            raise DataSetUnreadable(f"{where()}: {self.files[index]} no longer decodes (it did when the set was "
                                    f"first read in this process)")
        return image


class _Normalised:
    """DataLoader's ``collate_fn``: a list of images -> one normalised float32 batch (picklable for workers)."""

    def __init__(self, mean: np.ndarray, std: np.ndarray) -> None:
        self.mean, self.std = mean, std

    def __call__(self, images: list[np.ndarray]) -> torch.Tensor:
        stacked = np.stack(images)
        # Into torch's own (64-byte aligned) memory, as the in-memory tensors are: the CPU kernels' results can
        # depend on the alignment in their last bits, and the two paths are to train to the same network.
        out = torch.empty(stacked.shape, dtype=torch.float32)
        normalise(stacked, self.mean, self.std, out=out.numpy())
        return out


def _sums(images: list[np.ndarray | None]) -> tuple[np.ndarray, np.ndarray]:
    """``collate_fn`` of the first pass: which images decoded, and their :func:`own_data.add_sums`."""
    good = np.asarray([image is not None for image in images])
    decoded = [image for image in images if image is not None]
    sums = add_sums(np.stack(decoded)) if decoded else np.zeros((0, 2, 0), dtype=np.int64)
    return good, sums


def first_pass(files: ImageFiles, batch: int = 32) -> tuple[np.ndarray, np.ndarray]:
    """Every file decoded once (by the DataLoader's workers), nothing kept but: which decode (a mask) and the
    integer sums of each one that does (``(G, 2, C)``), from which any split's statistics follow."""
    loader = DataLoader(files, batch_size=batch, num_workers=loader_workers(), collate_fn=_sums)
    masks, sums = zip(*loader) if len(files) else ((), ())
    good = np.concatenate(masks) if masks else np.zeros(0, dtype=bool)
    found = [s for s in sums if len(s)]
    return good, (np.concatenate(found) if found else np.zeros((0, 2, 1), dtype=np.int64))


class StreamedImages:
    """Rows ``rows`` of ``files``, decoded and normalised per batch on ``device`` (see the module's docstring)."""

    def __init__(self, files: ImageFiles, rows: np.ndarray, channels: int, mean: np.ndarray, std: np.ndarray,
                 device: str | torch.device) -> None:
        self.files, self.rows, self.channels = files, np.asarray(rows, dtype=np.int64), channels
        self.mean, self.std, self._device = mean, std, torch.device(device)

    def __len__(self) -> int:
        return len(self.rows)

    @property
    def shape(self) -> torch.Size:
        return torch.Size((len(self.rows), self.channels, self.files.size, self.files.size))

    @property
    def device(self) -> torch.device:
        return self._device

    def __getitem__(self, index: slice | torch.Tensor | np.ndarray) -> StreamedImages | torch.Tensor:
        if isinstance(index, slice):
            return StreamedImages(self.files, self.rows[index], self.channels, self.mean, self.std, self._device)
        return self.index_select(0, index)

    def index_select(self, dim: int, index: torch.Tensor | np.ndarray) -> torch.Tensor:
        """The images at ``index`` decoded into one batch (as a tensor's ``index_select(0, index)``)."""
        if dim != 0:
            raise ValueError("a streamed set is indexed along its first dimension only")
        return next(self.batches([index]))

    def _positions(self, pick: slice | torch.Tensor | np.ndarray) -> list[int]:
        if isinstance(pick, slice):
            return self.rows[pick].tolist()
        picked = pick.cpu().numpy() if isinstance(pick, torch.Tensor) else np.asarray(pick)
        return self.rows[picked].tolist()

    def batches(self, picks: Sequence[slice | torch.Tensor | np.ndarray]) -> Iterator[torch.Tensor]:
        """One decoded, normalised batch on the device per pick (a slice or indices of this view), in order."""
        workers = loader_workers()
        loader = DataLoader(self.files, batch_sampler=[self._positions(p) for p in picks], num_workers=workers,
                            collate_fn=_Normalised(self.mean, self.std), pin_memory=self._device.type == "cuda",
                            prefetch_factor=PREFETCH if workers else None)
        for batch in loader:
            yield batch.to(self._device, non_blocking=True)

    def batch_bytes(self, batch: int) -> int:
        """The most bytes of decoded batches held at once with ``batch`` images each (see the module's docstring)."""
        in_flight = 1 + loader_workers() * PREFETCH
        return in_flight * batch * self.channels * self.files.size ** 2 * 4
