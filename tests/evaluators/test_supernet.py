"""The cell space's supernet: every op of every edge held once, a path is a genome, a path's weights load into
its stand-alone network; its SPOS training resumes exactly from a checkpoint and runs on a gang."""
from __future__ import annotations

import os

import pytest
import torch
import torch.multiprocessing as mp

from evaluators.networks import build_model
from evaluators.supernet import HELD_OPS, PathSampling, SuperNet, path_state_dict
from evaluators.supernet_training import load_checkpoint, train_supernet
from nas.oneshot import path_for_step
from nas.spaces import space_from_config
from nas.spaces.cell import EDGES

CONFIG = {"name": "cell", "cells_per_stage": 1, "stages": 2, "channels": 8}
SPACE = space_from_config(CONFIG)
BUDGET = {"epochs": 2, "batch_size": 128, "learning_rate": 0.003}


def _path(op: str) -> dict:
    """Every edge ``op``; ``none`` everywhere but a skip from input to output (a cell must stay connected)."""
    if op == "none":
        return {"edges": {**{edge: "none" for edge in EDGES}, "3<-0": "skip_connect"}}
    return {"edges": {edge: op for edge in EDGES}}


def test_every_op_of_every_edge_is_held_once_and_each_path_runs_as_its_standalone_network():
    torch.manual_seed(0)
    supernet = SuperNet(CONFIG, "digits").eval()
    cells = [layer for layer in supernet.layers if type(layer).__name__ == "SuperCell"]
    assert len(cells) == 2 and all(set(cell.ops[f"edge_0to1"]) == set(HELD_OPS) for cell in cells)
    x = torch.randn(5, 1, 8, 8)
    for op in ("none", "skip_connect", "conv_1x1", "conv_3x3", "avg_pool_3x3"):
        path = _path(op)
        out = supernet(x, path)
        assert out.shape == (5, 10) and torch.isfinite(out).all()
        alone = build_model(path, SPACE, "digits").eval()
        alone.load_state_dict(path_state_dict(supernet.state_dict(), path))  # strict: names and shapes agree
        assert torch.allclose(alone(x), out, atol=1e-6)


def test_chain_and_pelee_are_refused_with_the_reason():
    for config in ({"name": "chain"}, {"name": "pelee"}):
        with pytest.raises(ValueError, match="cannot hold"):
            SuperNet(config, "digits")


def test_path_sampling_draws_the_path_of_each_step_from_seed_and_step():
    seen = []

    class Spy(SuperNet):
        def forward(self, x, path):
            seen.append(path)
            return super().forward(x, path)

    sampler = PathSampling(Spy(CONFIG, "digits"), seed=7, step=3).train()
    for _ in range(3):
        sampler(torch.randn(2, 1, 8, 8))
    assert seen == [path_for_step(SPACE, 7, step) for step in (3, 4, 5)] and sampler.step == 6


def _measured(curve: list[dict]) -> list[dict]:
    """A curve without its timings (each device's ``train_seconds``): what a resumed training must repeat."""
    return [{name: value for name, value in point.items() if not name.startswith("train_seconds@")}
            for point in curve]


def test_a_resumed_training_continues_exactly_as_the_uninterrupted_one(tmp_path):
    whole = train_supernet(CONFIG, "digits", BUDGET, tmp_path / "whole", probes=1)
    assert whole.status == "ok" and whole.epochs == 2 and whole.resumed_from == 0
    stopped = train_supernet(CONFIG, "digits", BUDGET, tmp_path / "parts", probes=1,
                             report=lambda step, epoch, metrics: True)  # stop after the first epoch
    assert stopped.status == "stopped" and stopped.epochs == 1 and stopped.weights is None
    assert load_checkpoint(tmp_path / "parts")["epoch"] == 1
    resumed = train_supernet(CONFIG, "digits", BUDGET, tmp_path / "parts", probes=1)
    assert resumed.status == "ok" and resumed.resumed_from == 1 and resumed.steps == whole.steps
    assert resumed.digest == whole.digest and _measured(resumed.curve) == _measured(whole.curve)
    first, second = (torch.load(r.weights, weights_only=True)["state"] for r in (whole, resumed))
    assert all(torch.equal(first[name], second[name]) for name in first)
    point = whole.curve[-1]
    assert 0 <= point["val_accuracy_worst"] <= point["val_accuracy"] <= point["val_accuracy_best"] <= 1
    with pytest.raises(ValueError, match="another supernet training"):
        train_supernet(CONFIG, "digits", {**BUDGET, "learning_rate": 0.01}, tmp_path / "parts")


