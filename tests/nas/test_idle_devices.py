"""Among plans expected to end together, the allocator gives the smaller gang (more evaluations per device-hour),
except where the work left fits the free devices: the devices a wider gang takes would then run nothing else
before the search's barrier or end, and the wider gang shortens a candidate longer than the plans drew."""
from __future__ import annotations

from nas.allocation import Allocator, HostState, Pending, ThroughputModel

SIZES = (1, 2, 4)


def choose(waiting: int, more: int) -> int:
    # host b runs something for 1,000 s more: every plan ends then (a candidate takes ~60 s), so they tie
    model = ThroughputModel(prior_duration=60.0, prior_spread=0.0, prior_efficiency=0.9)
    hosts = [HostState("a", SIZES, 4, 4), HostState("b", SIZES, 4, 0, (1000.0,) * 4)]
    choice = Allocator(model, keep=0.0, probe=0).choose(hosts, Pending(waiting=waiting, more=more), here="a")
    assert choice.host == "a" and choice.finish is not None and 999.0 < choice.finish < 1001.0
    return choice.gang


def test_the_last_candidate_before_a_barrier_takes_every_free_device_it_can():
    assert choose(1, 0) == 4


def test_the_last_ones_share_the_free_devices():
    assert choose(2, 0) == 2
    assert choose(4, 0) == 1


def test_with_work_for_every_device_the_smaller_gang_wins_a_tie():
    assert choose(1, 20) == 1
