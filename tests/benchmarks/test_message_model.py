"""Seed 000's message-length model, Eq. (2), and its fit to measured packet sizes (``benchmarks/messages.py``)."""
from __future__ import annotations

import json
import math

import pytest

from benchmarks.message_model import fit_message_length, message_length_model
from nas.packet import RESULTS, Packet


def individual(i: int) -> dict:
    return {"id": i, "space": "pelee", "genome": {"stages": [[2, 3, 32], [2, 4, 32], [2, 8, 32], [2, 6, 32]]},
            "budget": {"epochs": 2}}


def test_message_length_model_matches_measured_sizes():
    ind_lens = list(range(0, math.ceil(20 / 4) + 1))
    sizes = [Packet(RESULTS, n, [individual(1)] * n).nbytes() for n in ind_lens]
    l_p, l_ind = fit_message_length(ind_lens, sizes)
    assert l_ind == pytest.approx(len(json.dumps(individual(1), separators=(",", ":"))) + 1, abs=0.5)
    for n, size in zip(ind_lens, sizes):  # affine up to the one comma the first individual goes without
        assert abs(message_length_model(l_p, l_ind, n) - size) <= 1
    assert sizes[2] - sizes[1] == sizes[5] - sizes[4]  # exactly affine from one individual on
    assert max(sizes) < 2048  # "KB level", as seed 000 reports


def test_message_length_model_is_eq_2():
    assert message_length_model(70, 130, 3) == 70 + 130 * 3


def test_fit_message_length_needs_two_points():
    with pytest.raises(ValueError, match="at least two distinct"):
        fit_message_length([3, 3], [10, 10])