def _rank(rank: int, folder: str, store: str, out: str) -> None:
    import torch.distributed as dist

    from evaluators.ranks import Gang

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=2)
    try:
        gang = Gang(torch.device("cpu"), rank, ["cpu", "cpu"])
        result = train_supernet(CONFIG, "digits", {**BUDGET, "epochs": 1}, folder, ranks=gang, probes=1)
        checksum = sum(float(p.double().sum()) for p in torch.load(os.path.join(folder, "checkpoint.pt"),
                                                                   weights_only=True)["model"].values())
        torch.save({"status": result.status, "reason": result.reason, "steps": result.steps, "sum": checksum},
                   f"{out}.{rank}")
    finally:
        dist.destroy_process_group()


def test_a_gang_of_two_trains_the_supernet_on_the_same_path_per_step(tmp_path):
    """DistributedDataParallel meets unused parameters at every step; same path on both ranks, so it works."""
    mp.spawn(_rank, args=(str(tmp_path / "gang"), str(tmp_path / "store"), str(tmp_path / "out")), nprocs=2,
             join=True)
    results = [torch.load(tmp_path / f"out.{rank}", weights_only=True) for rank in (0, 1)]
    assert [r["status"] for r in results] == ["ok", "ok"], results
    assert results[0]["steps"] == results[1]["steps"] > 0


def test_the_gang_launcher_trains_the_supernet_on_two_ranks_and_a_stopped_gang_resumes(tmp_path):
    """``train_supernet_on`` with two CPU ranks: the one launcher (``run_gang``) every gang uses; each report
    names both devices; rank 0 alone writes the checkpoint; a stopped gang resumes from it."""
    from evaluators.supernet_training import train_supernet_on
    from nas.oneshot import per_device

    points: list[dict] = []

    def stop(step: int, epoch: float, metrics: dict) -> bool:
        points.append(metrics)
        return True  # after the first epoch

    folder = tmp_path / "gang"
    folder.mkdir()
    stopped = train_supernet_on(["cpu", "cpu"], CONFIG, "digits", BUDGET, folder, probes=2, report=stop, threads=1)
    assert stopped.failure == "stopped" and stopped.device == "cpu,cpu", stopped.message
    assert sorted(p.name for p in folder.iterdir()) == ["checkpoint.pt"] and load_checkpoint(folder)["epoch"] == 1
    ranks = per_device(points[0])
    assert [(r["rank"], r["device"], r["probes"]) for r in ranks] == [(0, "cpu", 1.0), (1, "cpu", 1.0)]
    assert all(0 <= r["val_accuracy"] <= 1 and r["train_seconds"] > 0 for r in ranks)
    resumed = train_supernet_on(["cpu", "cpu"], CONFIG, "digits", BUDGET, folder, probes=2, threads=1)
    assert resumed.ok and resumed.device == "cpu,cpu" and resumed.metrics["resumed_from"] == 1, resumed.message
    assert sorted(p.name for p in folder.iterdir()) == ["checkpoint.pt", "supernet.pt"]
    assert [int(p["epoch"]) for p in resumed.curve] == [1, 2] and len(per_device(resumed.curve[-1])) == 2
    alone = train_supernet_on(["cpu"], CONFIG, "digits", {**BUDGET, "epochs": 1}, tmp_path / "alone", probes=2)
    assert alone.ok and [r["probes"] for r in per_device(alone.curve[-1])] == [2.0]
    assert alone.metrics["steps"] == resumed.metrics["steps"] // 2  # the same global batch on one device or two


def test_a_supernet_gang_that_loses_a_rank_fails_the_attempt_and_the_next_resumes_from_the_checkpoint(tmp_path):
    import signal
    import threading
    import time

    from evaluators.data_parallel import RANK_LOST
    from evaluators.supernet_training import train_supernet_on

    folder = tmp_path / "gang"
    folder.mkdir()

    def kill_after_first_checkpoint(pids: list[int], _gang_folder) -> None:
        def watch() -> None:
            for _ in range(6000):
                if (folder / "checkpoint.pt").exists():
                    os.kill(pids[1], signal.SIGKILL)
                    return
                time.sleep(0.01)

        threading.Thread(target=watch, daemon=True).start()

    budget = {**BUDGET, "epochs": 6}
    lost = train_supernet_on(["cpu", "cpu"], CONFIG, "digits", budget, folder, probes=2, threads=1,
                             on_ranks=kill_after_first_checkpoint)
    assert lost.failure == RANK_LOST and "rank 1" in lost.message, lost.message
    done = load_checkpoint(folder)["epoch"]
    assert 1 <= done < 6 and not (folder / "supernet.pt").exists()
    again = train_supernet_on(["cpu", "cpu"], CONFIG, "digits", budget, folder, probes=2, threads=1)
    assert again.ok and again.metrics["resumed_from"] == done, again.message
    assert [int(p["epoch"]) for p in again.curve] == [1, 2, 3, 4, 5, 6]
