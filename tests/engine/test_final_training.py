"""The final training (``final: {"top": k, "epochs": E}``): once the search's budget is spent its top genomes
are retrained from scratch as final runs, recorded beside its individuals and never told to the strategy; the
best of them is the search's result (the Best zip's first folder, the page's and the API's final result)."""
from __future__ import annotations

import csv
import io
import zipfile

import pytest

from tests.engine.conftest import owner
from webapp.control import lease
from webapp.control.loop import SearchLoop
from webapp.searches import final_runs
from webapp.searches.models import Event, Individual, Search
from webapp.services import exports, lifecycle, queries
from webapp.worker import runner

pytestmark = pytest.mark.integration

CONFIG = {"space": {"name": "chain", "max_layers": 3},
          "strategy": {"name": "regularized", "seed": 4, "params": {"population": 4, "sample_size": 2,
                                                                    "max_evaluations": 8}},
          "training": {"epochs": 2},
          "evaluation": {"mode": "simulated", "duration": 0.0},
          "final": {"top": 2, "epochs": 7}}


def test_the_top_genomes_are_retrained_as_final_runs_the_strategy_never_sees(engine, monkeypatch):
    monkeypatch.setattr(lifecycle.dispatch, "start_loop", lambda search_id: None)  # this test runs the loop itself
    search = lifecycle.launch(lifecycle.create_search(owner(), "final", CONFIG))
    trained: dict[int, dict] = {}

    def send(packet: dict, signature: str, task_id: str, queue: str) -> None:
        for item in packet["ind_set"]:
            trained[item["number"]] = item["training"]
        runner.evaluate_packet(packet, signature, task_id)

    owner_id = lease.new_owner()
    assert lease.take(search.pk, owner_id)
    loop = SearchLoop(search.pk, owner_id, send=send)
    assert loop.run() == Search.Status.FINISHED
    search.refresh_from_db()
    searched = list(final_runs.searched(search).order_by("number"))
    runs = list(final_runs.runs(search))
    assert [i.number for i in searched] == list(range(8)) and [r.number for r in runs] == [8, 9]
    assert all(r.status == Individual.Status.DONE and r.operator == "final" for r in runs)
    assert [r.genome for r in runs] == final_runs.top_genomes(search, 2)  # the two best, best first
    assert [trained[n]["epochs"] for n in range(8)] == [2] * 8 and trained[8]["epochs"] == trained[9]["epochs"] == 7
    # not part of the search: the strategy was told 8 results, the counts and the best are the search's
    assert len(loop.strategy.best(100)) == 8
    assert search.evaluations_done == search.evaluations_total == 8
    assert search.best_fitness == max(i.fitness for i in searched)
    # the search's result: the best final run, on the API, in the Best zip and in the CSV
    summary = queries.search_detail(search)["final"]
    best = max(runs, key=lambda r: (r.fitness, -r.number))
    assert summary["state"] == "done" and summary["best"]["number"] == best.number
    assert [row["number"] for row in summary["runs"]] == [8, 9]
    out = io.BytesIO()
    names = exports.best_zip(search, 3, out)
    assert names[0].startswith(f"rank01_n{best.number}/")
    readme = zipfile.ZipFile(out).read("README.txt").decode()
    assert "final run" in readme and f"{best.fitness:.6g}" in readme
    text = io.StringIO()
    exports.individuals_csv(search, text)
    rows = list(csv.DictReader(io.StringIO(text.getvalue())))
    assert [row["role"] for row in rows] == ["search"] * 8 + ["final"] * 2
    assert Event.objects.filter(search=search, type="search.final").exists()


def test_final_is_checked_with_clear_messages():
    from webapp.searches.config import ConfigError, check_config

    assert "final" not in check_config({k: v for k, v in CONFIG.items() if k != "final"})
    assert check_config(CONFIG)["final"] == {"top": 2, "epochs": 7}
    for final, message in [({"top": 0, "epochs": 3}, "final.top: must be in [1, 20]"),
                           ({"top": 9, "epochs": 3}, "final.top: must be at most 8, the most genomes"),
                           ({"top": 1, "epochs": 0}, "final.epochs: must be in [1, 1000]"),
                           ({"top": 1}, "final.epochs: a value is required"),
                           ({"top": 1, "epochs": 1, "lr": 1}, "final.lr: unknown field"),
                           ("yes", "final: must be an object")]:
        with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
            check_config({**CONFIG, "final": final})
