"""A gang of CPU ranks (gloo, ranks started as subprocesses): the same accuracy as one rank with the same seed
and global batch, the devices recorded, and a rank killed mid-training fails the evaluation with no rank left."""
from __future__ import annotations

import io
import os
import signal
import threading
import time
from pathlib import Path

import psutil
import pytest

from evaluators.data_parallel import RANK_LOST, devices_of, evaluate_on_gang
from evaluators.evaluate import evaluate
from tests.evaluators.conftest import TINY

GENOME, SPACE = TINY["chain"]
BUDGET = {"epochs": 6, "batch_size": 64, "seed": 1}


def test_two_ranks_reach_the_one_rank_accuracy_and_record_both_devices():
    one = evaluate_on_gang(GENOME, SPACE, BUDGET, "digits", ["cpu"], threads=1)
    two = evaluate_on_gang(GENOME, SPACE, BUDGET, "digits", ["cpu", "cpu"], threads=1)
    assert one.ok and two.ok, (one.message, two.message)
    assert one.fitness > 0.9
    assert abs(two.fitness - one.fitness) <= 0.02
    assert devices_of(two) == ["cpu", "cpu"] and devices_of(one) == ["cpu"]
    assert two.metrics["batch_size"] == one.metrics["batch_size"] == 64  # the same global batch
    assert len(two.curve) == BUDGET["epochs"]


def test_kill_9_of_one_rank_fails_the_evaluation_and_leaves_no_rank():
    seen: dict[str, object] = {}

    def killer(pids: list[int], folder: Path) -> None:
        seen["pids"] = pids

        def kill_when_training() -> None:
            for _ in range(1200):  # until rank 1 has taken its first step (at most two minutes)
                if (folder / "training.1").exists():
                    os.kill(pids[1], signal.SIGKILL)
                    seen["killed"] = True
                    return
                time.sleep(0.1)

        threading.Thread(target=kill_when_training, daemon=True).start()

    long = {**BUDGET, "epochs": 500}
    result = evaluate_on_gang(GENOME, SPACE, long, "digits", ["cpu", "cpu"], on_ranks=killer, threads=1)
    assert seen.get("killed"), result.message
    assert result.status == "failed" and result.failure == RANK_LOST
    assert "rank 1 (cpu)" in result.message and "SIGKILL" in result.message
    assert not [pid for pid in seen["pids"] if psutil.pid_exists(pid)]


@pytest.mark.parametrize("genome, devices, words", [
    ({"layers": []}, ["cpu", "cpu"], "layers"),
    (GENOME, ["cpu", "cuda:0"], "all cpu or all cuda"),
    (GENOME, [], "at least one device"),
])
def test_bad_input_is_an_invalid_result_before_any_rank_starts(genome, devices, words):
    result = evaluate_on_gang(genome, SPACE, BUDGET, "digits", devices)
    assert result.failure == "invalid" and words in result.message


def _when_training(folder: Path, rank: int, action) -> None:
    def wait() -> None:
        for _ in range(1200):
            if (folder / f"training.{rank}").exists():
                action()
                return
            time.sleep(0.1)

    threading.Thread(target=wait, daemon=True).start()


def test_the_stop_flag_ends_every_rank_at_the_same_step():
    folders: list[Path] = []

    def remember(pids: list[int], folder: Path) -> None:
        folders.append(folder)

    def should_stop() -> bool:
        return bool(folders) and (folders[0] / "training.0").exists()

    result = evaluate_on_gang(GENOME, SPACE, {**BUDGET, "epochs": 500}, "digits", ["cpu", "cpu"],
                              should_stop=should_stop, on_ranks=remember, threads=1)
    assert result.failure == "stopped" and "stop flag" in result.message
    assert result.device == "cpu,cpu"


def test_a_hung_rank_never_hangs_the_worker():
    seen: dict[str, list[int]] = {}

    def freeze(pids: list[int], folder: Path) -> None:
        seen["pids"] = pids
        _when_training(folder, 1, lambda: os.kill(pids[1], signal.SIGSTOP))

    result = evaluate_on_gang(GENOME, SPACE, {**BUDGET, "epochs": 500}, "digits", ["cpu", "cpu"], on_ranks=freeze,
                              collective_timeout=3, stall_seconds=6, threads=1)
    assert result.status == "failed" and result.failure in ("error", "rank_lost"), result.message
    assert "rank" in result.message
    assert not [pid for pid in seen["pids"] if psutil.pid_exists(pid)]


