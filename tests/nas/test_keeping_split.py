"""The allocator keeps the split the search runs (``Allocator(keep=...)``) unless another is expected to end more
than ``keep`` sooner: a change of split costs more than the plans see. A probed candidate's own gang still follows
its length."""
from __future__ import annotations

import pytest

from nas.allocation import Allocator, HostState, Pending, ThroughputModel

HOSTS = [HostState("a", (1, 2, 4), 4, 4)]


class Planned(Allocator):
    """An allocator whose plans are given: (gang of this one, gang of the rest) -> expected end."""

    def __init__(self, ends: dict[tuple[int, int], float], **kwargs) -> None:
        super().__init__(ThroughputModel(prior_duration=100.0), probe=0, **kwargs)  # no size-measuring probes
        self.ends = ends

    def plans(self, hosts, sizes, work):
        return dict(self.ends)


ENDS = {(1, 1): 1500.0, (2, 2): 1030.0, (4, 4): 1000.0, (2, 4): 1100.0, (4, 2): 1050.0}


def test_the_running_split_is_kept_while_another_is_not_clearly_sooner():
    choice = Planned(ENDS).choose(HOSTS, Pending(10, 20, running=(2, 2, 4)))
    assert (choice.gang, choice.rest) == (2, 2)
    assert "against ~1,000 s with 4 for this one and 4 each after it: kept, the split the search runs" in choice.reason
    assert "less than 5%" in choice.reason


@pytest.mark.parametrize("kwargs, running, ends, gang, kept", [
    ({"keep": 0.0}, (2, 2), ENDS, 4, False),  # no keeping: the soonest
    ({}, (), ENDS, 4, False),  # nothing runs yet: nothing to keep
    ({}, (2, 2), {**ENDS, (2, 2): 1060.0}, 4, False),  # more than 5% later: changed
    ({"keep": 0.1}, (2, 2), {**ENDS, (2, 2): 1060.0}, 2, True),  # within a wider keep
    ({}, (4, 4, 2), ENDS, 4, False),  # the running split is already the soonest
])
def test_a_change_of_split_needs_more_than_keep(kwargs, running, ends, gang, kept):
    choice = Planned(ends, **kwargs).choose(HOSTS, Pending(10, 20, running=running))
    assert choice.gang == gang and choice.rest == gang
    assert ("kept, the split the search runs" in choice.reason) == kept


def test_a_probed_candidate_is_not_held_to_the_running_split():
    choice = Planned(ENDS).choose(HOSTS, Pending(10, 20, running=(2, 2), known=900.0))
    assert choice.gang == 4 and "kept" not in choice.reason


def test_keep_is_checked():
    with pytest.raises(ValueError, match="`keep` must be in"):
        Allocator(ThroughputModel(), keep=1.5)
