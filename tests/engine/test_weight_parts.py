"""The worker's side of a weight search, part by part, against the real Redis (no Celery): a slot fetches the
weights once, then keeps its copy in step by applying the same update; a part for another digest is obsolete;
an unsigned part is refused."""
from __future__ import annotations

import numpy as np
import pytest

from evaluators.neuroevolution import WeightEvolution, WeightRun
from webapp.messaging import signing
from webapp.messaging import weights_transport as wire
from webapp.searches.config import check_config
from webapp.worker import weights

pytestmark = pytest.mark.integration
CONFIG = check_config({"kind": "weights", "network": {"kind": "mlp", "layers": [64, 16, 10]},
                       "weights": {"population": 6, "method": "cu", "seed": 2, "batch_size": 64}})
SEARCH = 41


def part(generation: int, phase: str, j: int, parts: int, digest: str) -> dict:
    return {"search": SEARCH, "generation": generation, "phase": phase, "part": j, "parts": parts,
            "previous_parts": parts, "digest": digest,
            "config": {key: CONFIG[key] for key in ("network", "dataset", "weights")}}


def run(data: dict) -> str:
    return weights.run_part(data, signing.sign(data))


def test_a_slot_fetches_once_then_follows_the_updates(engine, monkeypatch):
    monkeypatch.setattr(weights, "COPIES", weights.Copies())
    loop = WeightEvolution(WeightRun.from_config(CONFIG))
    for generation in range(2):
        digest = loop.digest()
        wire.publish_state(SEARCH, generation, digest, loop.state_bytes())
        for phase in ("evaluate", "gradient"):
            for j in range(2):
                assert run(part(generation, phase, j, 2, digest)) == "done"
        reports = wire.reports(SEARCH, generation, 2)
        fetched = sum(report["fetched"] for report in reports.values())
        assert (fetched > 0) == (generation == 0)  # the weights travel once, to a slot that has none
        stored = wire.gradient_parts(SEARCH, generation, 2)
        fitness = [v for j in range(2) for v in wire.fitness_parts(SEARCH, generation, 2)[j]]
        assert np.array_equal(np.concatenate([stored[0], stored[1]]),
                              loop.gradient_slice(generation, fitness, 0, loop.size)["theta"])
        loop.apply({"theta": np.concatenate([stored[0], stored[1]])})
    copy = weights.COPIES.get(SEARCH)
    assert copy.generation == 1 and copy.digest() != loop.digest()  # one step behind until its next part
    wire.publish_state(SEARCH, 2, loop.digest(), loop.state_bytes())
    assert run(part(2, "evaluate", 0, 2, loop.digest())) == "done"
    assert copy.generation == 2 and copy.digest() == loop.digest()
    assert wire.reports(SEARCH, 2, 2)["evaluate:0"]["fetched"] == 0
    assert run(part(2, "evaluate", 1, 2, "another-digest")) == "obsolete"  # the loop has other weights


def test_an_unsigned_or_malformed_part_is_refused(engine):
    data = part(0, "evaluate", 0, 1, "d")
    with pytest.raises(signing.MalformedPacket, match="signature"):
        weights.run_part(data, "0" * 64)
    with pytest.raises(signing.MalformedPacket, match="must be an object"):
        weights.run_part({"search": 1}, "")


def test_a_part_that_raises_is_reported_for_the_loop_to_fail_the_search(engine, monkeypatch):
    monkeypatch.setattr(weights, "COPIES", weights.Copies())
    loop = WeightEvolution(WeightRun.from_config(CONFIG))
    wire.publish_state(SEARCH, 0, loop.digest(), loop.state_bytes())

    def out_of_memory(*args, **kwargs):
        raise MemoryError("CUDA out of memory (a test)")

    monkeypatch.setattr(WeightEvolution, "evaluate", out_of_memory)
    assert run(part(0, "evaluate", 1, 2, loop.digest())) == "failed"
    assert wire.failures(SEARCH) == {"0:evaluate:1": "MemoryError: CUDA out of memory (a test)"}
    wire.clear_failures(SEARCH)
    assert wire.failures(SEARCH) == {}
