"""Seed 003's segment-balanced sparsified AllReduce (:mod:`evaluators.sparse_allreduce`) on real gloo process
groups of 2 and 3 ranks (``torch.multiprocessing`` subprocesses): at ratio 1 it is dense AllReduce; every chunk of
both phases has the same size at every step, on every rank; what is sent plus what is kept is the accumulated
gradient, bit for bit; and, through the gang's own processes, a gang of one is untouched and a stopped or timed-out
gang with the hook still ends together."""
from __future__ import annotations

import tempfile
import traceback
from pathlib import Path
from typing import Any, Callable

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from evaluators.data_parallel import evaluate_on_gang
from tests.evaluators.conftest import TINY

GENOME, SPACE = TINY["chain"]


def _rank(rank: int, world: int, path: str, check: Callable[[int, int], Any], results: Any) -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{path}", rank=rank, world_size=world)
    try:
        results.put((rank, check(rank, world)))
    except Exception:  # the parent fails the test with the rank's traceback
        results.put((rank, traceback.format_exc()))
    finally:
        dist.destroy_process_group()


def run_ranks(world: int, check: Callable[[int, int], Any]) -> list[Any]:
    """``check(rank, world)`` on every rank of a real gloo group of ``world`` processes; their answers by rank."""
    context = mp.get_context("spawn")
    results = context.SimpleQueue()
    with tempfile.TemporaryDirectory(prefix="nas-sparse-") as folder:
        processes = [context.Process(target=_rank, args=(rank, world, str(Path(folder) / "rendezvous"), check,
                                                         results)) for rank in range(world)]
        for process in processes:
            process.start()
        answers = dict(results.get() for _ in range(world))
        for process in processes:
            process.join(timeout=120)
    for rank, answer in answers.items():
        assert not isinstance(answer, str), f"rank {rank} failed:\n{answer}"
    return [answers[rank] for rank in range(world)]


