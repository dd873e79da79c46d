"""The datasets, loaded once per process and kept on the evaluation's device as tensors: no DataLoader and no
worker processes on the hot path (a batch is an index into a tensor already on the GPU).

- ``digits``: scikit-learn's bundled 8x8 digits (1,797 images; real, offline, the default).
- ``cifar10``: torchvision's on-disk format, ``<NAS_DATA_DIR>/cifar-10-batches-py/data_batch_1..5``.
- ``fashion_mnist``: torchvision's on-disk format, ``<NAS_DATA_DIR>/FashionMNIST/raw/train-images-idx3-ubyte``
  and ``train-labels-idx1-ubyte`` (or the same names with ``.gz``).
  (``catalog.FILES`` lists them; ``catalog.unavailable`` checks them without torch; ``NAS_DATA_DIR`` defaults to
  ``data/`` in the repository.)
- ``synthetic``: class templates plus noise, generated from a fixed seed (learnable, for tests and benchmarks).
- a registered set (``catalog``'s description, a dict): read by ``evaluators.own_split`` (digest checked,
  decoded once per process and kept when it fits ``NAS_DATA_CACHE_MB``, else decoded per batch from disk: then
  ``train_x`` and ``val_x`` are ``evaluators.image_stream.StreamedImages``, which the training loop takes as
  well), split stratified by class with its ``validation_share``; ``augment`` turns on random crops and flips in
  training (``evaluators.augment``).

Only the training files are read: the validation split is carved out of them by the seed, so a search never
sees the test set. CIFAR-10 and Fashion-MNIST are downloaded (by torchvision) only when asked
(``download=True`` or ``NAS_DATA_DOWNLOAD=1``); otherwise a missing file is an error naming the folder.
"""
from __future__ import annotations

import dataclasses
import functools
import gzip
import json
import pickle
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import torch

from evaluators.catalog import RAW_IMAGES, VALIDATION_FRACTION, data_dir, dataset_shape, found_files, missing_message
from evaluators.catalog import is_registered, label
from evaluators.catalog import download_allowed as _download_wanted

SYNTHETIC_IMAGES = 2000


class DatasetMissing(FileNotFoundError):
    """A dataset's files are not in the data folder (and downloading was not asked for)."""


@dataclasses.dataclass(frozen=True)
class DatasetSplit:
    """Normalised float images ``(N, C, H, W)`` and integer labels, on one device, and the per-channel
    ``normalization`` (``mean``, ``std``) that maps the dataset's raw images (``catalog.RAW_IMAGES``) to them."""

    name: str
    train_x: torch.Tensor
    train_y: torch.Tensor
    val_x: torch.Tensor
    val_y: torch.Tensor
    classes: int
    normalization: dict[str, list[float]] = dataclasses.field(default_factory=dict)
    augment: bool = False
    #: How a registered set was loaded (in memory or streamed) and the memory that takes; empty for built-ins.
    loading: str = ""

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.train_x.shape[1:])


__all__ = ["DatasetMissing", "DatasetSplit", "data_dir", "load_dataset", "read_idx", "split_indices"]


def load_digits_arrays() -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_digits

    digits = load_digits()
    return (digits.images[:, None, :, :] / 16.0).astype(np.float32), digits.target.astype(np.int64)


