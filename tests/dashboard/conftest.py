"""Fixtures for the dashboard's tests: users, and a search with individuals and events written as the engine's
loop writes them (through ``recording`` and ``broadcast``), without running workers."""
from __future__ import annotations

import time

import numpy as np
import pytest

from nas.spaces import space_from_config
from nas.strategies import Candidate
from webapp.searches import accounting, broadcast
from webapp.services import lifecycle
from webapp.control import recording
from webapp.messaging import messages
from webapp.searches.models import Search

CONFIG = {
    "space": {"name": "chain", "max_layers": 4},
    "strategy": {"name": "regularized", "seed": 3, "params": {"population": 4, "sample_size": 2, "max_evaluations": 12}},
    "training": {"epochs": 2},
    "evaluation": {"mode": "simulated", "duration": 0.2},
}


@pytest.fixture(autouse=True)
def memory_layer(settings, redis_url, celery_app):
    """Unit tests publish to an in-memory channel layer (the integration tests use Redis); actions (launch,
    stop) still flag the search in the session's real Redis and queue the loop's task there."""
    from webapp.messaging import transport

    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    settings.REDIS_URL = redis_url
    transport.reset_clients()
    yield
    transport.reset_clients()


@pytest.fixture
def users(django_user_model):
    make = django_user_model.objects.create_user
    return {"owner": make("owner", password="pw-owner-123"), "other": make("other", password="pw-other-123"),
            "staff": make("staff", password="pw-staff-123", is_staff=True)}


def fill(search: Search, count: int, failed: tuple[int, ...] = (), nodes=("alpha", "beta")) -> Search:
    """Create ``count`` individuals and record a result for each, as the loop would."""
    space = space_from_config(search.config["space"])
    rng = np.random.default_rng(0)
    genomes, keys = [], set()
    while len(genomes) < count:
        genome = space.sample(rng)
        if space.key(genome) not in keys:
            keys.add(space.key(genome))
            genomes.append(genome)
    candidates = [Candidate(id=i, genome=g, key=space.key(g), generation=i // 4,
                            parents=(space.key(genomes[i - 1]),) if i else (), operator="mutation" if i else "sample")
                  for i, g in enumerate(genomes)]
    start = time.time() - 100
    search.stats = accounting.new_stats(start)
    search.status = Search.Status.RUNNING
    individuals = recording.create_individuals(search, space, candidates)
    events = []
    for i, individual in enumerate(individuals):
        node = nodes[i % len(nodes)]
        ok = i not in failed
        result = {"status": "ok" if ok else "failed", "fitness": 0.5 + i / 100 if ok else None,
                  "failure": None if ok else "oom", "message": "" if ok else "simulated out of memory",
                  "metrics": {"accuracy": 0.5 + i / 100, "params": 1000 * (i + 1), "flops": 10**6} if ok else {},
                  "timings": {"train": 1.0, "total": 1.5}, "curve": [{"epoch": 1, "train_loss": 1.0, "val_accuracy": 0.5}]}
        message = messages.parse({
            "type": "result", "search": search.pk, "individual": individual.pk, "number": individual.number,
            "task_id": "t", "node": node, "device": "cpu", "slot": f"{node}/cpu/0", "attempt": 1, "result": result,
            "started": start + 5 * i, "finished": start + 5 * i + 4, "duration": 4.0, "packet_bytes": 0})
        recording.record_result(search, individual, message, nbytes=100)
        events.append(("individual.finished", broadcast.individual_event(individual)))
    search.save()
    broadcast.notify_many(search.pk, events)
    search.refresh_from_db()
    return search


@pytest.fixture
def search(users):
    return fill(lifecycle.create_search(users["owner"], "mine", CONFIG), 10, failed=(3,))


@pytest.fixture
def owner_client(client, users):
    client.force_login(users["owner"])
    return client
