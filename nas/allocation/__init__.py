"""Gangs of devices per evaluation and the allocator that sizes them (seed 003's two levels of parallelism).

- :mod:`~nas.allocation.efficiency`: ``T(g) = T(1) / (g x efficiency(g))`` and the gang sizes a worker allows.
- :mod:`~nas.allocation.model`: the throughput per (host, gang size), learned from measured durations.
- :mod:`~nas.allocation.policy`: the choice per dispatch, with its reason in words.
- :mod:`~nas.allocation.drawing`: the draws the choice's plans are played out over.
- :mod:`~nas.allocation.cluster`: the hosts as gang workers publish them, and the decision made from them.
- :mod:`~nas.allocation.probing`: when a worker times a candidate's steps before placing it (the scaling probe), and
  whether its length could change where it goes.
- :mod:`~nas.allocation.handing_back`: when a worker told to wait gives its candidate back to the queue.

Pure Python and numpy: the control loop, the benchmarks and the tests use it without torch.
"""
from __future__ import annotations

from nas.allocation.cluster import decide, host_state, running_entry
from nas.allocation.handing_back import hand_back, idle_processes, reserved, room, spare
from nas.allocation.efficiency import check_efficiency, efficiency, gang_duration, gang_sizes
from nas.allocation.model import ThroughputModel, time_left
from nas.allocation.policy import Allocation, Allocator, HostState, Pending
from nas.allocation.probing import (ProbeRule, length_gang, length_matters, scaling_gang, scaling_matters,
                                   single_from_gang, single_seconds)

__all__ = [
    "Allocation",
    "Allocator",
    "HostState",
    "Pending",
    "ProbeRule",
    "ThroughputModel",
    "check_efficiency",
    "decide",
    "host_state",
    "running_entry",
    "single_from_gang",
    "single_seconds",
    "time_left",
    "efficiency",
    "gang_duration",
    "gang_sizes",
    "hand_back",
    "length_gang",
    "length_matters",
    "scaling_gang",
    "scaling_matters",
    "idle_processes",
    "reserved",
    "room",
    "spare",
]
