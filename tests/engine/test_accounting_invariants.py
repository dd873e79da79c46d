"""Issue 36: speedup, its ideal and efficiency are finite and consistent at every moment of any search.

Hypothesis draws whole event sequences as a loop meets them (samples of the slots, hand-overs, results on
overlapping slots, failures, stops, results recorded after a stop, resumes, a dead loop's silence) and checks,
after every event, what the page's line, its chart and ``search watch`` read: 0 <= efficiency <= 1, speedup <=
ideal, nothing infinite or NaN, nothing defined before the first result, and the chart's last point equal to the
line."""
from __future__ import annotations

import math

from hypothesis import given, settings, strategies as st

from webapp.dashboard import charts
from webapp.searches import accounting
from webapp.services.progress_line import progress_line

SLOTS = ["a/cpu/0", "a/cpu/1", "b/cpu/0", "b/cuda:0/0"]

events = st.lists(st.one_of(
    st.tuples(st.just("tick"), st.floats(0.0, 8.0), st.integers(0, len(SLOTS))),  # elapse, then sample
    st.tuples(st.just("hand_over"), st.just(0.0), st.just(0)),
    st.tuples(st.just("result"), st.floats(0.0, 30.0), st.integers(0, len(SLOTS) - 1)),  # any duration, any slot
    st.tuples(st.just("failure"), st.floats(0.0, 3.0), st.integers(0, len(SLOTS) - 1)),
    st.tuples(st.just("lost"), st.just(0.0), st.integers(0, len(SLOTS) - 1)),  # failed without a worker: 0 s
    st.tuples(st.just("stop"), st.floats(0.0, 5.0), st.just(0)),
    st.tuples(st.just("resume"), st.floats(0.0, 600.0), st.just(0)),  # after a pause of any length
    st.tuples(st.just("dead"), st.floats(0.0, 120.0), st.just(0)),  # the loop died: time passes unsampled
), max_size=60)


def check(stats: dict, now: float) -> None:
    for taken in (accounting.summary(stats), accounting.summary(stats, now)):
        assert math.isfinite(taken["wall"]) and taken["wall"] >= 0
        results = taken["done"] + taken["failed"]
        if taken["speedup"] is None:
            assert taken["held"] is None and taken["efficiency"] is None and taken["waiting"]
            assert results == 0 or taken["wall"] < accounting.MIN_WALL
            assert all(node["throughput_per_hour"] is None for node in taken["nodes"])
            continue
        assert results > 0 and taken["wall"] >= accounting.MIN_WALL
        for key in ("speedup", "held"):
            assert math.isfinite(taken[key]) and taken[key] >= 0, (key, taken)
        assert taken["speedup"] <= taken["held"] * (1 + 1e-9) + 1e-12, taken
        if taken["efficiency"] is not None:
            assert 0.0 <= taken["efficiency"] <= 1.0, taken
        for node in taken["nodes"]:
            assert math.isfinite(node["throughput_per_hour"])
        line = progress_line("running", results, 30, None, taken)
        assert not any(bad in line for bad in ("inf", "nan", "e+", "e-")), line
    history = accounting.history(stats)
    for point in history:
        assert point["speedup"] is not None and point["speedup"] <= point["held"] * (1 + 1e-9) + 1e-12
        assert point["efficiency"] is None or 0.0 <= point["efficiency"] <= 1.0
    line = accounting.summary(stats)
    if history:  # the chart's last point is the line's numbers
        assert {k: history[-1][k] for k in ("speedup", "held", "efficiency")} == \
               {k: line[k] for k in ("speedup", "held", "efficiency")}
    else:
        assert line["speedup"] is None
    figure = charts.speedup(history)
    by_name = {trace["name"]: trace for trace in figure["data"]}
    assert by_name["ideal"]["y"] == [point["held"] for point in history]
    low, high = figure["layout"]["yaxis2"]["range"]
    assert all(low <= y <= high for y in by_name["efficiency"]["y"] if y is not None)


@settings(max_examples=150, deadline=None)
@given(events, st.floats(0.0, 1e9))
def test_speedup_ideal_and_efficiency_hold_after_every_event(sequence, start):
    now = start
    stats = accounting.new_stats(now)
    clock = accounting.SlotClock(now)
    running = True
    check(stats, now)
    for kind, amount, index in sequence:
        if kind == "tick":
            now += amount
            if running:
                clock.sample(now, index)
        elif kind == "hand_over" and running:
            accounting.add_slot_time(stats, clock.take(), as_of=now)
        elif kind in ("result", "failure", "lost"):
            now += 0.01
            accounting.count_result(stats, node=SLOTS[index].split("/")[0], device=SLOTS[index].split("/")[1],
                                    slot=SLOTS[index], ok=kind == "result", duration=amount, finished=now, nbytes=10)
        elif kind == "stop" and running:
            now += amount
            clock.sample(now, 1)
            accounting.add_slot_time(stats, clock.take(), as_of=now)
            accounting.end_period(stats, now)
            running = False
        elif kind == "resume" and not running:
            now += amount
            accounting.start_period(stats, now)
            clock = accounting.SlotClock(now)
            running = True
        elif kind == "dead":
            now += amount
        check(stats, now)


def test_stopped_before_the_first_result_waits_instead_of_dividing_by_nothing():
    """Issue 36, item 1: stopped 3 s after launch, 5 slot-seconds sampled, no result: no ``0.00 of 5e9``."""
    stats = accounting.new_stats(100.0)
    accounting.add_slot_time(stats, 5.2, as_of=103.0)
    accounting.end_period(stats, 103.0)
    summary = accounting.summary(stats)
    assert summary["wall"] == 3.0 and summary["speedup"] is None and summary["waiting"] == accounting.WAITING_RESULT
    assert "speedup waits for the first result" in progress_line("stopped", 0, 30, None, summary)
    assert accounting.history(stats) == []


def test_serial_time_outside_the_sampled_slot_time_cannot_lift_speedup_over_its_ideal():
    """Issue 36, item 2: a result whose evaluation ran before the loop's first sample (``0.96 of 0.9``)."""
    stats = accounting.new_stats(0.0)
    accounting.add_slot_time(stats, 9.0, as_of=10.0)  # the loop sampled 9 of its 10 s
    accounting.count_result(stats, node="a", device="cpu", slot="a/cpu/0", ok=True, duration=9.6, finished=10.0,
                            nbytes=0)
    summary = accounting.summary(stats)
    assert summary["speedup"] == summary["held"] == 0.96 and summary["efficiency"] == 1.0
