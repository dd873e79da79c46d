"""What one evaluation of this search takes on a gang of ``g`` devices of a host, learned from measurements.

Durations are modelled in log space: ``log T(host, g) = m + b_host + c_g - log(g x prior_efficiency(g)) + noise``.
``m`` is the search's typical one-device duration, ``b_host`` how much slower or faster a host is, ``c_g`` how much
worse a gang of ``g`` scales than the prior curve says: one slope for every gang size times the prior's own loss
``-log prior_efficiency(g)``, so ``efficiency(g) = prior_efficiency(g) ** (1 + x)`` (``c_1 = 0``; pooled, so pairs
measured tell about quads), and the noise is the spread of durations from candidate to candidate (lognormal,
standard deviation ``spread()``). Every measurement of every host and gang size informs ``m`` and the spread
(pooled: the same search's candidates); the slope is shrunk towards 0 (the prior) by how much the measured spread
leaves it uncertain, so one slow candidate on a pair does not make pairs look bad; host effects towards 0 by how far
the hosts' durations lie apart beyond what that spread puts between them (identical hosts share one duration).
Before any measurement: ``prior_duration`` seconds on one device, the prior efficiency curve of
:mod:`nas.allocation.efficiency` and a spread of ``prior_spread``. Older measurements fade (``decay``), so a search
whose candidates grow is followed; each fades from its start (``observe``'s ``since``), so the short candidates of a
batch, which finish first, weigh what its long ones weigh.
"""
from __future__ import annotations

import copy
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from nas.allocation.efficiency import EfficiencySpec, check_efficiency, efficiency

#: How far (standard deviation, log scale) a host's effect is expected to lie from the typical host before data.
EFFECT_PRIOR = 0.5
#: How many hosts the prior ``EFFECT_PRIOR`` counts for against the hosts measured (``_host_variance``).
EFFECT_WEIGHT = 1.0
#: How far (standard deviation) the exponent of the efficiency curve is expected to lie from the prior's before data:
#: ``efficiency(g) = prior(g) ** (1 + x)``; around 0.8 per added device, 0.6 and 0.97 are x = 1.3 and -0.86.
SLOPE_PRIOR = 1.5
#: The efficiency curve assumed before measurements: 0.8 kept per device added to the gang, the middle (in log
#: scale) of the candidates one meets: from 0.6 (small models, the AllReduce dominates) to 0.97 (large ones).
PRIOR_PER_ADDED_DEVICE = 0.8
#: The spread of durations (standard deviation of their log) assumed before measurements: the middle, in log scale,
#: of the spreads one meets (0.3: one cell's candidates of similar size; 1.0: sizes over a decade). At 1.0 every
#: first decision bet on long tails (gangs), which lost where candidates scale badly.
PRIOR_SPREAD = 0.6
#: How many measurements the prior spread counts for.
SPREAD_WEIGHT = 4.0
#: How far (standard deviation of the log) one scaling probe's rate ratio lies from the search's efficiency curve:
#: the noise of timing a few steps and how differently the search's candidates scale.
PROBE_NOISE = 0.1
#: The efficiency kept per device added to a gang by a candidate that scales well and by one that scales badly: the
#: range one meets (large models to small ones, where the AllReduce dominates). Scaling is measured only where the
#: decision after a probe reading either (``as_if_probed``) would not give every candidate one device.
SCALES_WELL, SCALES_BADLY = 0.97, 0.6


