"""A registered folder set kept decoded in memory or, past ``NAS_DATA_CACHE_MB``, decoded per batch from disk:
the same split, the same normalised images, the same trained network; and the streamed path holds no more than a
few batches of decoded images (counted with tracemalloc: the decoding is NumPy's, whose buffers it traces)."""
from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
import torch

from evaluators import data_files, own_split
from evaluators.budget import TrainingBudget
from evaluators.evaluate import evaluate
from evaluators.image_stream import StreamedImages
from tests.evaluators.digit_folders import write_digit_folders

@pytest.fixture()
def digit_set(tmp_path):
    root = write_digit_folders(tmp_path / "digits", per_class=40)
    found = data_files.scan(root)
    return {"name": "mine", "kind": "folder", "path": str(root), "digest": found.digest, "classes": found.classes,
            "channels": 1, "input_size": 16, "validation_share": 0.25, "augment": True}


def both(spec, monkeypatch, seed=5):
    """The split in memory and streamed (the budget 0 MB forces streaming)."""
    monkeypatch.setenv("NAS_DATA_CACHE_MB", "1024")
    kept = own_split.split(spec, seed, "cpu")
    monkeypatch.setenv("NAS_DATA_CACHE_MB", "0")
    streamed = own_split.split(spec, seed, "cpu")
    return kept, streamed


def test_streamed_split_equals_the_in_memory_one(digit_set, monkeypatch):
    kept, streamed = both(digit_set, monkeypatch)
    assert isinstance(kept.train_x, torch.Tensor) and isinstance(streamed.train_x, StreamedImages)
    assert kept.note.startswith("decoded in memory") and streamed.note.startswith("streamed from disk")
    assert "NAS_DATA_CACHE_MB" in streamed.note
    assert streamed.train_x.shape == kept.train_x.shape and len(streamed.val_x) == len(kept.val_x) == 100
    assert torch.equal(kept.train_y, streamed.train_y) and kept.normalization == streamed.normalization
    picks = [slice(0, 64), torch.tensor([5, 1, 250, 3]), slice(64, None)]
    for pick, batch in zip(picks, streamed.train_x.batches(picks)):
        expected = kept.train_x[pick] if isinstance(pick, slice) else kept.train_x.index_select(0, pick)
        assert torch.equal(batch, expected)  # bit for bit: the same decoding and normalisation
    assert torch.equal(streamed.val_x[::3].index_select(0, torch.tensor([0, 7])), kept.val_x[::3][[0, 7]])


def test_a_search_trains_to_the_same_network_either_way(digit_set, tmp_path, monkeypatch):
    """The same curve and fitness, and the same held-out score (the held-out set read in memory or streamed)."""
    from tests.evaluators.conftest import TINY

    genome, space = TINY["chain"]
    held = write_digit_folders(tmp_path / "held", per_class=10, skip=40)
    found = data_files.scan(held)
    spec = {**digit_set, "held_out": {"name": "held", "kind": "folder", "path": str(held), "digest": found.digest,
                                      "classes": found.classes, "channels": 1}}
    training = {"epochs": 2, "batch_size": 32, "seed": 3}
    monkeypatch.setenv("NAS_DATA_CACHE_MB", "1024")
    kept = evaluate(genome, space, training, spec, "cpu")
    monkeypatch.setenv("NAS_DATA_CACHE_MB", "0")
    streamed = evaluate(genome, space, training, {**spec, "name": "mine-streamed"}, "cpu")
    assert kept.ok and streamed.ok, (kept.message, streamed.message)
    assert kept.metrics["data_loading"].startswith("decoded in memory")
    assert streamed.metrics["data_loading"].startswith("streamed from disk")
    assert streamed.fitness == kept.fitness and streamed.curve == kept.curve  # the same batches, the same steps
    assert streamed.normalization == kept.normalization
    assert kept.metrics["held_out_images"] == streamed.metrics["held_out_images"] == 100  # the corrupt one skipped
    assert streamed.metrics["held_out_accuracy"] == kept.metrics["held_out_accuracy"]


def test_streaming_holds_a_few_batches_not_the_set(tmp_path, monkeypatch):
    """1,500 images at 32x32: 1.5 MB of bytes decoded, 6.1 MB as float32. tracemalloc traces NumPy's buffers (the
    decoded images, their sums, the normalising), not torch's tensors (the in-memory split; each streamed batch,
    one per step by construction). Training and validating streamed, the traced peak stays under a quarter of the
    float set; the in-memory path's holds every decoded image at once (the measure sees it)."""
    from evaluators.training import train_one_epoch, validate

    root = write_digit_folders(tmp_path / "many", per_class=150, corrupt=False)
    spec = {"name": "many", "kind": "folder", "path": str(root), "digest": data_files.digest(root, "folder"),
            "classes": [f"digit_{k}" for k in range(10)], "channels": 1, "input_size": 32,
            "validation_share": 0.1, "augment": False}
    image_bytes = 1500 * 32 * 32
    budget = TrainingBudget.from_dict({"epochs": 1, "batch_size": 16, "seed": 1})
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(32 * 32, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    monkeypatch.setenv("NAS_DATA_CACHE_MB", "0")
    warm = own_split.split({**spec, "input_size": 8}, 2, "cpu")  # imports and Pillow's plugins, not traced
    validate(torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 10)), warm.val_x, warm.val_y, budget)
    peaks = {}
    for mode, megabytes in (("streamed", "0"), ("kept", "1024")):
        monkeypatch.setenv("NAS_DATA_CACHE_MB", megabytes)
        tracemalloc.start()
        data = own_split.split(spec, 2, "cpu")
        train_one_epoch(model, data.train_x, data.train_y, optimizer, budget, torch.Generator().manual_seed(0))
        validate(model, data.val_x, data.val_y, budget)
        peaks[mode] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert peaks["streamed"] < image_bytes and image_bytes <= peaks["kept"], peaks
    assert peaks["streamed"] < peaks["kept"] / 4, peaks


def test_dataloader_workers_decode_the_same_batches(digit_set, monkeypatch):
    """``NAS_DATA_WORKERS=2``: the batches decoded in two worker processes, in order, the same as in memory."""
    kept, streamed = both(digit_set, monkeypatch)
    monkeypatch.setenv("NAS_DATA_WORKERS", "2")
    picks = [torch.arange(start, start + 30) for start in range(0, 300, 30)]
    for pick, batch in zip(picks, streamed.train_x.batches(picks)):
        assert torch.equal(batch, kept.train_x.index_select(0, pick))
    monkeypatch.setenv("NAS_DATA_WORKERS", "two")
    with pytest.raises(ValueError, match="NAS_DATA_WORKERS must be a whole number"):
        streamed.train_x.index_select(0, torch.tensor([0]))


def test_the_budget_setting_is_checked(monkeypatch):
    monkeypatch.setenv("NAS_DATA_CACHE_MB", "lots")
    with pytest.raises(ValueError, match="NAS_DATA_CACHE_MB must be a number"):
        own_split.cache_budget_bytes()
    monkeypatch.setenv("NAS_DATA_CACHE_MB", "2.5")
    assert own_split.cache_budget_bytes() == 2_500_000
    assert own_split.in_memory_bytes(1000, 3, 32) == 1000 * 3 * 32 * 32 * 5
    assert np.isclose(own_split.DEFAULT_CACHE_MB, 1024)
