"""The one-shot search (``"kind": "oneshot"``, seed 003): its configuration, checked with clear messages; and
tiny searches on digits that run the four phases (supernet training, path search, ranking check, final
training) to the end, in-process and on the real stack (Celery workers, Redis, the control worker)."""
from __future__ import annotations

import csv
import io
import zipfile

import pytest

from tests.engine.conftest import owner
from webapp.searches.config import ConfigError, check_config

#: A tiny one-shot search on digits: minutes on one CPU.
TINY = {"kind": "oneshot", "space": {"name": "cell", "stages": 2, "cells_per_stage": 1, "channels": 8},
        "dataset": "digits", "training": {"epochs": 1, "batch_size": 64, "learning_rate": 0.003},
        "oneshot": {"supernet": {"epochs": 2, "probes": 2},
                    "strategy": {"name": "regularized", "seed": 3,
                                 "params": {"population": 4, "sample_size": 2, "max_evaluations": 8}},
                    "check_ranking": 5},
        "evaluation": {"keep_weights": 1},
        "final": {"top": 1, "epochs": 1}}


def test_a_oneshot_configuration_gets_its_defaults():
    checked = check_config({"kind": "oneshot"})
    assert checked["kind"] == "oneshot" and checked["space"]["name"] == "cell"
    assert checked["oneshot"]["strategy"]["name"] == "regularized"
    assert checked["oneshot"]["strategy"]["params"]["max_evaluations"] == 100
    assert checked["oneshot"]["supernet"]["epochs"] == 20 and checked["oneshot"]["supernet"]["sampling"] == "uniform"
    assert checked["oneshot"]["supernet"]["seed"] == checked["training"]["seed"]
    assert checked["oneshot"]["check_ranking"] == 0 and "final" not in checked and "strategy" not in checked
    tiny = check_config(TINY)
    assert tiny["final"] == {"top": 1, "epochs": 1} and tiny["oneshot"]["check_ranking"] == 5
    assert tiny["oneshot"]["supernet"]["learning_rate"] == 0.003  # the training's, where the supernet says none
    assert check_config(tiny) == tiny  # a checked configuration checks to itself (drafts, clones)


@pytest.mark.parametrize("change, message", [
    ({"space": {"name": "chain"}}, "space.name: A supernet cannot hold the 'chain' space"),
    ({"space": {"name": "pelee"}}, "space.name: A supernet cannot hold the 'pelee' space"),
    ({"oneshot": {"strategy": {"name": "annealing"}}}, "oneshot.strategy.name: must be one of"),
    ({"oneshot": {"strategy": {"params": {"population": 1}}}}, "oneshot.strategy.params.population"),
    ({"oneshot": {"supernet": {"epochs": 0}}}, r"oneshot.supernet.epochs: must be in \[1, 1000\]"),
    ({"oneshot": {"supernet": {"sampling": "fair"}}}, "oneshot.supernet.sampling: must be one of uniform"),
    ({"oneshot": {"supernet": {"seed": 9}}}, "oneshot.supernet.seed: is the training's seed"),
    ({"oneshot": {"supernet": {"lr": 1}}}, "oneshot.supernet.lr: unknown field"),
    ({"oneshot": {"check_ranking": 1}}, "oneshot.check_ranking: must be 0"),
    ({"oneshot": {"check_ranking": -2}}, r"oneshot.check_ranking: must be in \[0, 500\]"),
    ({"oneshot": {"tau": 1}}, "oneshot.tau: unknown field"),
    ({"oneshot": "yes"}, "oneshot: must be an object"),
    ({"evaluation": {"mode": "simulated"}}, "evaluation.mode: a one-shot search trains"),
    ({"strategy": {"name": "random"}}, "strategy: unknown field for a one-shot search"),
    ({"final": {"top": 9, "epochs": 1}}, "final.top: must be at most 8"),
    ({"training": {"epochs": 0}}, r"training.epochs: must be in \[1, 1000\]"),
])
def test_every_bad_field_is_named(change, message):
    config = {**TINY, **change}
    if "oneshot" in change and isinstance(change["oneshot"], dict):
        config["oneshot"] = {**TINY["oneshot"], **change["oneshot"]}
    with pytest.raises(ConfigError, match=message):
        check_config(config)


@pytest.mark.django_db
def test_search_create_and_the_json_api_take_a_oneshot_search(client):
    from django.core.management import call_command
    from django.core.management.base import CommandError

    from webapp.searches.models import Search

    user = owner()
    with pytest.raises(CommandError, match="space.name: A supernet cannot hold the 'chain' space"):
        call_command("search", "create", "--name", "bad", "--owner", "tester", "--set", "kind=oneshot",
                     "--set", 'space={"name": "chain"}')
    call_command("search", "create", "--name", "one-shot", "--owner", "tester", "--set", "kind=oneshot",
                 "--set", "oneshot.check_ranking=20")
    assert Search.objects.get(name="one-shot").config["oneshot"]["check_ranking"] == 20
    client.force_login(user)
    answer = client.post("/api/searches/", {"name": "api", "config": {**TINY, "space": {"name": "pelee"}}},
                         content_type="application/json")
    assert answer.status_code == 400 and "cannot hold the 'pelee' space" in answer.content.decode()
    answer = client.post("/api/searches/", {"name": "api", "config": TINY}, content_type="application/json")
    assert answer.status_code == 201, answer.content
    page = client.get("/searches/new/oneshot/")
    assert page.status_code == 200 and b"oneshot-form" in page.content
    bad = client.post("/searches/new/oneshot/", {"name": "form", "config": '{"oneshot": {"check_ranking": 1}}'})
    assert bad.status_code == 400 and b"oneshot.check_ranking: must be 0" in bad.content
    good = client.post("/searches/new/oneshot/", {"name": "form", "config": '{"oneshot": {"check_ranking": 6}}'})
    assert good.status_code == 302
    assert Search.objects.get(name="form").config["oneshot"]["check_ranking"] == 6


