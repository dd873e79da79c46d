"""The throughput model fades measurements from their start, so a batch's short candidates, which finish first,
weigh what its long ones do; and a search's own running evaluations are timed by what its model knows now."""
import math

import pytest

from nas.allocation import Pending, ThroughputModel, decide, running_entry
from nas.allocation.cluster import host_state, timed_by


def _median(model: ThroughputModel) -> float:
    return math.exp(model._fitted()[0])


def _batch(since: int | None, decay: float = 0.02) -> ThroughputModel:
    """Twenty candidates started together: ten of 100 s finish first, then ten of 400 s."""
    model = ThroughputModel(decay=decay)
    for seconds in [100.0] * 10 + [400.0] * 10:
        model.observe("a", 1, seconds, since=since)
    return model


def test_a_batch_started_together_weighs_its_short_and_long_candidates_alike():
    unfaded = _median(_batch(None, decay=0.0))
    assert unfaded == pytest.approx(200.0, rel=1e-6)  # the geometric mean
    assert _median(_batch(0)) == pytest.approx(unfaded, rel=1e-6)
    # by finish order (no start given), the long ones, which finish last, outweigh the short ones
    assert _median(_batch(None)) > 1.05 * unfaded


def test_an_evaluation_observed_without_its_start_counts_in_full_and_the_count_is_kept():
    model = _batch(None)
    assert model.observed() == 20
    restored = ThroughputModel.from_state(model.state_dict())
    assert restored.observed() == 20
    assert _median(restored) == pytest.approx(_median(model))


def test_running_evaluations_weigh_what_their_finished_peers_weigh():
    """Ten of a batch finished (100 s each), ten still run at 300 s: with their start given, each censored one
    weighs what each finished one does; without it, in full (a running one is measured now)."""
    model = ThroughputModel(decay=0.02)
    for _ in range(10):
        model.observe("a", 1, 100.0, since=0)
    finished = model._stats[("a", 1)][0] / 10
    assert finished == pytest.approx(0.98 ** 9)
    model.running([("a", 1, 300.0, 0)] * 10 + [("a", 1, 300.0)])
    assert [entry[3] for entry in model._censored] == pytest.approx([finished] * 10 + [1.0])


def test_a_started_evaluation_publishes_the_count_it_started_at():
    model = _batch(None)
    assert running_entry(1, 2, 50.0, model, "a")["observed"] == 20
    assert running_entry(1, 1, 50.0, model, "a", single=300.0)["observed"] == 20


def test_the_searchs_own_running_evaluations_are_timed_by_its_model_now():
    """Published early with the prior's 60 s, an evaluation 200 s in is timed by the durations measured since
    (about 300 s), not as nearly done; another search's keeps what it published."""
    early = ThroughputModel(prior_duration=60.0)
    mine, theirs = running_entry(1, 1, 0.0, early, "a"), running_entry(2, 1, 0.0, early, "a")
    record = {"host": "a", "devices": 2, "sizes": [1, 2], "running": [mine, theirs]}
    model = ThroughputModel(prior_duration=60.0)
    for seconds in (280.0, 300.0, 320.0, 290.0, 310.0):
        model.observe("b", 1, seconds)
    timed = timed_by(model, record, 1)
    assert timed["running"][0]["expected"] == pytest.approx(model.duration("a", 1), rel=1e-3)
    assert timed["running"][0]["started"] == 0.0 and timed["running"][0]["observed"] == 0
    assert timed["running"][1] == theirs
    assert record["running"][0] == mine  # the published record itself is not changed
    before, after = host_state(record, 200.0), host_state(timed, 200.0)
    assert before.busy == pytest.approx((50.2, 50.2), abs=0.1)  # the prior's guess: nearly done
    assert after.busy[0] == pytest.approx(50.2, abs=0.1) and after.busy[1] > 150.0  # mine: ~300 s, 200 s in
    assert timed_by(model, record, None) is record


def test_a_probed_evaluation_keeps_the_spread_it_published_and_junk_counts_are_no_counts():
    model = _batch(None)
    exact = {**running_entry(1, 1, 0.0, model, "a", single=300.0), "spread": 0.0}  # its length known exactly
    record = {"host": "a", "devices": 2, "sizes": [1, 2], "running": [exact]}
    timed = timed_by(model, record, 1)["running"][0]
    assert timed["spread"] == 0.0 and timed["expected"] == pytest.approx(300.0, rel=1e-3)
    for junk in ("12", -5, True, 1.5):
        entry = {**running_entry(1, 1, 0.0, model, "a"), "observed": junk}
        decide(model, [{"host": "a", "devices": 2, "sizes": [1, 2], "running": [entry]}], Pending(1, 3), 100.0,
               "a", search=1)
        assert model._censored[0][3] == 1.0  # counted in full, as an older worker's entry without a count
