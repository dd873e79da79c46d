"""Simulated evaluation: no training, a duration drawn from a chosen distribution and a fitness that is a
fixed function of the genome. Lets dozens of workers fit on two cores while Redis, Celery, the control loop,
the database and the events are all real (tests, ``benchmarks/speedup.py``).

With ``{"curves": "realistic"}`` the fitness is approached by a noisy saturating learning curve
(``nas.pruners.synthetic``: a hidden final value, a speed and a shape fixed by the genome's key), reported every
``report_every`` nominal steps (:data:`STEPS_PER_EPOCH` per epoch; once per epoch by default) to a ``report``
callable that can stop it (``evaluators.reporting``): the evaluation then ends at once, ``pruned``.

Faults can be injected per genome key, for the engine's fault tests: ``{"faults": {"kill": [key, ...]}}``
makes the evaluating process kill itself (only where the worker allows it, ``NAS_ALLOW_FAULTS=1``);
``oom``, ``diverge`` and ``fail`` return the failed result a real evaluation would, except on a worker started
with ``NAS_SIM_HEALED=1`` (a host whose fault was fixed: a re-run of those genomes succeeds there).
Imports no torch.
"""
from __future__ import annotations

import hashlib
import os
import signal
import time
from typing import Any

import numpy as np

from evaluators.reporting import Report, report_points, safe
from evaluators.result import PRUNED, EvaluationResult
from nas.allocation.efficiency import gang_duration
from nas.pruners.synthetic import SyntheticCurve

#: The nominal training steps of one simulated epoch (what ``report_every`` counts).
STEPS_PER_EPOCH = 100

#: How a fault name maps to the failure reason a real evaluation gives.
FAILURES = {"oom": ("oom", "simulated out of memory"), "diverge": ("diverged", "simulated non-finite loss"),
            "fail": ("error", "simulated failure")}