def _check_result(search, tmp_path=None):
    """What every finished tiny one-shot search shows: four phases' rows, tau, the downloads."""
    from webapp.searches import final_runs, oneshot_state
    from webapp.searches.models import Individual
    from webapp.services import exports, queries

    roles = list(Individual.objects.filter(search=search).order_by("number").values_list("role", flat=True))
    assert roles == ["search"] * 8 + ["supernet"] + ["check"] * 5 + ["final"]  # paths numbered by the strategy
    supernet = oneshot_state.supernet(search)
    assert supernet.status == Individual.Status.DONE and len(supernet.curve) == 2
    assert all("train_loss" in point and "val_accuracy" in point for point in supernet.curve)
    paths = Individual.objects.filter(search=search, role="search")
    assert all(p.status == Individual.Status.DONE and p.metrics["supernet_score"] == p.fitness for p in paths)
    checks = list(oneshot_state.checks(search))
    assert all(c.status == Individual.Status.DONE and c.metrics.get("supernet_score") is not None for c in checks)
    detail = queries.search_detail(search)
    tau = detail["tau"]
    assert tau is not None and tau["n"] == 5 and -1 <= tau["tau"] <= 1
    assert tau["low"] is not None and tau["low"] <= tau["tau"] <= tau["high"]
    assert detail["oneshot"]["phase"] == "final" and len(detail["oneshot"]["ranking"]["points"]) == 5
    seconds = detail["oneshot"]["seconds"]
    assert all(seconds[phase] > 0 for phase in ("supernet", "paths", "check", "final")), seconds
    final = final_runs.runs(search).get()
    assert final.genome == final_runs.top_genomes(search, 1)[0] and final.status == Individual.Status.DONE
    assert detail["final"]["best"]["number"] == final.number
    text = io.StringIO()
    exports.individuals_csv(search, text)
    rows = list(csv.DictReader(io.StringIO(text.getvalue())))
    assert [row["role"] for row in rows].count("final") == 1
    out = io.BytesIO()
    names = exports.best_zip(search, 1, out)
    prefix = f"rank01_n{final.number}"
    assert f"{prefix}/weights.pt" in names
    if tmp_path is not None:
        from tests.scoring import score_as_the_readme_says

        scored = score_as_the_readme_says(zipfile.ZipFile(out), prefix, tmp_path)
        assert scored == pytest.approx(final.fitness, abs=0.005)  # within half a point of what the page says
    return detail


@pytest.mark.integration
def test_a_tiny_oneshot_search_runs_its_four_phases_in_process(engine, monkeypatch, client):
    from webapp.control import lease
    from webapp.control.oneshot_loop import OneShotLoop
    from webapp.searches.models import Event, Search
    from webapp.services import lifecycle
    from webapp.worker import runner

    monkeypatch.setattr(lifecycle.dispatch, "start_loop", lambda search_id: None)  # this test runs the loop itself
    search = lifecycle.launch(lifecycle.create_search(owner(), "oneshot", TINY))
    sent: list[list[str]] = []

    def send(packet: dict, signature: str, task_id: str, queue: str, first: bool = False) -> None:
        sent.append([item["evaluation"].get("mode") for item in packet["ind_set"]])
        runner.evaluate_packet(packet, signature, task_id)

    owner_id = lease.new_owner()
    assert lease.take(search.pk, owner_id)
    assert OneShotLoop(search.pk, owner_id, send=send).run() == Search.Status.FINISHED
    search.refresh_from_db()
    _check_result(search)
    assert sent[0] == ["supernet"] and any(len(modes) > 1 and set(modes) == {"path"} for modes in sent)
    phases = [e.data["phase"] for e in Event.objects.filter(search=search, type="search.oneshot").order_by("seq")]
    assert [p for i, p in enumerate(phases) if i == 0 or phases[i - 1] != p] == ["supernet", "paths", "check",
                                                                                  "final"]
    client.force_login(owner())
    page = client.get(f"/searches/{search.pk}/")
    assert page.status_code == 200
    assert b'id="oneshot-panel"' in page.content and b'id="ranking-scatter"' in page.content
    assert b'id="tau-value"' in page.content and b"supernet training" in page.content or b">done<" in page.content
    ranking = client.get(f"/searches/{search.pk}/download/ranking-check.csv")
    assert ranking.status_code == 200 and ranking.content.decode().count("\n") >= 7
    api = client.get(f"/api/searches/{search.pk}/").json()
    assert api["tau"]["tau"] == search.stats["oneshot"]["ranking"]["tau"]