def _score(weights: io.BytesIO) -> float:
    """The accuracy of kept weights on the digits validation split, scored here in this process."""
    import torch

    from evaluators.blocks import Net
    from evaluators.builders import architecture, as_space
    from evaluators.datasets import load_dataset
    from evaluators.model_files import load_weights
    from evaluators.training import validate
    from evaluators.budget import TrainingBudget

    net = Net(architecture(GENOME, as_space(SPACE), "digits"))
    net.load_state_dict(load_weights(io.BytesIO(weights.getvalue())))
    data = load_dataset("digits", "cpu", BUDGET["seed"])
    with torch.no_grad():
        return validate(net, data.val_x, data.val_y, TrainingBudget.from_dict(BUDGET))[1]


def test_a_gang_reports_progress_and_stops_at_the_leaders_answer_like_one_device():
    """The same reports at the same steps, and a stop at the second one, for one device and a gang of two."""
    def run(device):
        steps: list[int] = []

        def stop_at_second(step, epoch, metrics):
            steps.append(step)
            assert 0.0 <= metrics["val_accuracy"] <= 1.0 and metrics["params"] > 0
            return len(steps) == 2

        weights = io.BytesIO()
        result = evaluate(GENOME, SPACE, BUDGET, "digits", device, report=stop_at_second, report_every=7,
                          weights_to=weights, **({"threads": 1} if isinstance(device, list) else {}))
        return result, steps, weights

    one, one_steps, _ = run("cpu")
    two, two_steps, two_weights = run(["cpu", "cpu"])
    assert one.status == two.status == "pruned", (one.message, two.message)
    assert one_steps == two_steps == [7, 14]
    assert [p["step"] for p in two.curve] == [7, 14] and two.metrics["steps"] == 14
    assert two.device == "cpu,cpu" and two_weights.tell() > 0, "a pruned gang keeps the weights it had"
    assert _score(two_weights) == pytest.approx(two.fitness, abs=1e-9)


def test_a_gang_keeps_the_weights_it_reports_and_measures_latency():
    weights = io.BytesIO()
    result = evaluate(GENOME, SPACE, BUDGET, "digits", ["cpu", "cpu"], weights_to=weights,
                      latency={"batch": 1, "repeats": 2}, threads=1)
    assert result.ok, result.message
    assert result.metrics["latency_ms"] > 0 and result.metrics["latency"] > 0 and "schedule" in result.metrics
    assert result.fitness > 0.9 and _score(weights) == pytest.approx(result.fitness, abs=1e-9)


def test_out_of_memory_in_a_rank_fails_the_gang_as_oom():
    result = evaluate(GENOME, SPACE, BUDGET, "digits", ["cpu", "cpu"], fault="oom", threads=1)
    assert result.status == "failed" and result.failure == "oom", result.message
    assert "rank 0 (cpu)" in result.message or "rank 1 (cpu)" in result.message


def test_a_cell_whose_op_feeds_a_dead_node_trains_on_a_gang():
    """Nodes 1 and 2 never reach the output: their ops get no gradient, which DistributedDataParallel must be
    told (``unused_parameters``) or every step fails; a cell without such an op is wrapped as before."""
    from evaluators.blocks import Cell

    dead = {"1<-0": "conv_1x1", "2<-0": "conv_1x1", "2<-1": "conv_3x3", "3<-0": "avg_pool_3x3", "3<-1": "none",
            "3<-2": "none"}
    assert Cell(4, dead).unused_parameters and not Cell(4, {**dead, "3<-2": "skip_connect"}).unused_parameters
    space = {"name": "cell", "stages": 2, "cells_per_stage": 1, "channels": 8}
    result = evaluate_on_gang({"edges": dead}, space, {"epochs": 1, "batch_size": 64}, "digits", ["cpu", "cpu"],
                              threads=1)
    assert result.ok, result.message


def test_an_interrupted_gang_leaves_no_rank_and_no_folder():
    """An exception in the watching process (a paused node's hand-back) kills the ranks and removes the gang's
    folder before it goes on up."""
    seen: dict[str, object] = {}

    class HandedBack(BaseException):
        pass

    def interrupt(pids: list[int], folder: Path) -> None:
        seen.update(pids=pids, folder=folder)
        raise HandedBack()

    with pytest.raises(HandedBack):
        evaluate_on_gang(GENOME, SPACE, BUDGET, "digits", ["cpu", "cpu"], threads=1, on_ranks=interrupt)
    assert not seen["folder"].exists()
    assert not [pid for pid in seen["pids"] if psutil.pid_exists(pid)]
