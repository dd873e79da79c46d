"""The search page's learning-curves chart in Chromium: a running individual's curve gains points as its progress
events arrive, and once it is pruned it is drawn as pruned, with its prediction dashed."""
from __future__ import annotations

import threading

import pytest

from benchmarks.bulk import bulk_search
from tests.browser.live_stack import sign_in, wait_until
from webapp.searches import broadcast
from webapp.searches.models import Individual

pytestmark = [pytest.mark.browser, pytest.mark.integration]
PRUNE = {"stop": True, "reason": "predicted 0.62 +- 0.03 at epoch 3; P(beats the 5th best) = 0.2%",
         "predicted": 0.62, "spread": 0.02, "audited": False, "epoch": 1.5}


def publish(search_id: int, kind: str, data: dict) -> None:
    """As the loop would, from another thread (Playwright's event loop runs in this one)."""
    thread = threading.Thread(target=broadcast.notify, args=(search_id, kind, data))
    thread.start()
    thread.join()


def trace(page, name: str):
    return page.evaluate("(name) => { const el = document.getElementById('chart-curves');"
                         " const t = (el.data || []).find((t) => t.name === name);"
                         " return t ? {x: Array.from(t.x), color: t.line && t.line.color, dash: t.line && t.line.dash}"
                         " : null; }", name)


def test_curves_grow_live_and_a_pruned_one_shows_as_pruned(page, web, django_user_model):
    owner = django_user_model.objects.create_user(username="ada", password="a-long-password-1")
    search = bulk_search(owner, 0, name="curves")
    sign_in(page, web, owner)
    page.goto(f"{web}/searches/{search.pk}/")
    page.wait_for_function("() => document.getElementById('live-state').textContent === 'live'", timeout=60_000)
    individual = Individual.objects.create(search=search, number=0, genome={}, key="k0", status="running",
                                           node="node0", device="cpu", slot="node0/cpu/0", started=search.created)
    for step, (epoch, accuracy) in enumerate([(0.5, 0.3), (1.0, 0.4), (1.5, 0.45)], start=1):
        data = {"id": individual.pk, "number": 0, "point": {"epoch": epoch, "step": step, "val_accuracy": accuracy}}
        if epoch == 1.5:
            data["prune"] = PRUNE
        publish(search.pk, "individual.progress", data)
        wait_until(lambda: (trace(page, "#0") or {"x": []})["x"] == [0.5, 1.0, 1.5][:step], 60,
                   message=f"{step} point(s) drawn")
    running_colour = trace(page, "#0")["color"]
    individual.status, individual.fitness, individual.finished = "pruned", 0.45, search.created
    individual.save()
    publish(search.pk, "individual.finished", broadcast.individual_event(individual))
    wait_until(lambda: trace(page, "#0 predicted") is not None, 60, message="the prediction drawn")
    assert trace(page, "#0")["color"] != running_colour, "a pruned curve is drawn differently"
    predicted = trace(page, "#0 predicted")
    assert predicted["dash"] == "dash" and predicted["x"] == [1.5, 3]
    # An individual trained for one epoch reports no progress on the way: its finished event brings its curve,
    # one point, drawn as a marker (issue 36, item 4: the panel said "No results yet" after the search ended).
    one = Individual.objects.create(search=search, number=1, genome={}, key="k1", status="done", fitness=0.8,
                                    node="node0", device="cpu", slot="node0/cpu/0", started=search.created,
                                    finished=search.created, duration=1.0,
                                    curve=[{"epoch": 1, "step": 1, "val_accuracy": 0.8, "val_loss": 0.5}])
    publish(search.pk, "individual.finished", broadcast.finished_event(one))
    wait_until(lambda: (trace(page, "#1") or {"x": []})["x"] == [1], 60, message="the one-epoch curve drawn")
    assert "markers" in page.evaluate("() => document.getElementById('chart-curves').data"
                                      ".find((t) => t.name === '#1').mode")
