"""The files kept for the best individuals (weights, model.py, model.onnx): stored from Redis when one enters the
best, deleted when it is pushed out, dropped from Redis only after the loop's commit, and carried by the downloads
as stored (a real Redis and database; the files are those the worker writes for real networks, no workers)."""
from __future__ import annotations

import io
import zipfile

import pytest

from nas.spaces import space_from_config
from nas.strategies import get_strategy
from tests.engine.conftest import owner
from webapp.services import exports, lifecycle
from webapp.control import kept as weights, recording
from webapp.messaging import transport
from webapp.searches.models import Individual, Weights

pytestmark = pytest.mark.integration  # a real Redis; .ci/run runs these on PostgreSQL too (bytea weights)

CONFIG = {"space": {"name": "chain", "max_layers": 2}, "evaluation": {"mode": "train", "keep_weights": 2},
          "strategy": {"params": {"population": 4, "sample_size": 2, "max_evaluations": 4}}}


def trained_bytes(search, individual, scale: float) -> bytes:
    """A state_dict of the individual's real architecture (filled with ``scale``, to tell them apart)."""
    import torch

    from evaluators.blocks import Net
    from evaluators.builders import architecture, as_space
    from evaluators.model_files import save_weights

    model = Net(architecture(individual.genome, as_space(search.config["space"]), search.config["dataset"]))
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.fill_(scale)
    out = io.BytesIO()
    save_weights(model.state_dict(), out)
    return out.getvalue()


def arrive(search, individual, fitness: float, commit: bool = True) -> int:
    """A worker's result with its files, as the loop records it: put, record, keep, then drop after commit."""
    from evaluators.model_files import kept_files

    files, problem = kept_files(individual.genome, search.config["space"], search.config["dataset"],
                                trained_bytes(search, individual, fitness), None)
    assert problem is None, problem
    transport.put_kept(search.pk, individual.pk, files)
    individual.status, individual.fitness = Individual.Status.DONE, fitness
    individual.save()
    stored = weights.keep_best(search, [individual])
    if commit:
        weights.drop_waiting(search, [individual.pk])
    return stored


@pytest.fixture
def search_of_four(engine):
    search = lifecycle.create_search(owner(), "weights", CONFIG)
    space = space_from_config(search.config["space"])
    strategy = get_strategy("regularized", space, 0, **search.config["strategy"]["params"])
    return search, recording.create_individuals(search, space, strategy.ask(4))


def kept(search) -> set[int]:
    return set(Weights.objects.filter(individual__search=search).values_list("individual__number", flat=True))


def test_only_the_best_keep_their_weights_and_redis_is_emptied(search_of_four):
    search, (a, b, c, d) = search_of_four
    assert arrive(search, a, 0.5) == 1 and arrive(search, b, 0.7) == 1
    assert kept(search) == {a.number, b.number}
    assert arrive(search, c, 0.6) == 1  # pushes a out of the best two
    assert kept(search) == {b.number, c.number}
    assert arrive(search, d, 0.1) == 0  # never among the best
    assert kept(search) == {b.number, c.number}
    assert transport.waiting_kept(search.pk, [a.pk, b.pk, c.pk, d.pk]) == {}
    row = Weights.objects.get(individual=b)
    assert row.nbytes == len(bytes(row.data)) and len(row.sha256) == 64
    import onnx

    assert "def build()" in row.source
    assert [i.name for i in onnx.load_from_string(bytes(row.onnx)).graph.input] == ["images"]
    # The best two are full: a result must now reach the second best's fitness to be kept at all.
    assert transport.admission(search.pk) == pytest.approx(0.6)


def test_weights_wait_in_redis_until_the_commit(search_of_four):
    search, (a, *_) = search_of_four
    arrive(search, a, 0.5, commit=False)  # the loop died before dropping them
    assert set(transport.waiting_kept(search.pk, [a.pk])) == {a.pk}
    Weights.objects.all().delete()  # ... and before its transaction committed: the messages are read again
    assert weights.keep_best(search, [a]) == 1 and kept(search) == {a.number}


def test_no_weights_are_read_when_none_are_kept(search_of_four):
    search, (a, *_) = search_of_four
    search.config["evaluation"]["keep_weights"] = 0
    assert arrive(search, a, 0.9) == 0 and kept(search) == set()
    assert set(transport.waiting_kept(search.pk, [a.pk])) == {a.pk}  # left to expire: nobody asked for them


def test_the_best_zip_carries_the_kept_weights(search_of_four, settings, tmp_path):
    from evaluators.model_files import load_weights

    settings.STATE_DIR = tmp_path
    search, (a, b, c, d) = search_of_four
    for individual, fitness in ((a, 0.5), (b, 0.7), (c, 0.6), (d, 0.1)):
        arrive(search, individual, fitness)
    out = io.BytesIO()
    names = exports.best_zip(search, 2, out)
    assert {f"rank01_n{b.number}/weights.pt", f"rank02_n{c.number}/weights.pt"} <= set(names)
    with zipfile.ZipFile(out) as archive:
        first = load_weights(io.BytesIO(archive.read(f"rank01_n{b.number}/weights.pt")))
        assert all(float(value.flatten()[0]) == pytest.approx(0.7) for key, value in first.items()
                   if key.endswith("weight"))
        assert f"rank01_n{b.number}/model.onnx" in archive.namelist()
