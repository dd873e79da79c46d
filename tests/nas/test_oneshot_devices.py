"""The supernet's per-device names in a curve point (``nas.oneshot.devices``): written by rank and device, read
back in rank order, other names left alone."""
from __future__ import annotations

from nas.oneshot import device_key, per_device
from nas.oneshot.devices import parse_key


def test_names_carry_the_rank_and_a_device_with_colons():
    assert device_key("val_accuracy", 1, "cuda:1") == "val_accuracy@1:cuda:1"
    assert parse_key("val_accuracy@1:cuda:1") == ("val_accuracy", 1, "cuda:1")
    for other in ("val_accuracy", "train_loss@x:cpu", "speed@0:cpu", "val_loss@0", "@0:cpu"):
        assert parse_key(other) is None


def test_a_point_reads_back_per_rank_in_order_with_missing_values_as_none():
    point = {"epoch": 2, "train_loss": 0.5, device_key("train_seconds", 1, "cuda:1"): 3.0,
             device_key("probes", 1, "cuda:1"): 0.0, device_key("val_accuracy", 0, "cuda:0"): 0.8,
             device_key("probes", 0, "cuda:0"): 2.0}
    assert per_device(point) == [
        {"rank": 0, "device": "cuda:0", "val_accuracy": 0.8, "val_loss": None, "probes": 2.0, "train_seconds": None},
        {"rank": 1, "device": "cuda:1", "val_accuracy": None, "val_loss": None, "probes": 0.0, "train_seconds": 3.0}]
    assert per_device({"epoch": 1, "val_accuracy": 0.5}) == []
