"""The one-shot ranking check's options (``oneshot.check_repeats``, ``check_score``, ``check_reference``,
``path_score``): checked with clear messages, and a tiny search on digits whose check trains each path twice and
ranks by validation loss on both sides, reported in the API, the page and the CSV."""
from __future__ import annotations

import csv
import io

import pytest

from tests.engine.conftest import owner
from tests.engine.test_oneshot_search import TINY
from webapp.searches.config import ConfigError, check_config

#: TINY with every check option away from its default.
CHECKED = {**TINY, "oneshot": {**TINY["oneshot"], "check_repeats": 2, "check_score": "loss",
                               "check_reference": "loss", "path_score": "loss"}}


def test_the_check_options_get_their_defaults_and_keep_what_is_set():
    oneshot = check_config({"kind": "oneshot"})["oneshot"]
    assert oneshot["check_repeats"] == 1
    assert oneshot["check_score"] == oneshot["check_reference"] == oneshot["path_score"] == "accuracy"
    checked = check_config(CHECKED)
    assert {k: checked["oneshot"][k] for k in ("check_repeats", "check_score", "check_reference", "path_score")} \
        == {"check_repeats": 2, "check_score": "loss", "check_reference": "loss", "path_score": "loss"}
    assert check_config(checked) == checked
    by_loss = check_config({**TINY, "oneshot": {**TINY["oneshot"], "path_score": "loss"}})["oneshot"]
    assert by_loss["check_score"] == "loss"  # left out: the check measures the score the search ranks by


@pytest.mark.parametrize("change, message", [
    ({"check_repeats": 0}, r"oneshot.check_repeats: must be in \[1, 5\]"),
    ({"check_repeats": 1.5}, "oneshot.check_repeats: must be an integer"),
    ({"check_score": "f1"}, "oneshot.check_score: must be one of accuracy, loss"),
    ({"check_reference": None}, "oneshot.check_reference: must be one of accuracy, loss"),
    ({"path_score": "speed"}, "oneshot.path_score: must be one of accuracy, loss"),
])
def test_every_bad_check_option_is_named(change, message):
    with pytest.raises(ConfigError, match=message):
        check_config({**TINY, "oneshot": {**TINY["oneshot"], **change}})


@pytest.mark.integration
def test_a_check_with_two_trainings_per_path_ranks_by_loss_in_process(engine, monkeypatch, client):
    from webapp.control import lease
    from webapp.control.oneshot_loop import OneShotLoop
    from webapp.searches import oneshot_state
    from webapp.searches.models import Individual, Search
    from webapp.services import lifecycle
    from webapp.worker import runner

    monkeypatch.setattr(lifecycle.dispatch, "start_loop", lambda search_id: None)  # this test runs the loop itself
    search = lifecycle.launch(lifecycle.create_search(owner(), "oneshot", CHECKED))
    seeds: dict[int, int] = {}

    def send(packet: dict, signature: str, task_id: str, queue: str, first: bool = False) -> None:
        seeds.update((item["number"], item["training"]["seed"]) for item in packet["ind_set"])
        runner.evaluate_packet(packet, signature, task_id)

    owner_id = lease.new_owner()
    assert lease.take(search.pk, owner_id)
    assert OneShotLoop(search.pk, owner_id, send=send).run() == Search.Status.FINISHED
    search.refresh_from_db()
    seed = search.config["training"]["seed"]
    checks = list(oneshot_state.checks(search))
    assert len(checks) == 10 and all(c.status == Individual.Status.DONE for c in checks)
    assert [c.genome for c in checks[:5]] == [c.genome for c in checks[5:]]  # the paths, once per repeat
    assert all(c.metrics.get("supernet_loss") is not None for c in checks[:5])  # scored on the supernet once
    assert all("supernet_score" not in c.metrics for c in checks[5:])
    paths = Individual.objects.filter(search=search, role="search")
    assert all(p.fitness == -p.metrics["val_loss"] for p in paths)  # path_score: loss
    ranking = search.stats["oneshot"]["ranking"]
    assert ranking["repeats"] == 2 and ranking["score"] == ranking["reference"] == "loss" and ranking["n"] == 5
    for point, first, second in zip(ranking["points"], checks[:5], checks[5:]):
        assert [t["number"] for t in point["trainings"]] == [first.number, second.number]
        assert point["standalone"] == pytest.approx((first.metrics["val_loss"] + second.metrics["val_loss"]) / 2)
        assert point["supernet"] == first.metrics["supernet_loss"]
    assert [seeds[c.number] for c in checks] == [seed] * 5 + [seed + 500] * 5  # each repeat its own seed
    client.force_login(owner())
    api = client.get(f"/api/searches/{search.pk}/").json()
    assert api["tau"]["against"] == ranking["against"] and api["tau"]["repeats"] == 2
    assert api["tau"]["reference_noise"]["n"] == 5 and 0 <= api["tau"]["reference_noise"]["ceiling"] <= 1
    page = client.get(f"/searches/{search.pk}/")
    assert b'id="ranking-against"' in page.content and b"mean of 2" in page.content
    assert b'id="reference-noise"' in page.content
    rows = list(csv.reader(io.StringIO(client.get(f"/searches/{search.pk}/download/ranking-check.csv")
                                       .content.decode())))
    assert ["# against", ranking["against"]] in rows and any(r[:1] == ["# reference_noise_tau"] for r in rows)
