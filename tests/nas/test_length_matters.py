"""Whether a candidate's length is worth a probe (``nas.allocation.length_matters``): only where a short and a long
one (the search's 2.5th and 99.87th percentiles, the long one as wide as the spread could be) would be placed
differently now, by the same decision; and on which gang (``nas.allocation.length_gang``): the one it would get
untimed, where a long one would get it too."""
from __future__ import annotations

import dataclasses
import math

import pytest

from nas.allocation import Pending, ThroughputModel, decide, length_gang, length_matters, running_entry
from nas.allocation.cluster import seen_by
from nas.allocation.probing import LONG_TAIL, SHORT_TAIL, SPREAD_CONFIDENCE

NOW = 1000.0


def host(model: ThroughputModel, busy: int) -> dict:
    """A host of 4 devices (gangs of 1, 2 or 4), ``busy`` of them running one-device evaluations for 50 s."""
    return {"host": "a", "devices": 4, "sizes": [1, 2, 4], "waiting": [],
            "running": [running_entry(1, 1, NOW - 50.0, model, "a") for _ in range(busy)]}


def placements(model: ThroughputModel, records: list, pending: Pending, free: int) -> list:
    view = ThroughputModel.from_state(model.state_dict())
    seen_by(view, records, pending, NOW, "a", 1)  # the durations as the decision sees them
    median = view.single("a") * math.exp(-view.spread() ** 2 / 2)
    return [(lambda c: (c.host, c.gang))(decide(ThroughputModel.from_state(model.state_dict()), records,
                                                dataclasses.replace(pending, known=median * math.exp(t)),
                                                NOW, "a", {"a": free}, 1))
            for t in (-SHORT_TAIL * view.spread(), LONG_TAIL * view.spread_bound(SPREAD_CONFIDENCE))]


def test_the_length_matters_where_a_short_one_starts_now_and_a_long_one_waits_for_a_gang():
    model = ThroughputModel(prior_duration=100.0, prior_spread=1.0, prior_efficiency=0.9)
    records, pending = [host(model, busy=3)], Pending(1, 0)  # the last candidate, one device free
    short, long = placements(model, records, pending, free=1)
    assert short == ("a", 1) and long[0] is None and long[1] > 1
    assert length_matters(model, records, pending, NOW, "a", {"a": 1}, 1)


def test_the_length_does_not_matter_where_any_candidate_gets_the_same_gang():
    model = ThroughputModel(prior_duration=100.0, prior_spread=1.0, prior_efficiency=0.9)
    records, pending = [host(model, busy=0)], Pending(6, 0)
    assert len(set(placements(model, records, pending, free=4))) == 1
    assert not length_matters(model, records, pending, NOW, "a", {"a": 4}, 1)


def untimed_and_long(model: ThroughputModel, records: list, pending: Pending, free: int) -> list:
    """Where the decision places a candidate untimed, and one at the 99.87th percentile of the fitted spread."""
    view = ThroughputModel.from_state(model.state_dict())
    seen_by(view, records, pending, NOW, "a", 1)
    long = view.single("a") * math.exp(-view.spread() ** 2 / 2 + LONG_TAIL * view.spread())
    return [(lambda c: (c.host, c.gang))(decide(ThroughputModel.from_state(model.state_dict()), records,
                                                dataclasses.replace(pending, known=known), NOW, "a", {"a": free}, 1))
            for known in (None, long)]


def test_the_length_is_timed_on_the_gang_it_would_get_untimed_where_a_long_one_gets_it_too():
    # three left, one device busy: untimed it gets a pair, a long one too, a short one a device of its own
    model = ThroughputModel(prior_duration=100.0, prior_spread=0.6, prior_efficiency=0.8)
    records, pending = [host(model, busy=1)], Pending(3, 0)
    assert placements(model, records, pending, free=3)[0] == ("a", 1)
    assert untimed_and_long(model, records, pending, free=3) == [("a", 2), ("a", 2)]
    assert length_gang(model, records, pending, NOW, "a", {"a": 3}, 1) == 2


def test_the_length_is_timed_on_one_device_where_a_long_one_would_leave_the_untimed_gang():
    # durations spread wider: a long one would wait for all four devices, so a pair's probe would hold it up
    model = ThroughputModel(prior_duration=100.0, prior_spread=1.0, prior_efficiency=0.8)
    records, pending = [host(model, busy=1)], Pending(3, 0)
    untimed, long = untimed_and_long(model, records, pending, free=3)
    assert untimed == ("a", 2) and long != untimed
    assert length_gang(model, records, pending, NOW, "a", {"a": 3}, 1) == 1
    # where the length does not matter (any candidate gets the same gang), none
    model = ThroughputModel(prior_duration=100.0, prior_spread=1.0, prior_efficiency=0.9)
    assert length_gang(model, [host(model, busy=0)], Pending(6, 0), NOW, "a", {"a": 4}, 1) == 0


def test_a_candidates_own_length_does_not_stretch_the_others():
    # leave-one-out: the plans play the placed candidate at its probed length, the others as the search's own
    model = ThroughputModel(prior_duration=100.0, prior_spread=0.5, prior_efficiency=0.9)
    for seconds in (80.0, 100.0, 120.0, 90.0):
        model.observe("a", 1, seconds)
    before = (model.single("a"), model.spread())
    decide(model, [host(model, busy=0)], Pending(3, 10, known=4000.0), NOW, "a", {"a": 4}, 1)
    assert (model.single("a"), model.spread()) == before
    decide(model, [host(model, busy=0)], Pending(3, 10, known=100.0, probes=(4000.0,)), NOW, "a", {"a": 4}, 1)
    assert model.spread() > before[1]  # a waiting candidate's probe is one of the others: it counts


def test_the_tails_are_those_of_the_durations_the_decision_sees(monkeypatch):
    # the finished candidates all ended near 100 s, but four have run 1,000 s and go on: the decision counts them
    # (censored), so its spread is wide, and so are the lengths the rule tries (the model as stored would not know)
    import nas.allocation.probing as probing

    model = ThroughputModel(prior_duration=100.0, prior_spread=0.1, prior_efficiency=0.9)
    for seconds in (95.0, 100.0, 105.0, 98.0, 102.0, 100.0):
        model.observe("a", 1, seconds)
    records = [{"host": "a", "devices": 8, "sizes": [1, 2, 4], "waiting": [],
                "running": [running_entry(1, 1, NOW - 1000.0, model, "a") for _ in range(4)]}]
    tried = []
    real = probing.decide

    def spy(model_, records_, pending_, *args, **kwargs):
        tried.append(pending_.known)
        return real(model_, records_, pending_, *args, **kwargs)

    monkeypatch.setattr(probing, "decide", spy)
    length_matters(model, records, Pending(2, 10), NOW, "a", {"a": 4}, 1)
    view = ThroughputModel.from_state(model.state_dict())
    seen_by(view, records, Pending(2, 10), NOW, "a", 1)
    assert view.spread() > 2 * model.spread()
    median = view.single("a") * math.exp(-view.spread() ** 2 / 2)
    assert tried == pytest.approx([median * math.exp(-SHORT_TAIL * view.spread()),
                                   median * math.exp(LONG_TAIL * view.spread_bound(SPREAD_CONFIDENCE))], rel=1e-9)
    assert view.spread_bound(SPREAD_CONFIDENCE) > view.spread()  # the long one: as wide as the spread could be
