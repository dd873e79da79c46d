"""Task messages a search loop did not send, or that carry nonsense, are refused by the worker with a logged
reason, and nothing changes: no attempt counted, no message to the loop, no individual touched."""
from __future__ import annotations

import pytest

from tests.engine.conftest import assert_each_recorded_once, finished, launched, simulated_config
from webapp.messaging import signing as packets, transport
from webapp.searches.models import Individual
from webapp.messaging.dispatch import EVALUATE_BATCH

pytestmark = pytest.mark.integration


def item(individual: Individual, **changes) -> dict:
    config = individual.search.config
    return {"search": individual.search_id, "individual": individual.pk, "number": individual.number,
            "key": individual.key, "genome": individual.genome, "space": config["space"],
            "dataset": config["dataset"], "training": config["training"], "evaluation": config["evaluation"],
            **changes}


def snapshot(individual: Individual) -> tuple:
    individual.refresh_from_db()
    return (individual.status, individual.attempts, individual.fitness, individual.finished,
            transport.starts(individual.search_id, individual.pk))


def test_unsigned_unknown_space_bad_genome_and_garbage_messages_are_refused(stack, celery_app):
    worker = stack.evaluator("alpha", wait=False)
    stack.control()
    search = finished(launched("messages", simulated_config(evaluations=4, duration=0.1)).pk)
    victim = Individual.objects.filter(search=search).first()
    before = snapshot(victim)
    # Without its done marker a valid message for it would run again: these must not.
    transport.client().delete(f"nas:done:{search.pk}:{victim.pk}")

    unsigned, _ = packets.build([item(victim)])
    forged = dict(unsigned, ind_set=[item(victim, genome={"layers": []})])
    unknown_space, unknown_signature = packets.build([item(victim, space={"name": "transformer"})])
    bad_genome, bad_signature = packets.build([item(victim, genome={"layers": [{"kernel": 4, "filters": 16}]})])
    garbage = ["not", "a", "packet"]
    send = celery_app.send_task
    send(EVALUATE_BATCH, args=[unsigned], queue="eval")  # no signature at all
    send(EVALUATE_BATCH, args=[forged, packets.sign(unsigned)], queue="eval")  # signed something else
    send(EVALUATE_BATCH, args=[unknown_space, unknown_signature], queue="eval")
    send(EVALUATE_BATCH, args=[bad_genome, bad_signature], queue="eval")
    send(EVALUATE_BATCH, args=[garbage, packets.sign({})], queue="eval")
    send(EVALUATE_BATCH, args=[unsigned, ""], queue="eval", serializer="pickle")

    for reason in ("bad or missing signature", "unknown or invalid space", "genome rejected by space chain",
                   "a packet must be a JSON object", "pickle"):
        worker.wait_for(reason, timeout=20)
    # Each refused once, the pickle too (it is now refused by the guard, before Celery would, and recorded).
    assert worker.text.count("rejected task message") == 6
    assert len(transport.dead_letters()) == 6
    assert snapshot(victim) == before
    assert transport.client().llen(transport.results_key(search.pk)) == 0
    assert_each_recorded_once(search, 4)

    # The worker is unharmed: the next search runs on it.
    after = finished(launched("after", simulated_config(evaluations=3, duration=0.1)).pk)
    assert_each_recorded_once(after, 3)
