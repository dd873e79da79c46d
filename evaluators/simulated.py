"""Simulated evaluation: no training, a duration drawn from a chosen distribution and a fitness that is a
fixed function of the genome. Lets dozens of workers fit on two cores while Redis, Celery, the control loop,
the database and the events are all real (tests, ``benchmarks/speedup.py``).

Faults can be injected per genome key, for the engine's fault tests: ``{"faults": {"kill": [key, ...]}}``
makes the evaluating process kill itself (only where the worker allows it, ``NAS_ALLOW_FAULTS=1``);
``oom``, ``diverge`` and ``fail`` return the failed result a real evaluation would.
Imports no torch.
"""
from __future__ import annotations

import hashlib
import os
import signal
import time
from typing import Any

import numpy as np

from evaluators.result import EvaluationResult
from nas.allocation.efficiency import gang_duration

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


def simulate(key: str, config: dict[str, Any], epochs: int = 3, slowdown: float | None = None,
             gang: int = 1) -> EvaluationResult:
    """A result like ``evaluators.evaluate.evaluate``'s, after sleeping for the drawn duration; on a ``gang`` of
    devices ``T(1) / (gang x efficiency(gang))`` with the config's ``efficiency`` (``nas.allocation.efficiency``)."""
    if slowdown is None:
        slowdown = float(os.environ.get("NAS_SIM_SLOWDOWN", "1") or 1)
    faults = config.get("faults", {})
    started = time.perf_counter()
    if key in faults.get("kill", ()) and os.environ.get("NAS_ALLOW_FAULTS") == "1":
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(gang_duration(draw_duration(config, key, slowdown), gang, config.get("efficiency")))
    total = time.perf_counter() - started
    device = ",".join(["simulated"] * gang)  # a gang records each of its devices
    for fault, (reason, message) in FAILURES.items():
        if key in faults.get(fault, ()):
            return EvaluationResult.failed(reason, message, timings={"total": total}, device=device)
    accuracy = 0.5 + 0.49 * _unit(key, "fitness")
    curve = [
        {"epoch": e, "train_loss": 2.3 * (1 - accuracy * e / epochs) + 0.05, "val_loss": 2.3 * (1 - accuracy * e / epochs),
         "val_accuracy": accuracy * e / epochs}
        for e in range(1, epochs + 1)
    ]
    metrics = {"accuracy": accuracy, "params": int(10_000 + 1_000_000 * _unit(key, "params")),
               "flops": int(1e6 + 1e8 * _unit(key, "flops"))}
    if config.get("latency"):  # a made-up latency, larger for larger networks, so the objective conflicts
        metrics["latency"] = 0.2 + 2.0 * accuracy * _unit(key, "latency")
    return EvaluationResult(
        status="ok", fitness=accuracy,
        metrics=metrics,
        curve=curve, timings={"build": 0.0, "train": total, "validate": 0.0, "total": total}, device=device,
    )
