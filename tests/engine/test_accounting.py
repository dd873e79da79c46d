"""The live accounting of a search (pure: plain data in, figures out): only the time the search was running
counts, against the slots it could use (a slot busy with another search is not its to use)."""
from __future__ import annotations

import pytest

from webapp.searches import accounting


def record(stats, finished: float, duration: float, slot: str = "n/cpu/0") -> None:
    accounting.count_result(stats, node="n", device="cpu", slot=slot, ok=True, duration=duration,
                            finished=finished, nbytes=0)


def run(stats, clock, start: int, stop: int, ours, finishes) -> None:
    """As a loop would: sample the slots every second, hand them over every five, record results as they come."""
    for t in range(start + 1, stop + 1):
        clock.sample(float(t), ours(t))
        if t % 5 == 0:
            accounting.add_slot_time(stats, clock.take())
        if t in finishes:
            record(stats, float(t), finishes[t])


def test_a_pause_is_not_running_time():
    stats = accounting.new_stats(0.0)
    # 100 s running on one slot, busy 90 s of them; stopped for 1,000 s; 100 s more after the resume.
    run(stats, accounting.SlotClock(0.0), 0, 100, lambda t: 1, {t: 9.0 for t in range(10, 101, 10)})
    accounting.end_period(stats, 100.0)
    accounting.start_period(stats, 1100.0)
    run(stats, accounting.SlotClock(1100.0), 1100, 1200, lambda t: 1, {t: 9.0 for t in range(1110, 1201, 10)})
    summary = accounting.summary(stats)
    assert summary["wall"] == pytest.approx(200.0)  # not 1,200
    assert summary["speedup"] == pytest.approx(0.9) and summary["held"] == pytest.approx(1.0)
    assert summary["efficiency"] == pytest.approx(0.9)


def test_a_slot_shared_with_other_searches_is_held_only_while_it_is_ours():
    """One slot, three searches taking turns: this one had the slot a third of the time and kept it busy
    throughout; its efficiency is 100%, not 33%."""
    stats = accounting.new_stats(0.0)
    # Ours for 10 s out of every 30, and busy with our evaluation all that time.
    run(stats, accounting.SlotClock(0.0), 0, 300, lambda t: 1 if (t - 1) // 10 % 3 == 0 else 0,
        {t: 10.0 for t in range(10, 301, 30)})
    summary = accounting.summary(stats, now=300.0)
    assert summary["speedup"] == pytest.approx(100 / 300)
    assert summary["held"] == pytest.approx(1 / 3)
    assert summary["efficiency"] == pytest.approx(1.0)
    history = accounting.history(stats)
    assert len(history) == 10 and all(0 < point["efficiency"] <= 1 for point in history)


def test_a_loop_that_was_dead_counts_its_gap_once_at_most():
    clock = accounting.SlotClock(0.0)
    clock.sample(60.0, 4)  # no sample for a minute: its loop died and was restarted
    assert clock.take() == pytest.approx(4 * accounting.MAX_SAMPLE_GAP)


def test_stats_of_before_the_periods_still_read():
    stats = accounting.new_stats(0.0)
    del stats["periods"], stats["slot_seconds"], stats["history"]
    record(stats, 50.0, 40.0, "a/cpu/0")
    record(stats, 100.0, 40.0, "b/cpu/0")
    summary = accounting.summary(stats)
    assert summary["wall"] == pytest.approx(100.0) and summary["ideal"] == 2 and summary["held"] == 2.0
    assert summary["efficiency"] == pytest.approx(0.4)


def test_history_stays_bounded():
    stats = accounting.new_stats(0.0)
    for t in range(1, 3000):
        record(stats, float(t), 1.0)
    assert len(stats["history"]) <= accounting.HISTORY
    assert stats["history"][-1][0] == pytest.approx(2999.0) or stats["history"][-1][0] >= 2990