def test_a_tiny_oneshot_search_on_the_real_stack(stack, tmp_path):
    """One CPU evaluation worker and the control worker: the four phases to the end, tau reported, and the Best
    zip's script scores the final model as the page says (within half a point)."""
    from tests.engine.conftest import finished, launched
    from webapp.searches.models import Search

    stack.evaluator("alpha", OMP_NUM_THREADS="1", wait=False)
    stack.control()
    search = finished(launched("oneshot on the stack", TINY).pk, timeout=600)
    assert search.status == Search.Status.FINISHED, search.status_reason
    _check_result(search, tmp_path)


test_a_tiny_oneshot_search_on_the_real_stack = pytest.mark.integration(test_a_tiny_oneshot_search_on_the_real_stack)


def test_a_stop_during_the_supernet_training_resumes_from_its_checkpoint(stack):
    """Stopped after the supernet's first epoch, the training is handed back at the end of an epoch (nothing
    recorded as failed); resumed, it goes on from the checkpoint the worker left in Redis and the search ends."""
    from tests.engine.conftest import finished, launched, wait_until
    from webapp.searches import oneshot_state
    from webapp.searches.models import Individual, Search
    from webapp.services import lifecycle

    config = {**TINY, "oneshot": {**TINY["oneshot"], "supernet": {"epochs": 4, "probes": 1}, "check_ranking": 0,
                                  "strategy": {"name": "random", "seed": 1, "params": {"max_evaluations": 4}}}}
    config.pop("final")
    stack.evaluator("alpha", OMP_NUM_THREADS="1", wait=False)
    stack.control()
    search = launched("oneshot stop and resume", config)
    wait_until(lambda: (s := oneshot_state.supernet(search.pk)) is not None and len(s.curve) >= 1, 400,
               message="the supernet's first epoch")
    lifecycle.stop(Search.objects.get(pk=search.pk))
    stopped = wait_until(lambda: Search.objects.filter(pk=search.pk, status=Search.Status.STOPPED).first(), 400,
                         message="search stopped")
    supernet = oneshot_state.supernet(stopped)
    assert supernet.status == Individual.Status.QUEUED and 1 <= len(supernet.curve) < 4, supernet.status
    lifecycle.resume(stopped)
    search = finished(search.pk, timeout=600)
    assert search.status == Search.Status.FINISHED, search.status_reason
    supernet = oneshot_state.supernet(search)
    assert supernet.status == Individual.Status.DONE and supernet.metrics["resumed_from"] >= 1
    assert [int(point["epoch"]) for point in supernet.curve] == [1, 2, 3, 4]
    assert Individual.objects.filter(search=search, role="search", status=Individual.Status.DONE).count() == 4


test_a_stop_during_the_supernet_training_resumes_from_its_checkpoint = pytest.mark.integration(
    test_a_stop_during_the_supernet_training_resumes_from_its_checkpoint)


def test_a_worker_lost_during_the_supernet_training_is_replaced_and_the_training_resumes(stack):
    """The worker training the supernet is killed after an epoch: the other worker takes the training over (the
    usual heartbeat rules) and resumes from the checkpoint the dead one left in Redis."""
    from tests.engine.conftest import finished, launched, running_evaluation, wait_until
    from webapp.searches import oneshot_state
    from webapp.searches.models import Individual, Search

    config = {**TINY, "oneshot": {**TINY["oneshot"], "supernet": {"epochs": 4, "probes": 1}, "check_ranking": 0,
                                  "strategy": {"name": "random", "seed": 2, "params": {"max_evaluations": 4}}}}
    config.pop("final")
    stack.evaluator("alpha", OMP_NUM_THREADS="1", wait=False)
    stack.evaluator("beta", OMP_NUM_THREADS="1", wait=False)
    stack.control()
    search = launched("oneshot worker lost", config)
    wait_until(lambda: (s := oneshot_state.supernet(search.pk)) is not None and len(s.curve) >= 1, 400,
               message="the supernet's first epoch")
    victim_id, beat = running_evaluation(search.pk)
    assert victim_id == oneshot_state.supernet(search.pk).pk
    stack.kill(stack.holding(beat["pid"]))
    survivor = "beta" if beat["node"] == "alpha" else "alpha"
    search = finished(search.pk, timeout=600)
    assert search.status == Search.Status.FINISHED, search.status_reason
    supernet = oneshot_state.supernet(search)
    assert supernet.status == Individual.Status.DONE and supernet.node == survivor and supernet.attempts == 2
    assert supernet.metrics["resumed_from"] >= 1
    assert [int(point["epoch"]) for point in supernet.curve] == [1, 2, 3, 4]


test_a_worker_lost_during_the_supernet_training_is_replaced_and_the_training_resumes = pytest.mark.integration(
    test_a_worker_lost_during_the_supernet_training_is_replaced_and_the_training_resumes)
