"""The strategy state in the database: the compact state on the search, the archive a row per entry, written
as it grows and joined again exactly (unit tests on the real database, no workers)."""
from __future__ import annotations

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from nas.spaces import space_from_config
from nas.strategies import get_strategy
from nas.testing.strategies import evaluate
from tests.engine.conftest import owner, simulated_config
from webapp.services import lifecycle
from webapp.control import strategy_store
from webapp.searches.models import ArchiveRow, Search

pytestmark = pytest.mark.django_db


def fresh():
    search = lifecycle.create_search(owner(), "stored", simulated_config(evaluations=40))
    strategy = search.config["strategy"]
    space = space_from_config(search.config["space"])
    return search, space, get_strategy(strategy["name"], space, strategy["seed"], **strategy["params"])


def saved(search: Search) -> Search:
    search.save(update_fields=["strategy_state"])
    return Search.objects.get(pk=search.pk)


def step(strategy, count: int = 3) -> None:
    for candidate in strategy.ask(count):
        strategy.tell(candidate.id, evaluate(candidate))


def test_each_save_writes_only_the_new_rows_and_load_is_exact():
    search, space, strategy = fresh()
    for _ in range(5):
        step(strategy)
        before = ArchiveRow.objects.count()
        strategy_store.save(search, strategy)
        search = saved(search)
        assert ArchiveRow.objects.count() - before == 6, "a save wrote more than the 3 candidates and 3 results"
        assert "candidates" not in search.strategy_state and len(json.dumps(search.strategy_state)) < 3000
        loaded = strategy_store.load(search, space)
        assert json.dumps(loaded.state_dict()) == json.dumps(strategy.state_dict())
    pending = strategy.ask(2)  # asked, not told: saved as candidates without results
    strategy_store.save(search, strategy)
    search = saved(search)
    loaded = strategy_store.load(search, space)
    assert [c.id for c in loaded.ask(0)] == [] and sorted(loaded.pending) == sorted(c.id for c in pending)
    assert json.dumps(loaded.state_dict()) == json.dumps(strategy.state_dict())
    with CaptureQueriesContext(connection) as queries:
        strategy_store.save(search, strategy)  # nothing new: no row written
    assert not any("INSERT" in q["sql"] for q in queries.captured_queries)


def test_a_whole_state_from_an_older_version_loads_and_is_split_at_its_next_save():
    search, space, strategy = fresh()
    step(strategy, 4)
    search.strategy_state = json.loads(json.dumps(strategy.state_dict()))
    search = saved(search)
    loaded = strategy_store.load(search, space)
    assert json.dumps(loaded.state_dict()) == json.dumps(strategy.state_dict())
    step(loaded)
    strategy_store.save(search, loaded)
    search = saved(search)
    assert ArchiveRow.objects.filter(search=search).count() == 7 + 7
    assert json.dumps(strategy_store.load(search, space).state_dict()) == json.dumps(loaded.state_dict())


def test_rows_past_the_saved_state_are_dropped_and_missing_rows_are_an_error():
    search, space, strategy = fresh()
    step(strategy)
    strategy_store.save(search, strategy)
    search = saved(search)
    ArchiveRow.objects.create(search=search, kind="results", index=3, data=[99, {"fitness": 1.0}])
    loaded = strategy_store.load(search, space)
    assert json.dumps(loaded.state_dict()) == json.dumps(strategy.state_dict())
    assert ArchiveRow.objects.filter(search=search, kind="results").count() == 3
    ArchiveRow.objects.filter(search=search, kind="candidates", index=1).delete()
    with pytest.raises(ValueError, match="names 3 candidates but the database holds 2"):
        strategy_store.load(search, space)


@pytest.mark.parametrize("name, params", [
    ("reinforce", {"max_evaluations": 60}),
    ("tpe", {"startup_trials": 5, "max_evaluations": 60}),
])
def test_the_explorers_resume_from_the_database_exactly(name, params):
    """Saved by the store after every step (as the loop does) with candidates under way, loaded as a resumed
    loop would: the same candidates as the uninterrupted run; tpe's study comes back from the archive's rows and
    its repeats' rows, never from a pickled study, and the compact state stays small."""
    config = {**simulated_config(), "space": {"name": "chain", "max_layers": 4},
              "strategy": {"name": name, "seed": 3, "params": params}}
    search = lifecycle.create_search(owner(), name, config)
    space = space_from_config(search.config["space"])

    def run(resume: bool):
        strategy = get_strategy(name, space, 3, **params)
        asked, pending = [], []
        while not strategy.done:
            batch = strategy.ask(3)
            asked += [c.to_dict() for c in batch]
            pending += batch
            told, pending = (pending[:2], pending[2:]) if batch else (pending, [])
            for c in told:
                strategy.tell(c.id, evaluate(c))
            if resume:
                strategy_store.save(search, strategy)
                stored = saved(search)
                assert len(json.dumps(stored.strategy_state)) < 4000
                strategy = strategy_store.load(stored, space)
        return asked, strategy

    plain, _ = run(False)
    resumed, strategy = run(True)
    assert resumed == plain and len(plain) == 60
    kinds = set(ArchiveRow.objects.filter(search=search).values_list("kind", flat=True))
    assert kinds == {"candidates", "results"} | ({"repeats"} if getattr(strategy, "_repeats", None) else set())
