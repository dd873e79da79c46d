"""``curve-pause`` (freeze-thaw, :mod:`nas.pruners.freeze`): what it pauses, stops and resumes, that a restored one
decides the same, that ``curve`` never pauses, and that searches are not offered it."""
from __future__ import annotations

import json

import numpy as np
import pytest

from nas.pruners import PRUNERS, get_pruner, pruner_from_state, unoffered_pruner
from nas.pruners.synthetic import SHAPES, ShapedCurve


def _drive_paused(make, seed=0, candidates=70, slots=6, resume_at=()):
    """Shaped curves of 20 epochs trained ``slots`` at a time under a pausing pruner, as the benchmark's loop does:
    a paused one frees its slot, each free slot first reviews the paused (a resumed one takes it before a new one),
    and once every candidate started the review resumes them a slot at a time. Before each event in
    ``resume_at`` the pruner is rebuilt from its JSON state. Returns the pruner, every decision and review, and the
    epochs each candidate trained."""
    def round_trip(pruner):
        return type(pruner).from_state(json.loads(json.dumps(pruner.state_dict(), allow_nan=False)))

    rng = np.random.default_rng(seed)
    pool = [ShapedCurve.draw(rng, SHAPES[i % len(SHAPES)], 20.0) for i in range(candidates)]
    values = [[c.observe(step, rng) for step in range(1, 21)] for c in pool]
    pruner, log, trained, paused_at, resumable, started = make(), [], {}, {}, [], 0
    running: list[tuple[int, int]] = []  # (candidate, next epoch), served in turn

    def fill():
        nonlocal started
        for key, decision in pruner.review(final=started == candidates, resume=1):
            log.append(("review", key, decision.to_dict()))
            if decision.stop:
                pruner.complete(key, None)
            else:
                resumable.append(int(key))
        if resumable:
            cid = resumable.pop(0)
            running.append((cid, paused_at[cid] + 1))
        elif started < candidates:
            running.append((started, 1))
            started += 1

    for _ in range(slots):
        fill()
    event = 0
    while running:
        if event in resume_at:
            pruner = round_trip(pruner)
        event += 1
        cid, step = running.pop(0)
        pruner.report(cid, step, values[cid][step - 1])
        decision = pruner.should_stop(cid)
        log.append(("report", cid, step, decision.to_dict()))
        trained[cid] = step
        if decision.pause:
            paused_at[cid] = step
            fill()
        elif decision.stop or step == 20:
            pruner.complete(cid, None if decision.stop else values[cid][-1])
            fill()
        else:
            running.append((cid, step + 1))
    return pruner, log, trained


def _pausing():
    return unoffered_pruner("curve-pause", 4, "max", 20, min_steps=2, k=3, threshold=0.1, upper=1.0)


def test_curve_pauses_then_stops_or_resumes_every_paused_candidate():
    """Freeze-thaw: a paused candidate frees its slot; the review stops it (its stated upper bound below the value
    to beat) or resumes it from the epoch it reached; at the end none is left paused, and the never-paused share
    (a seeded draw by id) is never paused."""
    from nas.pruners.base import unit

    pruner, log, trained = _drive_paused(_pausing)
    pauses = [e[1] for e in log if e[0] == "report" and e[3]["pause"]]
    reviews = [e for e in log if e[0] == "review"]
    assert pauses and not pruner.paused() and len(trained) == 70
    assert all(unit(4, "keep", str(cid)) >= 0.25 for cid in pauses)
    assert len(set(pauses)) == len(pauses)  # paused once at most
    stopped_in_review = [e for e in reviews if e[2]["stop"]]
    resumed = [e for e in reviews if not e[2]["stop"]]
    assert stopped_in_review and resumed
    for _, key, decision in stopped_in_review:
        assert decision["high"] is not None and "paused at epoch" in decision["reason"]
        assert pruner.stopped(key).stop and trained[int(key)] < 20
    # a paused one said so, with its reason, and was asked nothing in between
    reason = next(e[3]["reason"] for e in log if e[0] == "report" and e[3]["pause"])
    assert "paused until more curves completed" in reason
    assert {str(cid) for cid in pauses} == {e[1] for e in reviews}


def test_curve_never_pauses_and_reviews_nothing():
    pruner, log, _ = _drive_paused(lambda: get_pruner("curve", 4, "max", 20, min_steps=2, k=3, threshold=0.1,
                                                      upper=1.0), candidates=40)
    assert not any(e[0] == "review" or e[3]["pause"] for e in log)
    assert pruner.review(final=True) == []


def test_curve_with_pauses_resumes_exactly():
    """Rebuilt from its JSON state every few events, a pausing search decides and reviews as the uninterrupted one."""
    plain = _drive_paused(_pausing, candidates=50)
    resumed = _drive_paused(_pausing, candidates=50, resume_at=range(0, 2000, 3))
    assert resumed[1] == plain[1] and resumed[2] == plain[2]
    assert resumed[0].state_dict() == plain[0].state_dict()
    assert plain[0].state_dict()["resumed"]


def test_the_pausing_pruner_is_not_offered_to_searches():
    """The search loop cannot pause an evaluation yet: a search cannot name it, nor restore its state."""
    assert "curve-pause" not in PRUNERS
    with pytest.raises(ValueError, match="Unknown pruner 'curve-pause'"):
        get_pruner("curve-pause")
    with pytest.raises(ValueError, match="Unknown pruner 'curve-pause'"):
        pruner_from_state(_pausing().state_dict())
