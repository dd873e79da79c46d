"""Weight-sharing (one-shot) search, the framework-free part: which spaces a supernet can hold, which path a
supernet trains at each step, the search over paths, and the ranking check's statistic. The torch side (the
supernet, its training, path scoring) is in ``evaluators.supernet*`` and ``evaluators.path_scoring``."""
from __future__ import annotations

from nas.oneshot.devices import device_key, per_device
from nas.oneshot.paths import path_for_step, probe_paths, random_paths
from nas.oneshot.ranking import (RANK_BY, check_point, check_summary, describe_check, kendall_tau, noise_ceiling,
                                 rank_value, ranking_summary, reference_noise, reference_value, repeat_seed,
                                 tau_interval)
from nas.oneshot.search import search_paths
from nas.oneshot.support import SUPERNET_SPACES, check_supernet_space, supernet_support

__all__ = [
    "RANK_BY",
    "SUPERNET_SPACES",
    "check_point",
    "check_summary",
    "check_supernet_space",
    "describe_check",
    "device_key",
    "kendall_tau",
    "noise_ceiling",
    "path_for_step",
    "per_device",
    "probe_paths",
    "random_paths",
    "rank_value",
    "ranking_summary",
    "reference_noise",
    "reference_value",
    "repeat_seed",
    "search_paths",
    "supernet_support",
    "tau_interval",
]