class ThroughputModel:
    """Expected seconds per evaluation per (host, gang size).

    Args:
        prior_duration: mean seconds one evaluation is assumed to take on one device before any measurement.
        prior_efficiency: the efficiency curve assumed before measurements (see ``check_efficiency``; default
            ``PRIOR_PER_ADDED_DEVICE`` per device added).
        prior_weight: how many measurements the prior duration counts for (0: the first measurement replaces it;
            a wrong prior duration would otherwise be read as a gang size that scales badly).
        decay: how much every older measurement fades per new one (0: never; the default keeps ~50 in view).
        prior_spread: the spread of durations (standard deviation of their logarithm) assumed before measurements.
    """

    def __init__(self, prior_duration: float = 60.0, prior_efficiency: EfficiencySpec = None,
                 prior_weight: float = 0.0, decay: float = 0.02, prior_spread: float = PRIOR_SPREAD) -> None:
        if not (isinstance(prior_duration, (int, float)) and math.isfinite(prior_duration) and prior_duration > 0):
            raise ValueError(f"`prior_duration` must be a positive number of seconds (got {prior_duration!r})")
        if not 0 <= decay < 1:
            raise ValueError(f"`decay` must be in [0, 1) (got {decay!r})")
        if prior_weight < 0:
            raise ValueError(f"`prior_weight` must be at least 0 (got {prior_weight!r})")
        if not 0 <= prior_spread <= 5:
            raise ValueError(f"`prior_spread` must be in [0, 5] (got {prior_spread!r})")
        self.prior_duration = float(prior_duration)
        if prior_efficiency is None:
            prior_efficiency = {str(g): PRIOR_PER_ADDED_DEVICE ** (g - 1) for g in (2, 4, 8, 16, 32, 64)}
        self.prior_efficiency = check_efficiency(prior_efficiency, "prior_efficiency")
        self.prior_weight = float(prior_weight)
        self.decay = float(decay)
        self.prior_spread = float(prior_spread)
        #: (host, gang) -> [weight, sum of x, sum of x^2, count], x = log of the one-device-equivalent seconds
        self._stats: dict[tuple[str, int], list[float]] = {}
        self._fit: tuple[float, dict[str, float], dict[int, float], float] | None = None
        self._spread_count = SPREAD_WEIGHT  #: how many measurements the fitted spread rests on, prior included
        self._censored: tuple[tuple[str, int, float, float], ...] = ()  #: (host, gang, seconds run, weight)
        #: scaling probes: [precision of the slope they add, its precision-weighted target, probes per gang size]
        self._pairs: list[float] = [0.0, 0.0]
        self._probed_sizes: dict[int, int] = {}
        self._probed: tuple[tuple[str, float], ...] = ()

    def _equivalent(self, gang: int) -> float:
        return math.log(gang * efficiency(gang, self.prior_efficiency))

    def observe(self, host: str, gang: int, seconds: float, since: int | None = None) -> None:
        """Record that one evaluation on a gang of ``gang`` devices of ``host`` took ``seconds``; ``since``: how many
        evaluations the model had observed when it started (:meth:`observed` then; ``None``: as many as now). It
        fades from its start, as the others started with it do: fading by finish order would weigh the long ones of
        candidates started together above their short ones, which finish first (a search's durations read ~10%
        long after 50 of 120, and the plans bet on gangs to shorten a tail that was not there)."""
        if gang < 1:
            raise ValueError(f"`gang` must be at least 1 (got {gang})")
        if not (math.isfinite(seconds) and seconds > 0):
            return  # a failed or instant evaluation says nothing about throughput
        weight = self._faded(since)
        if self.decay:
            for stat in self._stats.values():
                for index in range(3):  # the count stays: it says what was ever measured
                    stat[index] *= 1 - self.decay
        x = math.log(seconds) + self._equivalent(gang)
        stat = self._stats.setdefault((host, gang), [0.0, 0.0, 0.0, 0])
        stat[0] += weight
        stat[1] += weight * x
        stat[2] += weight * x * x
        stat[3] += 1
        self._fit = None

    def _faded(self, since: int | None) -> float:
        """The weight of an evaluation that started when the model had observed ``since`` (``None``: now)."""
        if since is None or not self.decay:
            return 1.0
        return (1 - self.decay) ** min(max(0, self.observed() - since), 10_000)

    def observed(self) -> int:
        """How many evaluations were observed, on every host and gang size."""
        return sum(int(stat[3]) for stat in self._stats.values())

    def observe_rates(self, host: str, rates: Mapping[int, float]) -> None:
        """Record one candidate's scaling probe on ``host``: its training steps per second on gangs of each size
        measured (at least two; the same candidate, the same steps). Their ratio is the efficiency of the larger gang
        relative to the smaller, free of the candidate-to-candidate spread of durations that the finished
        evaluations confound it with: it moves the fitted slope with the precision of ``PROBE_NOISE``."""
        sizes = sorted(int(g) for g in rates)
        if any(g < 1 for g in sizes) or any(not (math.isfinite(r) and r > 0) for r in rates.values()):
            raise ValueError(f"`rates` must map gang sizes >= 1 to positive steps per second (got {dict(rates)!r})")
        base = sizes[0]
        for gang in sizes[1:]:
            # log T(g) = m - log g + cost(g) (1 - slope): the ratio of two rates gives cost difference x (1 - slope)
            dk = self._cost(gang) - self._cost(base)
            if dk <= 0:
                continue
            ratio = math.log(rates[gang] * base / (rates[base] * gang))
            self._pairs[0] += dk * dk / PROBE_NOISE ** 2
            self._pairs[1] += dk * (ratio + dk) / PROBE_NOISE ** 2
            self._probed_sizes[gang] = self._probed_sizes.get(gang, 0) + 1
        self._fit = None

    def as_if_probed(self, host: str, gang: int, kept: float) -> ThroughputModel:
        """A copy of the model (its running and probed candidates included) after a scaling probe on ``host`` read
        ``kept`` of the efficiency kept per device added to a gang of ``gang``: what one probe would teach it."""
        model = copy.deepcopy(self)
        model.observe_rates(host, {1: 1.0, gang: gang * kept ** (gang - 1)})
        return model

    def probed(self, entries: Sequence[tuple[str, float]]) -> None:
        """The search's candidates whose one-device duration a probe measured but that have not finished, each
        ``(host, seconds on one device)``: each counts as a measured duration until it finishes (and is observed)."""
        probed = tuple((str(h), float(t)) for h, t in entries if t > 0)
        if probed != self._probed:
            self._probed = probed
            self._fit = None

    def rates_measured(self, gang: int | None = None) -> int:
        """How many scaling probes measured gangs of ``gang`` devices against a smaller one (``None``: of any size;
        the fitted slope is one for every size)."""
        return sum(self._probed_sizes.values()) if gang is None else self._probed_sizes.get(gang, 0)

    def running(self, entries: Sequence[tuple[str, int, float] | tuple[str, int, float, int | None]]) -> None:
        """The search's evaluations running now, each ``(host, gang, seconds it has run)`` and optionally how many
        evaluations the model had observed when it started (:meth:`observe`'s ``since``): each counts as one
        duration of at least that long (censored), faded from its start as a finished one is, so the fit is not
        biased towards the candidates that happen to end first (the short ones, and the ones on big gangs, which end
        sooner)."""
        # the weight it would have had, had it finished at the last observation (as its finished peers have)
        censored = tuple((str(e[0]), int(e[1]), float(e[2]), self._faded(None if len(e) < 4 or e[3] is None
                                                                          else int(e[3]) + 1))
                         for e in entries if e[2] > 0 and e[1] >= 1)
        if censored != self._censored:
            self._censored = censored
            self._fit = None

    def _with_censored(self, m: float, b: dict[str, float], delta: float, variance: float
                       ) -> dict[tuple[str, int], list[float]]:
        """The statistics with each running evaluation's expected ``x`` and ``x^2`` given that it lasts at least as
        long as it has run, under the current fit (one E step)."""
        stats = self._base_stats()
        sd = math.sqrt(max(variance, 1e-6))
        for host, gang, elapsed, faded in self._censored:
            mu = m + b.get(host, 0.0) + self._effect(gang, delta)
            alpha = (math.log(elapsed) + self._equivalent(gang) - mu) / sd
            survive = 0.5 * math.erfc(alpha / math.sqrt(2))
            density = math.exp(-alpha * alpha / 2) / math.sqrt(2 * math.pi)
            hazard = density / survive if survive > 1e-12 else max(alpha, 0.0)
            first = mu + sd * hazard
            second = mu * mu + 2 * mu * sd * hazard + variance * (1 + alpha * hazard)
            stat = stats.setdefault((host, gang), [0.0, 0.0, 0.0, 0])
            stat[0] += faded
            stat[1] += faded * first
            stat[2] += faded * second
        return stats

    def _base_stats(self) -> dict[tuple[str, int], list[float]]:
        """The finished evaluations' statistics with the probed, unfinished ones as measured one-device durations."""
        stats = {key: list(stat) for key, stat in self._stats.items()}
        for host, seconds in self._probed:
            x = math.log(seconds)
            stat = stats.setdefault((host, 1), [0.0, 0.0, 0.0, 0])
            stat[0] += 1.0
            stat[1] += x
            stat[2] += x * x
        return stats

    def _slope(self, lean: float, spread_k: float, variance: float) -> float:
        """The fitted slope: the durations' evidence (``lean``, ``spread_k``), the probes' and the prior's."""
        precision, target = self._pairs
        variance = max(variance, 1e-6)
        return (-lean / variance + target) / (spread_k / variance + 1.0 / SLOPE_PRIOR ** 2 + precision)

    def _fitted(self) -> tuple[float, dict[str, float], float, float]:
        """(m, host effects, the log of how much better each added device scales than the prior, spread): a few
        rounds of backfitting with shrinkage; the running evaluations enter as censored durations (EM)."""
        if self._fit is not None:
            return self._fit
        prior_var = self.prior_spread ** 2
        base = self._base_stats()
        if not any(stat[0] for stat in base.values()):
            self._fit = (math.log(self.prior_duration) - prior_var / 2, {}, self._slope(0.0, 0.0, prior_var),
                         self.prior_spread)
            self._spread_count = SPREAD_WEIGHT
            return self._fit
        m = math.log(self.prior_duration) - prior_var / 2
        b: dict[str, float] = {}
        delta = 0.0
        variance = prior_var
        m0 = m
        rounds = 12 if self._censored else 6
        for round_ in range(rounds):
            # censored durations join once a first fit of the finished ones exists
            stats = self._with_censored(m, b, delta, variance) if self._censored and round_ >= 2 else base
            weight = sum(stat[0] for stat in stats.values())
            hosts = {h for h, _ in stats}
            for host in hosts:
                b.setdefault(host, 0.0)
            c = {g: self._effect(g, delta) for _, g in stats}
            total = sum(s[1] - s[0] * (b[h] + c[g]) for (h, g), s in stats.items())
            m = (self.prior_weight * m0 + total) / (self.prior_weight + weight)
            # one slope for every gang size, fitted on the devices each adds (pooled: pairs inform quads), shrunk
            # towards the prior curve by how much the spread leaves it uncertain
            rows = [(self._cost(g), s, b[h]) for (h, g), s in stats.items()]
            kbar = sum(k * s[0] for k, s, _ in rows) / weight
            lean = sum((k - kbar) * (s[1] - s[0] * bh) for k, s, bh in rows)
            spread_k = sum(s[0] * (k - kbar) ** 2 for k, s, _ in rows)
            if spread_k > 0 or self._pairs[0] > 0:
                delta = self._slope(lean, spread_k, variance)
            c = {g: self._effect(g, delta) for _, g in stats}
            residuals = {}  # host -> (sum of its residuals, their weight)
            for host in hosts:
                rows_h = [(s, c[g]) for (h, g), s in stats.items() if h == host]
                residuals[host] = (sum(s[1] - s[0] * (m + cg) for s, cg in rows_h), sum(s[0] for s, _ in rows_h))
            shrink = variance / _host_variance(residuals.values(), variance)
            used = 0.0  # how many measurements the host effects fit away: each host's n / (n + shrink)
            for host, (total_h, n) in residuals.items():
                keep = 1.0 / (n + shrink) if len(hosts) > 1 and n + shrink > 0 else 0.0
                b[host] = total_h * keep
                used += n * keep
            squares = 0.0
            for (h, g), s in stats.items():
                mu = m + b[h] + c[g]
                squares += max(0.0, s[2] - 2 * mu * s[1] + s[0] * mu * mu)
            # the spread counts only the measurements the host effects left free: the first four lengths, on four
            # hosts, each fit its own host's effect, and read as a spread of 0.43 where candidates spread 1.0
            self._spread_count = SPREAD_WEIGHT + max(weight - used, 0.0)
            variance = (SPREAD_WEIGHT * prior_var + squares) / self._spread_count
        self._fit = (m, b, delta, math.sqrt(variance))
        return self._fit

    def _effect(self, gang: int, delta: float) -> float:
        """How much slower (log) a gang of ``gang`` is than the prior curve says, given the fitted slope: the slope
        per added device, never past perfect efficiency."""
        if gang <= 1:
            return 0.0
        return max(-self._cost(gang) * delta, -self._cost(gang))

    def _cost(self, gang: int) -> float:
        """What the prior curve says a gang of ``gang`` loses, ``-log(prior efficiency)``: the scale the fitted
        slope multiplies (per added device under the default prior, per doubling under a per-doubling one)."""
        return -math.log(efficiency(gang, self.prior_efficiency)) if gang > 1 else 0.0

    def measurements(self, gang: int) -> int:
        """How many evaluations on gangs of ``gang`` devices were measured, on every host."""
        return sum(int(s[3]) for (_, g), s in self._stats.items() if g == gang)

    def measured(self, host: str) -> dict[int, tuple[float, int]]:
        """The gang sizes measured on ``host``: size -> (geometric mean seconds, weight of its measurements)."""
        return {gang: (math.exp(s[1] / s[0] - self._equivalent(gang)), round(s[0]))
                for (name, gang), s in sorted(self._stats.items()) if name == host and s[0] > 0}

    def single(self, host: str) -> float:
        """Expected seconds on one device of ``host`` (a host never measured: the search's typical host)."""
        return self.duration(host, 1)

    def duration(self, host: str, gang: int) -> float:
        """Expected (mean) seconds of one evaluation on ``gang`` devices of ``host``."""
        m, b, delta, spread = self._fitted()
        return math.exp(m + b.get(host, 0.0) + self._effect(gang, delta) + spread ** 2 / 2 - self._equivalent(gang))

    def uncertainty(self, gang: int) -> float:
        """How unsure the model is of a gang size's duration through its efficiency, signed: the posterior standard
        deviation of the fitted slope times how far ``gang``'s prior loss lies from the sizes measured (their
        weighted mean; one device before any measurement, the prior's anchor). Sizes on the same side share the sign: a
        slope better than fitted makes the bigger gangs faster and the smaller slower. Until two gang sizes are
        measured the slope keeps the prior's ``SLOPE_PRIOR``."""
        variance = max(self.spread() ** 2, 1e-6)
        weight = sum(s[0] for s in self._stats.values())
        kbar, spread_k = 0.0, 0.0
        if weight:
            kbar = sum(self._cost(g) * s[0] for (_, g), s in self._stats.items()) / weight
            spread_k = sum(s[0] * (self._cost(g) - kbar) ** 2 for (_, g), s in self._stats.items())
        return (self._cost(gang) - kbar) / math.sqrt(spread_k / variance + 1.0 / SLOPE_PRIOR ** 2 + self._pairs[0])

    def spread(self) -> float:
        """How much one evaluation's duration varies: the standard deviation of ``log(seconds)`` around its
        expectation (the prior's until measurements outweigh it)."""
        return self._fitted()[3]

    def spread_bound(self, z: float) -> float:
        """How wide the spread of durations could be: its upper credible bound at ``z`` standard normal deviates
        (1.645: 95%), from how many measurements it rests on (the prior's ``SPREAD_WEIGHT`` and those the host
        effects leave free). The fitted variance times ``k`` over the chi-square's lower quantile with ``k``
        degrees of freedom (Wilson-Hilferty): four lengths on four hosts leave a spread of 0.54 that could be 1.0."""
        spread = self.spread()
        k = self._spread_count
        lower = k * max(1 - 2 / (9 * k) - z * math.sqrt(2 / (9 * k)), 0.1) ** 3
        return spread * math.sqrt(k / lower)

    def efficiency(self, host: str, gang: int) -> float:
        """The expected parallel efficiency ``T(1) / (g x T(g))`` of a gang of ``gang`` on ``host``."""
        return self.single(host) / (gang * self.duration(host, gang))

    def per_device_hour(self, host: str, gang: int) -> float:
        """Expected completed evaluations per device-hour on gangs of ``gang`` devices of ``host``."""
        return 3600.0 / (gang * self.duration(host, gang))

    def state_dict(self) -> dict[str, Any]:
        """The model as JSON data (the loop keeps it with the search)."""
        return {
            "prior_duration": self.prior_duration, "prior_efficiency": self.prior_efficiency,
            "prior_weight": self.prior_weight, "decay": self.decay, "prior_spread": self.prior_spread,
            "stats": [[host, gang, *stat] for (host, gang), stat in sorted(self._stats.items())],
            "pairs": list(self._pairs), "probed_sizes": sorted(self._probed_sizes.items()),
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> ThroughputModel:
        """The model saved by :meth:`state_dict`."""
        model = cls(state["prior_duration"], state.get("prior_efficiency"), state.get("prior_weight", 0.0),
                    state.get("decay", 0.02), state.get("prior_spread", 0.5))
        for host, gang, weight, total, squares, count in state.get("stats", []):
            model._stats[(str(host), int(gang))] = [float(weight), float(total), float(squares), int(count)]
        model._pairs = [float(v) for v in state.get("pairs", (0.0, 0.0))]
        model._probed_sizes = {int(g): int(n) for g, n in state.get("probed_sizes", ())}
        for host, gang, mean, count in state.get("estimates", []):  # saved before the log-space model
            x = math.log(mean) + model._equivalent(int(gang))
            model._stats[(str(host), int(gang))] = [float(count), count * x, count * x * x, int(count)]
        return model


def _host_variance(residuals: Iterable[tuple[float, float]], variance: float) -> float:
    """How far hosts' effects spread (their variance, log scale), from each host's residuals ``(sum, weight)``:
    each host's squared mean residual less what the durations' own ``variance`` puts in it (method of moments),
    pooled over the hosts by their weight (a host seen little, or long ago, says little), with the prior
    ``EFFECT_PRIOR`` counted as ``EFFECT_WEIGHT`` hosts of the mean weight. Identical hosts then pull every host's
    effect to 0 (a host's few candidates say little about it: with the prior alone, 16 identical hosts of four
    candidates each looked 1.4-1.8x apart, and the plans believed it), hosts that differ keep theirs."""
    rows = [(total, n) for total, n in residuals if n > 1e-6]
    if not rows:
        return EFFECT_PRIOR ** 2
    weight = sum(n for _, n in rows)
    prior = EFFECT_WEIGHT * weight / len(rows)
    excess = sum(total * total / n - variance for total, n in rows)  # n x ((total / n)^2 - variance / n)
    return max((prior * EFFECT_PRIOR ** 2 + excess) / (prior + weight), 1e-4)


def time_left(expected: float, elapsed: float, spread: float) -> float:
    """Expected seconds left of an evaluation expected (mean) to take ``expected`` seconds, ``elapsed`` seconds in,
    when durations are lognormal with ``spread``: ``E[T - t | T > t]`` (a long-running one is likely a long one)."""
    if expected <= 0:
        return 0.0
    if elapsed <= 0 or spread <= 0:
        return max(0.0, expected - max(0.0, elapsed))
    mu = math.log(expected) - spread ** 2 / 2
    z = (math.log(elapsed) - mu) / spread
    survive = 0.5 * math.erfc(z / math.sqrt(2))
    if survive < 1e-12:
        return elapsed * spread ** 2 / max(z, 1.0) if z > 0 else 0.0  # far in the tail: ~t sigma / z
    partial = expected * 0.5 * math.erfc((z - spread) / math.sqrt(2))
    return max(0.0, partial / survive - elapsed)
