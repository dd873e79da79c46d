"""Among plans expected to end together, the allocator gives the smaller gang (more evaluations per device-hour),
except where the work left fits the free devices: the devices a wider gang takes would then run nothing else
before the search's barrier or end, and the wider gang shortens a candidate longer than the plans drew."""
from __future__ import annotations

from nas.allocation import Allocator, HostState, Pending, ThroughputModel

SIZES = (1, 2, 4)


def choose(waiting: int, more: int, running: tuple[int, ...] = (), others: tuple[HostState, ...] = (),
           keep: float = 0.0) -> int:
    # host b runs something for 1,000 s more: every plan ends then (a candidate takes ~60 s), so they tie
    model = ThroughputModel(prior_duration=60.0, prior_spread=0.0, prior_efficiency=0.9)
    hosts = [HostState("a", SIZES, 4, 4), HostState("b", SIZES, 4, 0, (1000.0,) * 4), *others]
    pending = Pending(waiting=waiting, more=more, running=running)
    choice = Allocator(model, keep=keep, probe=0).choose(hosts, pending, here="a")
    assert choice.host == "a" and choice.finish is not None and 999.0 < choice.finish < 1001.0
    return choice.gang


def test_the_last_candidate_before_a_barrier_takes_every_free_device_it_can():
    assert choose(1, 0) == 4


def test_the_last_ones_share_the_free_devices():
    assert choose(2, 0) == 2
    assert choose(4, 0) == 1


def test_with_work_for_every_device_the_smaller_gang_wins_a_tie():
    assert choose(1, 20) == 1


def test_free_devices_count_host_by_host():
    # four hosts with one device free each and this host's four (8 free in all): after a gang of 4 here, the next
    # candidate's gang of 4 fits nowhere (a gang never spans hosts); a pair each starts both now
    ones = tuple(HostState(f"c{k}", SIZES, 4, 1, (1000.0,) * 3) for k in range(4))
    assert choose(2, 0, others=ones) == 2


def test_the_last_candidate_has_no_split_to_keep():
    # the search runs one device per candidate; its last one still takes the free gang of 4 that ties (with
    # others left, the split the search runs is kept: a host would drain to a new one while its worker refills it)
    assert choose(1, 0, running=(1, 1, 1, 1), keep=0.05) == 4
    assert choose(1, 20, running=(1, 1, 1, 1), keep=0.05) == 1
    assert choose(2, 0, running=(4, 4, 4, 4), keep=0.05) == 4
