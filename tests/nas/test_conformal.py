"""The conformal interval of ``nas.pruners.conformal`` on its own: coverage on exchangeable scores, the fallback
when the evidence is short, the look-alikes."""
from __future__ import annotations

import math

import numpy as np
import pytest

from nas.pruners import conformal


def _cut(level: float = 0.5, scale: float = 1.0, prefix: np.ndarray | None = None) -> conformal.Cut:
    return conformal.Cut(np.zeros(conformal.GRID) if prefix is None else prefix, level, scale)


@pytest.mark.parametrize("references", [19, 30, 80])
def test_interval_covers_exchangeable_finals_as_stated(references):
    """Scores and the new one drawn alike (exchangeable): the 90% interval holds the new final 90% to
    90 + 200 / (n + 1) % of the time, and each side misses at most 5% (plus sampling error, 3000 draws)."""
    rng = np.random.default_rng(references)
    above = below = 0
    trials = 3000
    for _ in range(trials):
        scores = rng.standard_t(3, references + 1)  # heavy tails: no normality is assumed
        made = conformal.interval(_cut(), scores[:-1], 0.05)
        final = 0.5 + scores[-1]
        above += final > made.high
        below += final < made.low
    assert made.level == pytest.approx(0.9) and made.references == references
    tolerance = 3 * math.sqrt(0.05 * 0.95 / trials)
    assert above / trials <= 0.05 + tolerance and below / trials <= 0.05 + tolerance
    assert (above + below) / trials >= 0.1 - 2 / (references + 1) - 2 * tolerance


def test_too_few_references_give_an_unbounded_side_that_stops_nothing():
    """Below ceil((1 - alpha) / alpha) scores the upper bound is infinite (19 at alpha 0.05, 9 at 0.1)."""
    for alpha, needed in ((0.05, 19), (0.1, 9)):
        assert conformal.references_needed(alpha) == needed
        scores = np.linspace(-0.5, 0.0, needed - 1)
        assert conformal.interval(_cut(), scores, alpha).high == math.inf
        assert math.isfinite(conformal.interval(_cut(), np.linspace(-0.5, 0.0, needed), alpha).high)
    assert conformal.interval(_cut(), np.zeros(0), 0.05).references == 0


def test_capped_bounds_stay_at_the_best_possible_value():
    made = conformal.interval(_cut(level=0.9, scale=0.1), np.full(40, 3.0), 0.05, cap=1.0)
    assert made.high == 1.0 and made.predicted == 1.0


def _population(close: list[float], far: int, far_score: float) -> tuple[np.ndarray, np.ndarray]:
    """Prefixes: rows near 0 (as the curve under test) with the ``close`` scores, ``far`` rows spread far away."""
    rng = np.random.default_rng(0)
    prefixes = np.vstack([rng.normal(0, 0.01, (len(close), conformal.GRID)),
                          rng.normal(0, 1, (far, conformal.GRID)) + 3.0])
    return prefixes, np.array([*close, *[far_score] * far])


def test_only_close_look_alikes_calibrate():
    """The nearest within the radius decide alone; with fewer of them than bound it, the bound is infinite
    however many far references there are (a far curve cannot speak for this one's future)."""
    prefixes, scores = _population([0.1] * 25, 40, far_score=0.9)
    made = conformal.localised(_cut(), prefixes, scores, 20, 0.05)
    assert made.high == pytest.approx(0.6) and made.low == pytest.approx(0.6) and made.references == 20
    prefixes, scores = _population([0.1] * 18, 60, far_score=-0.9)
    made = conformal.localised(_cut(), prefixes, scores, 20, 0.05)
    assert made.high == math.inf and made.references == 18
