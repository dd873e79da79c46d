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

    def send(packet: dict, signature: str, task_id: str, queue: str, first: bool = False) -> None:
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


@pytest.mark.django_db
def test_search_create_takes_final_and_names_its_bad_field(tmp_path):
    from django.core.management import call_command
    from django.core.management.base import CommandError

    from webapp.services.progress_line import final_text

    owner()
    with pytest.raises(CommandError, match=r"final\.epochs: must be in \[1, 1000\]"):
        call_command("search", "create", "--name", "bad", "--owner", "tester", "--set", 'final={"top": 1, "epochs": 0}')
    call_command("search", "create", "--name", "final", "--owner", "tester", "--set", "final.top=2",
                 "--set", "final.epochs=5")
    search = Search.objects.get()
    assert search.config["final"] == {"top": 2, "epochs": 5}
    assert final_text(final_runs.summary(search)) == "final 2 x 5 epochs after the search"


DIGITS = {"space": {"name": "chain", "max_layers": 2},
          "strategy": {"name": "regularized", "seed": 5, "params": {"population": 3, "sample_size": 2,
                                                                    "max_evaluations": 3}},
          "dataset": "digits",
          "training": {"epochs": 1, "batch_size": 64, "learning_rate": 0.003},
          "evaluation": {"mode": "train", "keep_weights": 1},
          "final": {"top": 2, "epochs": 3}}


def test_a_stop_during_the_final_training_keeps_what_finished_and_a_resume_trains_the_rest(stack, tmp_path):
    """Real workers training on digits: top 2, stopped while the first final run trains (one slot: the second
    waits in the queue), resumed; both final runs recorded once, and the Best zip's first folder is the best of
    them, with weights that score, as its README says, what the page and the API report."""
    from tests.engine.conftest import finished, launched, running_evaluation, wait_until
    from tests.scoring import score_as_the_readme_says

    stack.evaluator("alpha", OMP_NUM_THREADS="1", wait=False)
    stack.control()
    search = launched("final stop and resume", DIGITS)

    def final_running():
        running = final_runs.runs(search).filter(status=Individual.Status.RUNNING).first()
        return running if running is not None and running_evaluation(search.pk, timeout=5) else None

    first = wait_until(final_running, 400, interval=0.1, message="a final run training")
    lifecycle.stop(Search.objects.get(pk=search.pk))
    stopped = wait_until(lambda: Search.objects.filter(pk=search.pk, status=Search.Status.STOPPED).first(), 400,
                         message="search stopped")
    runs = list(final_runs.runs(search))
    # The run under way finishes and is recorded after the stop (unless its heartbeat lapsed on a loaded machine:
    # then it is queued again, as any evaluation); the other waited in the queue and was not sent.
    kept_at_stop = {r.pk: (r.finished, r.fitness) for r in runs if r.status == Individual.Status.DONE}
    assert len(runs) == 2 and len(kept_at_stop) < 2, [r.status for r in runs]
    assert set(kept_at_stop) <= {first.pk} and stopped.evaluations_done == 3

    lifecycle.resume(stopped)
    search = finished(search.pk, timeout=400)
    assert search.status == Search.Status.FINISHED, search.status_reason
    runs = list(final_runs.runs(search))
    assert [r.status for r in runs] == [Individual.Status.DONE] * 2 and len(Individual.objects.filter(search=search)) == 5
    finishes = [e.data["number"] for e in Event.objects.filter(search=search, type="individual.finished")]
    assert sorted(finishes) == [0, 1, 2, runs[0].number, runs[1].number]  # each recorded once
    assert all(r.epochs_trained == 3 for r in runs)
    assert all(kept_at_stop[r.pk] == (r.finished, r.fitness) for r in runs if r.pk in kept_at_stop)  # not retrained

    best = final_runs.best_run(search)
    assert queries.search_detail(search)["final"]["best"]["fitness"] == best.fitness
    out = io.BytesIO()
    names = exports.best_zip(search, 2, out)
    prefix = f"rank01_n{best.number}"
    assert {f"{prefix}/weights.pt", f"{prefix}/model.onnx", f"{prefix}/model.py"} <= set(names)
    archive = zipfile.ZipFile(out)
    assert score_as_the_readme_says(archive, prefix, tmp_path) == pytest.approx(best.fitness, abs=1e-6)


def test_final_runs_train_on_gangs_like_any_evaluation(stack):
    """On a gang worker a final run holds the devices the search's evaluations ask for (``evaluation.devices``)."""
    from tests.engine.conftest import finished, launched
    from tests.engine.test_gang_search import gang_config, gang_worker

    gang_worker(stack, "auto", "cpu,cpu", wait=False)
    stack.control()
    config = {**gang_config(2), "strategy": {"name": "regularized", "seed": 1,
                                             "params": {"population": 3, "sample_size": 2, "max_evaluations": 4}},
              "final": {"top": 2, "epochs": 3}}
    search = finished(launched("final on gangs", config).pk, timeout=180)
    assert search.status == Search.Status.FINISHED, search.status_reason
    runs = list(final_runs.runs(search))
    assert len(runs) == 2 and all(r.status == Individual.Status.DONE for r in runs)
    assert all(int(r.metrics["gang"]) == 2 and r.device == "cpux2" for r in runs), [r.metrics for r in runs]
