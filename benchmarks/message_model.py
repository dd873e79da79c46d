"""Seed 000's message-length model, Eq. (2): ``L = l_p + l_ind * ind_len`` (a packet's fixed length plus one
individual's length per individual it carries), and its least-squares fit to measured packet sizes. Used by
``benchmarks/messages.py``; plain numpy, no stack."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def message_length_model(l_p: float, l_ind: float, ind_len: int) -> float:
    """Eq. (2): the length of a packet of ``ind_len`` individuals."""
    return l_p + l_ind * ind_len


def fit_message_length(ind_lens: Sequence[int], nbytes: Sequence[int]) -> tuple[float, float]:
    """Least-squares ``(l_p, l_ind)`` of Eq. (2) from measured packet sizes, e.g. ``Packet.nbytes()`` per ind_len."""
    if len(ind_lens) != len(nbytes) or len(set(ind_lens)) < 2:
        raise ValueError(
            f"Need sizes for at least two distinct ind_len values, one size each (ind_lens={list(ind_lens)}, "
            f"nbytes={list(nbytes)})."
        )
    l_ind, l_p = np.polyfit(np.asarray(ind_lens, dtype=float), np.asarray(nbytes, dtype=float), 1)
    return float(l_p), float(l_ind)