def load_cifar10_arrays(folder: Path, download: bool | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The 50,000 training images of CIFAR-10 from torchvision's python batches (pickled dicts of ``b"data"``,
    uint8 rows of 3,072 values, and ``b"labels"``)."""
    if found_files("cifar10", folder) is None and _download_wanted(download):
        import torchvision

        torchvision.datasets.CIFAR10(str(folder), train=True, download=True)
    batches = found_files("cifar10", folder)
    if batches is None:
        raise DatasetMissing(missing_message("cifar10", folder))
    images, labels = [], []
    for path in batches:
        with open(path, "rb") as handle:
            # The format is a pickle (torchvision reads it the same way); it comes from the operator's data folder.
            batch = pickle.load(handle, encoding="bytes")
        images.append(np.asarray(batch[b"data"], dtype=np.uint8).reshape(-1, 3, 32, 32))
        labels.append(np.asarray(batch[b"labels"], dtype=np.int64))
    return np.concatenate(images).astype(np.float32) / 255.0, np.concatenate(labels)


def read_idx(path: Path) -> np.ndarray:
    """An IDX file (MNIST's format: magic ``0 0 type ndim``, big-endian int32 sizes, then the data), plain or
    gzipped. Only unsigned bytes (type 0x08), the type of the image and label files."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as handle:
        data = handle.read()
    if data[:2] != b"\0\0" or data[2] != 0x08:
        raise ValueError(f"{path} is not an IDX file of unsigned bytes (header {data[:4]!r}).")
    ndim = data[3]
    shape = tuple(int.from_bytes(data[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim))
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(shape)


def load_fashion_mnist_arrays(folder: Path, download: bool | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The 60,000 training images of Fashion-MNIST from torchvision's raw IDX files."""
    if found_files("fashion_mnist", folder) is None and _download_wanted(download):
        import torchvision

        torchvision.datasets.FashionMNIST(str(folder), train=True, download=True)
    paths = found_files("fashion_mnist", folder)
    if paths is None:
        raise DatasetMissing(missing_message("fashion_mnist", folder))
    images, labels = read_idx(paths[0]), read_idx(paths[1])
    return images[:, None, :, :].astype(np.float32) / 255.0, labels.astype(np.int64)


def load_synthetic_arrays(images: int = SYNTHETIC_IMAGES) -> tuple[np.ndarray, np.ndarray]:
    """Smooth class templates plus noise: learnable in an epoch or two, identical in every process."""
    (channels, height, width), classes = dataset_shape("synthetic")
    rng = np.random.default_rng(20240607)
    coarse = rng.normal(size=(classes, channels, height // 4, width // 4))
    templates = coarse.repeat(4, axis=2).repeat(4, axis=3)
    labels = rng.integers(0, classes, size=images)
    x = templates[labels] + rng.normal(scale=1.0, size=(images, channels, height, width))
    return x.astype(np.float32), labels.astype(np.int64)


def _arrays(name: str, folder: Path, download: bool | None) -> tuple[np.ndarray, np.ndarray]:
    if name == "digits":
        return load_digits_arrays()
    if name == "cifar10":
        return load_cifar10_arrays(folder, download)
    if name == "fashion_mnist":
        return load_fashion_mnist_arrays(folder, download)
    if name == "synthetic":
        return load_synthetic_arrays()
    dataset_shape(name)  # raises, naming the known datasets
    raise AssertionError(name)


def split_indices(count: int, fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A seeded permutation cut into (train, validation) indices; at least one image on each side."""
    order = np.random.default_rng(seed).permutation(count)
    held_out = min(max(1, int(round(count * fraction))), count - 1)
    return np.sort(order[held_out:]), np.sort(order[:held_out])


def load_dataset(name: str | Mapping, device: str = "cpu", seed: int = 0, folder: str | None = None,
                 download: bool | None = None) -> DatasetSplit:
    """The train/validation split of ``name`` (a built-in's name or a registered set's description) by
    ``seed``, normalised per channel with the training split's statistics, on ``device``. Cached per process
    (the same arguments return the same tensors)."""
    key = json.dumps(dict(name), sort_keys=True) if is_registered(name) else name
    return _load(key, device, seed, folder, download)


@functools.lru_cache(maxsize=4)
def _load(key: str, device: str, seed: int, folder: str | None, download: bool | None) -> DatasetSplit:
    registered = key.startswith("{")
    name = json.loads(key) if registered else key
    _, classes = dataset_shape(name)
    if registered:
        from evaluators.own_split import split

        own = split(name, seed, device)
        return DatasetSplit(label(name), own.train_x, own.train_y, own.val_x, own.val_y, classes,
                            own.normalization, augment=bool(name.get("augment")), loading=own.note)
    x, y = _arrays(name, data_dir(folder), download)
    train, val = split_indices(len(x), VALIDATION_FRACTION[name], seed)
    scale = RAW_IMAGES[name][0]
    mean = x[train].mean(axis=(0, 2, 3), keepdims=True)
    std = x[train].std(axis=(0, 2, 3), keepdims=True) + 1e-6
    x = (x - mean) / std
    normalization = {"mean": [float(v) * scale for v in mean.ravel()], "std": [float(v) * scale for v in std.ravel()]}

    def put(array: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(np.ascontiguousarray(array)).to(device)

    return DatasetSplit(name, put(x[train]), put(y[train]), put(x[val]), put(y[val]), classes, normalization)
