"""A worker that cannot read a search's data set (issue 35): its evaluations are re-placed on a worker that can,
on the real stack (Redis, Celery workers, the database). Two CPU evaluation workers on different nodes; the
registered set is a path that ``alpha`` reads, while ``beta`` is a host without the shared file system
(``NAS_DATA_FETCH=always``: it never reads the path) and without a route to the web server (its fetch goes to
a closed port). Every individual completes on ``alpha``; each attempt ``beta`` made is recorded with its
reason, and the search's page and JSON API say that beta cannot read the set."""
from __future__ import annotations

import pytest
from django.test import Client

from tests.browser.live_stack import free_port
from tests.engine.conftest import finished, launched, owner
from tests.evaluators.digit_folders import folder_search_config, write_digit_folders
from webapp.messaging import data_reach, messages
from webapp.searches.models import Attempt, Individual, Search
from webapp.services import datasets

CONFIG = folder_search_config("tiny_digits", evaluations=6)


def _register(tmp_path, settings):
    settings.NAS_DATASET_ROOTS = [str(tmp_path)]
    root = write_digit_folders(tmp_path / "digits", classes=(0, 1, 2), per_class=20, corrupt=False)
    return datasets.register(owner(), "tiny_digits", str(root))


def _blind(stack, tmp_path, node: str, wait: bool = True) -> str:
    """An evaluation worker on ``node`` that can neither read the shared path nor fetch from the server."""
    closed = f"http://127.0.0.1:{free_port()}"
    stack.evaluator(node, OMP_NUM_THREADS="1", NAS_DATA_FETCH="always", NAS_SERVER_URL=closed,
                    NAS_DATA_CACHE=str(tmp_path / f"{node}-cache"), wait=wait)
    return closed


def test_a_skipped_message_of_an_earlier_worker_still_parses():
    origin = {"search": 1, "individual": 2, "number": 0, "task_id": "t", "node": "a", "device": "cpu",
              "slot": "a/cpu/0"}
    old = messages.parse({"type": "skipped", "version": messages.VERSION, **origin, "reason": "search stopped"})
    assert (old.failure, old.attempt) == ("", 0)
    new = messages.parse(messages.to_dict(messages.Skipped(old.origin, "why", failure="data_unreadable", attempt=2)))
    assert (new.failure, new.attempt, new.reason) == ("data_unreadable", 2, "why")


@pytest.mark.integration
def test_a_worker_that_cannot_read_the_set_hands_its_evaluations_to_one_that_can(stack, tmp_path, settings):
    _register(tmp_path, settings)
    closed = _blind(stack, tmp_path, "beta", wait=False)
    stack.evaluator("alpha", OMP_NUM_THREADS="1", wait=False)
    stack.control()
    search = finished(launched("half blind", CONFIG).pk, timeout=300)
    individuals = list(Individual.objects.filter(search=search))
    assert search.status == Search.Status.FINISHED, (search.status_reason, [i.message for i in individuals])
    assert len(individuals) == 6 and all(i.status == Individual.Status.DONE and i.node == "alpha"
                                         for i in individuals), [(i.status, i.node, i.message) for i in individuals]
    # beta was handed the first packet (two workers, two packets at least): that attempt is a row, with why
    tried = list(Attempt.objects.filter(individual__search=search, node="beta"))
    assert tried, list(Attempt.objects.filter(individual__search=search).values("node", "outcome", "reason"))
    for attempt in tried:
        assert attempt.outcome == Attempt.Outcome.FAILED and attempt.reason == "data_unreadable", attempt.reason
        assert attempt.message.startswith("worker beta ") and "'tiny_digits'" in attempt.message, attempt.message
        assert f"could not fetch it from {closed}/api/datasets/archives/" in attempt.message, attempt.message
    # ... and it did not count against NAS_MAX_ATTEMPTS; the individual then ran on alpha
    assert all(Attempt.objects.filter(individual=a.individual, node="alpha", outcome=Attempt.Outcome.OK).exists()
               for a in tried)
    assert set(data_reach.nodes(search.pk)) == {"beta"}
    client = Client()
    client.force_login(owner())
    notices = client.get(f"/api/searches/{search.pk}/").json()["data_unreadable"]
    assert len(notices) == 1 and notices[0] == tried[0].message, notices  # "worker beta ... the data set 'tiny_digits'
    # at PATH, and could not fetch it from URL: why"
    page = client.get(f"/searches/{search.pk}/").content.decode()
    assert 'id="data-unreadable"' in page and "worker beta (host " in page and "could not fetch it from" in page


@pytest.mark.integration
def test_when_no_worker_can_read_the_set_each_evaluation_fails_naming_every_node_tried(stack, tmp_path, settings):
    _register(tmp_path, settings)
    _blind(stack, tmp_path, "beta", wait=False)
    _blind(stack, tmp_path, "gamma", wait=False)
    stack.control()
    search = finished(launched("blind", {**CONFIG, "strategy": {**CONFIG["strategy"], "params": {
        "population": 2, "sample_size": 2, "max_evaluations": 2}}}).pk, timeout=300)
    assert search.status == Search.Status.FAILED, search.status
    for individual in Individual.objects.filter(search=search):
        assert individual.status == Individual.Status.FAILED and individual.failure == "data_unreadable"
        assert individual.message.startswith("no live worker can read the data set; tried 2 node(s): beta: worker "
                                             "beta "), individual.message
        assert "gamma: worker gamma " in individual.message, individual.message


def test_a_notice_names_its_worker_once():
    from webapp.searches import data_notices

    stats: dict = {}
    assert data_notices.note(stats, "beta", "worker beta (host h) cannot read the data set 'd' at /p, and ...")
    assert not data_notices.note(stats, "beta", "worker beta (host h) cannot read the data set 'd' at /p, and ...")
    assert data_notices.note(stats, "alpha", "the archive fetched for abc is refused")
    assert data_notices.notices(stats) == ["worker alpha: the archive fetched for abc is refused",
                                           "worker beta (host h) cannot read the data set 'd' at /p, and ..."]
    assert data_notices.notices(None) == []