def _unit(key: str, salt: str) -> float:
    """A number in [0, 1) fixed by ``key`` and ``salt``."""
    digest = hashlib.sha256(f"{salt}:{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def draw_duration(config: dict[str, Any], key: str, slowdown: float = 1.0) -> float:
    """The evaluation's duration in seconds: ``duration`` (fixed), or lognormal with median ``duration`` and
    shape ``sigma``, or uniform in [0, 2 x duration]; times the worker's ``slowdown``."""
    mean = float(config.get("duration", 1.0))
    rng = np.random.default_rng(int(_unit(key, "duration") * 2**32))
    distribution = config.get("distribution", "fixed")
    if distribution == "lognormal":
        value = mean * float(rng.lognormal(0.0, float(config.get("sigma", 0.5))))
    elif distribution == "uniform":
        value = float(rng.uniform(0.0, 2 * mean))
    else:
        value = mean
    return value * slowdown


def curve_of(key: str, epochs: int) -> SyntheticCurve:
    """The realistic learning curve of the genome ``key`` over ``epochs`` epochs."""
    rng = np.random.default_rng(int(_unit(key, "curve") * 2**32))
    return SyntheticCurve.draw(rng, float(max(epochs, 1)), quality=_unit(key, "fitness"))


def _known(key: str, config: dict[str, Any]) -> dict[str, Any]:
    """The metrics a simulated genome has whatever its training: its size, and a made-up latency when asked for
    (larger for better networks, so the objectives conflict)."""
    known = {"params": int(10_000 + 1_000_000 * _unit(key, "params")), "flops": int(1e6 + 1e8 * _unit(key, "flops"))}
    if config.get("latency"):
        known["latency"] = 0.2 + 2.0 * (0.5 + 0.49 * _unit(key, "fitness")) * _unit(key, "latency")
    return known


def _realistic(key: str, config: dict[str, Any], epochs: int, duration: float, started: float,
               report: Report | None, device: str) -> EvaluationResult:
    """Sleep through the curve report by report; stop early when ``report`` says so."""
    curve, tell = curve_of(key, epochs), safe(report)
    noise = np.random.default_rng(int(_unit(key, "noise") * 2**32))
    total = STEPS_PER_EPOCH * max(epochs, 1)
    points, done, status = [], 0, "ok"
    known = _known(key, config)
    for step in report_points(STEPS_PER_EPOCH, max(epochs, 1), config.get("report_every")):
        time.sleep(duration * (step - done) / total)
        done = step
        epoch = step / STEPS_PER_EPOCH
        accuracy = float(min(max(curve.observe(epoch, noise), 0.0), 1.0))
        loss = float(2.3 * (1.0 - accuracy) + 0.02)
        points.append({"epoch": epoch, "step": step, "train_loss": loss * 0.9, "val_loss": loss,
                       "val_accuracy": accuracy})
        if step < total and tell(step, epoch, {"val_accuracy": accuracy, "val_loss": loss, **known}):
            status = PRUNED
            break
    elapsed = time.perf_counter() - started
    last = points[-1]
    return EvaluationResult(
        status=status, fitness=last["val_accuracy"],
        metrics={"accuracy": last["val_accuracy"], "epochs": last["epoch"], "steps": last["step"],
                 **known},
        curve=points, timings={"build": 0.0, "train": elapsed, "validate": 0.0, "total": elapsed}, device=device,
    )


def probe_rates(key: str, config: dict[str, Any], gangs: list[int], epochs: int = 3,
                slowdown: float | None = None) -> dict[str, Any]:
    """What a scaling probe of the genome ``key`` measures (``webapp.worker.rate_probe``), answered from the
    duration model :func:`simulate` sleeps by, at once: steps per second on each gang size of ``gangs`` and the
    evaluation's ``steps`` (:data:`STEPS_PER_EPOCH` per epoch), so ``steps / rates[1]`` is its seconds on one
    device."""
    if slowdown is None:
        slowdown = float(os.environ.get("NAS_SIM_SLOWDOWN", "1") or 1)
    steps = STEPS_PER_EPOCH * max(epochs, 1)
    single = draw_duration(config, key, slowdown)
    return {"steps": steps, "rates": {int(g): steps / gang_duration(single, int(g), config.get("efficiency"))
                                      for g in gangs}}


def simulate(key: str, config: dict[str, Any], epochs: int = 3, slowdown: float | None = None,
             gang: int = 1, report: Report | None = None, on_probe: Any = None) -> EvaluationResult:
    """A result like ``evaluators.evaluate.evaluate``'s, after sleeping for the drawn duration; on a ``gang`` of
    devices ``T(1) / (gang x efficiency(gang))`` with the config's ``efficiency`` (``nas.allocation.efficiency``).
    With ``curves: realistic`` it reports its learning curve to ``report`` and stops when told. ``on_probe(rate,
    steps) -> go_on``: the scaling probe inside the evaluation (``evaluators.training.fit``'s), asked at once
    with :func:`probe_rates`'s one-device rate; ``False`` ends it there (failure ``declined``)."""
    if slowdown is None:
        slowdown = float(os.environ.get("NAS_SIM_SLOWDOWN", "1") or 1)
    faults = config.get("faults", {})
    if os.environ.get("NAS_SIM_HEALED") == "1":
        faults = {name: keys for name, keys in faults.items() if name not in FAILURES}
    started = time.perf_counter()
    if key in faults.get("kill", ()) and os.environ.get("NAS_ALLOW_FAULTS") == "1":
        os.kill(os.getpid(), signal.SIGKILL)
    if on_probe is not None:
        answer = probe_rates(key, config, [gang], epochs, slowdown)
        if not on_probe(answer["rates"][gang], answer["steps"]):
            return EvaluationResult.failed("declined", "the decision taken at the probe moves the candidate",
                                           timings={"total": time.perf_counter() - started})
    duration = gang_duration(draw_duration(config, key, slowdown), gang, config.get("efficiency"))
    device = ",".join(["simulated"] * gang)  # a gang records each of its devices
    if config.get("curves") == "realistic" and not any(key in faults.get(f, ()) for f in FAILURES):
        return _realistic(key, config, epochs, duration, started, report, device)
    time.sleep(duration)
    total = time.perf_counter() - started
    for fault, (reason, message) in FAILURES.items():
        if key in faults.get(fault, ()):
            return EvaluationResult.failed(reason, message, timings={"total": total}, device=device)
    accuracy = 0.5 + 0.49 * _unit(key, "fitness")
    curve = [
        {"epoch": e, "train_loss": 2.3 * (1 - accuracy * e / epochs) + 0.05, "val_loss": 2.3 * (1 - accuracy * e / epochs),
         "val_accuracy": accuracy * e / epochs}
        for e in range(1, epochs + 1)
    ]
    return EvaluationResult(
        status="ok", fitness=accuracy,
        metrics={"accuracy": accuracy, **_known(key, config)},
        curve=curve, timings={"build": 0.0, "train": total, "validate": 0.0, "total": total}, device=device,
    )