class _Linear(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Linear(13, 7)  # 98 values with the next layer's 24: never a multiple of 3 (padded)
        self.b = torch.nn.Linear(7, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(torch.relu(self.a(x)))


def _grads(ratio: float | None, rank: int) -> list[torch.Tensor]:
    """One backward pass of the same model on this rank's own inputs, through DDP, with the hook or without."""
    from evaluators.sparse_allreduce import SegmentTopK, segment_topk_hook

    torch.manual_seed(0)
    model = _Linear()
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    if ratio is not None:
        ddp.register_comm_hook(SegmentTopK(ratio), segment_topk_hook)
    inputs = torch.randn(5, 13, generator=torch.Generator().manual_seed(rank + 1))
    ddp(inputs).square().mean().backward()
    return [p.grad.clone() for p in model.parameters()]


def _ratio_one_is_dense(rank: int, world: int) -> bool:
    dense, sparse = _grads(None, rank), _grads(1.0, rank)
    return all(torch.allclose(d, s, rtol=1e-5, atol=1e-7) for d, s in zip(dense, sparse))


@pytest.mark.parametrize("world", [2, 3])
def test_ratio_one_gives_the_dense_allreduce_gradients(world):
    assert run_ranks(world, _ratio_one_is_dense) == [True] * world


def _sent_and_kept(rank: int, world: int) -> dict[str, Any]:
    """Five steps of fresh gradients (a bucket of 1001 values) at ratio 0.05: what phase 1 handed to the
    collective (decoded), and the residuals before and after."""
    from evaluators import sparse_allreduce
    from evaluators.sparse_allreduce import SegmentTopK, index_width, unpack

    params = [torch.zeros(600), torch.zeros(401)]
    state = SegmentTopK(0.05)
    handed: list[torch.Tensor] = []
    real = dist.all_to_all_single

    def capture(output, tensor, *args, **kwargs):
        handed.append(tensor.clone())
        return real(output, tensor, *args, **kwargs)

    sparse_allreduce.dist.all_to_all_single = capture
    exact, means = [], []
    generator = torch.Generator().manual_seed(rank)
    try:
        for _ in range(5):
            grad = torch.randn(1001, generator=generator)
            before = torch.cat([state.residuals.get(id(p), torch.zeros(p.numel())) for p in params])
            accumulated = grad + before
            handed.clear()
            mean = state.reduce(grad.clone(), params)
            segment = -(-1001 // world)
            values, index = unpack(handed[0], -(-segment * 5 // 100), torch.float32, index_width(segment))
            sent = torch.zeros(world, segment).scatter_(1, index, values).flatten()[:1001]
            after = torch.cat([state.residuals[id(p)] for p in params])
            exact.append(torch.equal(sent + after, accumulated) and torch.equal(sent * after, torch.zeros(1001)))
            means.append((mean, sent))
    finally:
        sparse_allreduce.dist.all_to_all_single = real
    # the mean every rank got is the mean of what the ranks sent
    agreed = []
    for mean, sent in means:
        total = sent.clone()
        dist.all_reduce(total)
        agreed.append(bool(torch.allclose(mean, total / world, atol=1e-6)))
    return {"exact": exact, "agreed": agreed, "chunks": state.traffic.chunks, "summary": state.traffic.summary()}


@pytest.mark.parametrize("world", [2, 3])
def test_sent_plus_residual_is_the_accumulated_gradient_and_every_chunk_is_equal(world):
    answers = run_ranks(world, _sent_and_kept)
    for answer in answers:
        assert answer["exact"] == [True] * 5  # bit for bit, at every step (the residual carried over)
        assert answer["agreed"] == [True] * 5
        assert len(answer["chunks"]) == 5
        for first, second in answer["chunks"]:  # every chunk of a phase the same size, k-1 of each
            assert len(first) == len(second) == world - 1
            assert len(set(first)) == 1 and len(set(second)) == 1
        assert answer["summary"]["balance"] == 1.0
        segment = -(-1001 // world)
        assert answer["summary"]["values_sent"] == 5 * world * -(-segment * 5 // 100)  # ceil(0.05 x segment) each
        assert answer["summary"]["bytes_sent"] < answer["summary"]["bytes_dense"] / 2
    assert all(answer["chunks"] == answers[0]["chunks"] for answer in answers)  # and the same on every rank


BUDGET = {"epochs": 1, "batch_size": 64, "seed": 1}
SPARSE = {"kind": "segment_topk", "ratio": 0.01}


def test_a_gang_of_one_is_untouched_by_compression():
    plain = evaluate_on_gang(GENOME, SPACE, BUDGET, "digits", ["cpu"], threads=1)
    compressed = evaluate_on_gang(GENOME, SPACE, BUDGET, "digits", ["cpu"], threads=1, compression=SPARSE)
    assert plain.ok and compressed.ok, (plain.message, compressed.message)
    assert compressed.fitness == plain.fitness and compressed.curve == plain.curve
    assert "bytes_sent" not in compressed.metrics and "communicate" not in compressed.timings


def test_a_compressed_gang_reports_its_bytes_against_dense():
    result = evaluate_on_gang(GENOME, SPACE, BUDGET, "digits", ["cpu", "cpu"], threads=1, compression=SPARSE)
    assert result.ok, result.message
    metrics = result.metrics
    assert metrics["compression"] == "segment_topk" and metrics["balance"] == 1.0
    assert 0 < metrics["bytes_sent"] <= 0.05 * metrics["bytes_dense"]
    params, steps = metrics["params"], metrics["steps"]
    assert metrics["bytes_dense"] == 2 * steps * (2 * 1 * params * 4 // 2)  # two ranks, ring AllReduce of fp32
    assert 0.01 <= metrics["kept"] < 0.02
    assert result.timings["communicate"] + result.timings["compute"] == pytest.approx(result.timings["train"])


def test_a_stopped_gang_with_the_hook_ends_together():
    folders: list[Path] = []

    def should_stop() -> bool:
        return bool(folders) and (folders[0] / "training.0").exists()

    result = evaluate_on_gang(GENOME, SPACE, {**BUDGET, "epochs": 500}, "digits", ["cpu", "cpu"],
                              should_stop=should_stop, on_ranks=lambda pids, folder: folders.append(folder),
                              threads=1, compression=SPARSE)
    assert result.failure == "stopped" and "stop flag" in result.message


def test_a_timed_out_gang_with_the_hook_ends_together():
    result = evaluate_on_gang(GENOME, SPACE, {**BUDGET, "epochs": 500, "max_seconds": 3}, "digits", ["cpu", "cpu"],
                              threads=1, compression=SPARSE)
    assert result.failure == "timeout", result.message


@pytest.mark.parametrize("value, words", [
    ({"kind": "segment_topk", "ratio": 0}, "ratio must be a number in (0, 1]"),
    ({"kind": "zip"}, "the kinds are none, segment_topk, powersgd, fp16"),
])
def test_a_bad_compression_is_an_invalid_result_before_any_rank_starts(value, words):
    result = evaluate_on_gang(GENOME, SPACE, BUDGET, "digits", ["cpu", "cpu"], compression=value)
    assert result.failure == "invalid" and words in result.message
