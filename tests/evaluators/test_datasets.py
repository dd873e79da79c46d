"""Datasets: digits and synthetic in memory; CIFAR-10 and Fashion-MNIST from tiny files written in torchvision's
real on-disk formats (never downloaded)."""
from __future__ import annotations

import gzip
import pickle
import struct

import numpy as np
import pytest
import torch

from evaluators.datasets import DatasetMissing, load_dataset, read_idx


def _cifar_files(root, per_batch=6):
    folder = root / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    rng = np.random.default_rng(0)
    for i in range(1, 6):
        batch = {b"batch_label": f"training batch {i} of 5".encode(), b"labels": [int(v) for v in rng.integers(0, 10, per_batch)],
                 b"data": rng.integers(0, 256, (per_batch, 3072), dtype=np.uint8),
                 b"filenames": [b"x.png"] * per_batch}
        with open(folder / f"data_batch_{i}", "wb") as handle:
            pickle.dump(batch, handle, protocol=2)


def _idx(path, array, compress=False):
    header = struct.pack(">BBBB", 0, 0, 0x08, array.ndim) + b"".join(struct.pack(">I", n) for n in array.shape)
    data = header + array.astype(np.uint8).tobytes()
    (gzip.open if compress else open)(path, "wb").write(data)


def _fashion_files(root, count=20, compress=False):
    raw = root / "FashionMNIST" / "raw"
    raw.mkdir(parents=True)
    rng = np.random.default_rng(1)
    suffix = ".gz" if compress else ""
    _idx(raw / f"train-images-idx3-ubyte{suffix}", rng.integers(0, 256, (count, 28, 28)), compress)
    _idx(raw / f"train-labels-idx1-ubyte{suffix}", rng.integers(0, 10, count), compress)


def test_digits_split_is_deterministic_by_seed():
    a, b, c = (load_dataset("digits", "cpu", seed) for seed in (0, 0, 1))
    assert a is b  # loaded once per process
    assert a.train_x.shape[1:] == (1, 8, 8) and len(a.train_x) + len(a.val_x) == 1797
    assert len(a.val_x) == round(1797 * 0.2)
    assert not torch.equal(a.val_y, c.val_y)
    assert abs(float(a.train_x.mean())) < 1e-4 and a.train_y.dtype == torch.int64


def test_cifar10_reads_torchvision_batches(tmp_path):
    _cifar_files(tmp_path)
    data = load_dataset("cifar10", "cpu", 0, str(tmp_path))
    assert data.train_x.shape == (27, 3, 32, 32) and data.val_x.shape == (3, 3, 32, 32)
    assert data.classes == 10 and torch.isfinite(data.train_x).all()


@pytest.mark.parametrize("compress", [False, True])
def test_fashion_mnist_reads_idx_files(tmp_path, compress):
    _fashion_files(tmp_path, compress=compress)
    data = load_dataset("fashion_mnist", "cpu", 3, str(tmp_path))
    assert data.train_x.shape == (18, 1, 28, 28) and len(data.val_y) == 2
    suffix = ".gz" if compress else ""
    labels = read_idx(tmp_path / "FashionMNIST" / "raw" / f"train-labels-idx1-ubyte{suffix}")
    assert sorted(torch.cat([data.train_y, data.val_y]).tolist()) == sorted(labels.tolist())


@pytest.mark.parametrize("name, expected", [("cifar10", "data_batch_1"), ("fashion_mnist", "train-images-idx3-ubyte")])
def test_missing_files_name_the_folder(tmp_path, name, expected, monkeypatch):
    monkeypatch.delenv("NAS_DATA_DOWNLOAD", raising=False)
    with pytest.raises(DatasetMissing, match=f"not installed: {tmp_path} lacks .*{expected}.*NAS_DATA_DIR.*"
                                             f"NAS_DATA_DOWNLOAD=1"):
        load_dataset(name, "cpu", 0, str(tmp_path / ""))


def test_synthetic_is_the_same_everywhere():
    a = load_dataset("synthetic", "cpu", 0)
    assert a.train_x.shape == (1600, 3, 16, 16)
    from evaluators.datasets import load_synthetic_arrays

    x1, y1 = load_synthetic_arrays()
    x2, y2 = load_synthetic_arrays()
    assert np.array_equal(x1, x2) and np.array_equal(y1, y2) and len(set(y1.tolist())) == 10
