"""A one-shot search's supernet on a gang worker (``evalworker --device cpu,cpu --gang auto``): the supernet's
training runs data parallel on both devices through the gang launcher, every progress record names both ranks'
devices, the leader's checkpoint carries it over a stop and resume, and the path search and final training go
on. Real stack: Redis, the control worker, the gang worker, the ranks as processes."""
from __future__ import annotations

import pytest

from tests.engine.conftest import finished, launched, owner, wait_until
from tests.engine.test_gang_search import gang_worker

pytestmark = pytest.mark.integration

#: Tiny: digits, three supernet epochs (a stop after the first), eight paths, one final run.
CONFIG = {"kind": "oneshot", "space": {"name": "cell", "stages": 2, "cells_per_stage": 1, "channels": 8},
          "dataset": "digits", "training": {"epochs": 1, "batch_size": 64, "learning_rate": 0.003},
          "oneshot": {"supernet": {"epochs": 3, "probes": 2},
                      "strategy": {"name": "random", "seed": 4, "params": {"max_evaluations": 8}},
                      "check_ranking": 0},
          "final": {"top": 1, "epochs": 1}}


def _both_ranks(point: dict) -> bool:
    from nas.oneshot import per_device

    return [(r["rank"], r["device"]) for r in per_device(point)] == [(0, "cpu"), (1, "cpu")]


def test_the_supernet_trains_on_both_devices_of_a_gang_stops_resumes_and_the_search_goes_on(stack, client):
    from webapp.messaging import oneshot_transport
    from webapp.searches import oneshot_state
    from webapp.searches.models import Individual, Search
    from webapp.services import lifecycle

    worker = gang_worker(stack, "auto", "cpu,cpu", "gangnode", wait=False)
    stack.control()
    search = launched("oneshot on a gang", CONFIG)
    first = wait_until(lambda: (s := oneshot_state.supernet(search.pk)) is not None and s.curve and s, 300,
                       message="the supernet's first epoch")
    assert _both_ranks(first.curve[0]), first.curve  # a progress record with both ranks' devices
    lifecycle.stop(Search.objects.get(pk=search.pk))
    stopped = wait_until(lambda: Search.objects.filter(pk=search.pk, status=Search.Status.STOPPED).first(), 300,
                         message="search stopped")
    assert oneshot_state.supernet(stopped).status == Individual.Status.QUEUED
    assert oneshot_transport.checkpoint(search.pk) is not None  # the leader's, left in Redis for the resume
    lifecycle.resume(stopped)
    search = finished(search.pk, timeout=400)
    assert search.status == Search.Status.FINISHED, search.status_reason
    supernet = oneshot_state.supernet(search)
    assert supernet.status == Individual.Status.DONE and supernet.metrics["resumed_from"] >= 1
    assert supernet.metrics["devices"] == "cpu,cpu" and supernet.metrics["gang"] == "2"
    assert [int(p["epoch"]) for p in supernet.curve] == [1, 2, 3]  # one checkpoint per epoch, none trained twice
    assert all(_both_ranks(point) for point in supernet.curve)
    assert oneshot_transport.checkpoint(search.pk) is None
    assert Individual.objects.filter(search=search, role="search", status=Individual.Status.DONE).count() == 8
    assert Individual.objects.get(search=search, role="final").status == Individual.Status.DONE
    log = "".join(worker.lines)
    assert "handed back: the search was stopped" in log and "paused" not in log
    client.force_login(owner())
    page = client.get(f"/searches/{search.pk}/").content.decode()
    assert 'id="supernet-devices"' in page and 'data-rank="1" data-device="cpu"' in page
