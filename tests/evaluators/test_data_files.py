"""A user's own data set on disk: the scan at registration (counts, sizes, channels, corrupt files, digest,
refusals) and the worker's loading (digest checked, images fitted to the input size, stratified split)."""
from __future__ import annotations

import numpy as np
import pytest

from evaluators import catalog, data_files
from tests.evaluators.digit_folders import write_digit_folders, write_digit_npz


def test_scan_of_class_folders(tmp_path):
    root = write_digit_folders(tmp_path / "digits", per_class=9)
    found = data_files.scan(root)
    assert found.kind == "folder" and found.classes == [f"digit_{k}" for k in range(10)]
    assert found.counts == [9] * 10 and found.channels == 1
    assert found.sizes == {"8x8": 60, "12x12": 30}
    assert len(found.corrupt) == 1 and found.corrupt[0].startswith("digit_0/broken.png (")
    assert found.digest == data_files.digest(root, "folder") and found.imbalance == 1.0
    (root / "digit_3" / "0001.png").write_bytes((root / "digit_3" / "0002.png").read_bytes())
    assert data_files.digest(root, "folder") != found.digest  # a changed file changes the digest


def test_scan_of_npz(tmp_path):
    found = data_files.scan(write_digit_npz(tmp_path / "digits.npz", per_class=5))
    assert found.kind == "npz" and found.classes == [str(k) for k in range(10)] and found.counts == [5] * 10
    assert found.sizes == {"8x8": 50} and found.channels == 1 and found.corrupt == []


@pytest.mark.parametrize("make, message", [
    (lambda root: write_digit_folders(root, classes=(4,), per_class=3), "a classifier needs two"),
    (lambda root: (write_digit_folders(root, classes=(1, 2), per_class=3), (root / "digit_9").mkdir()),
     "digit_9 has no readable image"),
    (lambda root: (write_digit_folders(root, classes=(1, 2), per_class=3, corrupt=False),
                   (root / "digit_7").mkdir(), (root / "digit_7" / "a.png").write_text("text")),
     "digit_7 has no readable image"),
    (lambda root: write_digit_folders(root, classes=(1, 2), per_class=3, rgb_class=2), "mixes grey and colour"),
])
def test_scan_refusals(tmp_path, make, message):
    root = tmp_path / "set"
    make(root)
    with pytest.raises(data_files.ScanError, match=message):
        data_files.scan(root)


def test_scan_refuses_other_files(tmp_path):
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(data_files.ScanError, match="neither a folder"):
        data_files.scan(tmp_path / "notes.txt")
    np.savez(tmp_path / "bad.npz", images=np.zeros((2, 4, 4)))
    with pytest.raises(data_files.ScanError, match="arrays named x and y"):
        data_files.scan(tmp_path / "bad.npz")


def spec_of(root, found, size=16, share=0.25, augment=False):
    return {"name": "mine", "kind": found.kind, "path": str(root), "digest": found.digest, "classes": found.classes,
            "channels": found.channels, "input_size": size, "validation_share": share, "augment": augment}


def test_worker_loads_the_registered_folder(tmp_path):
    from evaluators.datasets import load_dataset

    root = write_digit_folders(tmp_path / "digits", per_class=12)
    spec = spec_of(root, data_files.scan(root))
    assert catalog.dataset_shape(spec) == ((1, 16, 16), 10) and catalog.unavailable(spec) is None
    data = load_dataset(spec, "cpu", 3)
    assert tuple(data.train_x.shape[1:]) == (1, 16, 16) and len(data.train_x) + len(data.val_x) == 120
    assert np.bincount(data.val_y.numpy()).tolist() == [3] * 10  # stratified: a quarter of every class
    assert data.normalization["mean"][0] > 0 and data.classes == 10 and data.name == "mine"
    again = load_dataset(dict(spec), "cpu", 4)
    assert not np.array_equal(again.val_y.numpy(), data.val_y.numpy()) or \
        not np.array_equal(again.val_x.numpy(), data.val_x.numpy())  # another seed, another split


def test_worker_refuses_a_changed_or_missing_set(tmp_path):
    from evaluators.own_data import DataSetUnreadable, decoded

    root = write_digit_folders(tmp_path / "digits", classes=(1, 2), per_class=4)
    spec = spec_of(root, data_files.scan(root))
    (root / "digit_1" / "0000.png").unlink()
    with pytest.raises(DataSetUnreadable, match=r"worker .*: the data set at .*digits is not the one registered"):
        decoded(spec["kind"], spec["path"], spec["digest"], tuple(spec["classes"]), 1, 16)
    with pytest.raises(DataSetUnreadable, match=r"worker .* cannot read the data set at .*nowhere"):
        decoded("npz", str(tmp_path / "nowhere.npz"), spec["digest"], ("1", "2"), 1, 16)
    assert "does not exist" in catalog.unavailable({**spec, "path": str(tmp_path / "nowhere")})


def test_worker_loads_an_npz_resized(tmp_path):
    from evaluators.own_data import registered_arrays

    path = write_digit_npz(tmp_path / "d.npz", per_class=3)
    x, y = registered_arrays(spec_of(path, data_files.scan(path), size=8))
    assert x.shape == (30, 1, 8, 8) and 0 <= x.min() and x.max() <= 1 and sorted(set(y.tolist())) == list(range(10))
    x, _ = registered_arrays(spec_of(path, data_files.scan(path), size=20))
    assert x.shape == (30, 1, 20, 20)


def test_augmentation_keeps_the_shape_and_changes_the_images():
    import torch

    from evaluators.augment import augment_batch

    x = torch.rand(16, 3, 12, 12)
    out = augment_batch(x, torch.Generator().manual_seed(0))
    assert out.shape == x.shape and not torch.equal(out, x)
    assert torch.equal(augment_batch(x, torch.Generator().manual_seed(0)), out)  # reproducible by the seed
