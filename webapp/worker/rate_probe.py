"""The scaling probe a gang worker runs on a candidate before ``auto`` places it (``nas.allocation.ProbeRule``
says when, and on which gang): a few timed training steps on one device and, where the rule asks, on a wider
gang, by the one training loop (``evaluate(..., probe=STEPS)``, ``evaluators.training.step_rate``). A simulated
evaluation answers from the duration model it sleeps by (``evaluators.simulated.probe_rates``), at once.

The probe is mostly the evaluation's own first steps (``webapp.worker.device_claims.probe_inside``), which go on
training when the decision keeps the gang they run on: this separate measure times only the one-device part that
runs first where the probe has a wide part, and the whole probe of a candidate still waiting for devices
(``device_claims.probe``). A probe only informs the decision: one that fails, times out or does not apply (a
one-shot search's supernet or paths) gives ``None`` and the worker decides without it; it never fails the
candidate.
"""
from __future__ import annotations

import logging
import time
from typing import Any

log = logging.getLogger(__name__)

#: Timed optimizer steps per probe, after one warm-up step.
STEPS = 5
#: Wall seconds a probe's training may take (per gang size, data loading and, on a gang, starting its ranks
#: included); past them it is abandoned.
TIMEOUT = 60.0


def measure(individual: dict[str, Any], gangs: list[list[str]], timeout: float = TIMEOUT) -> dict[str, Any] | None:
    """The candidate's steps per second on each device list of ``gangs`` (the first: one device): ``{"steps": the
    evaluation's steps, "rates": {gang size: steps/s}, "seconds": the probe's wall seconds}``, or ``None``."""
    started = time.perf_counter()
    evaluation = individual["evaluation"]
    try:
        if evaluation.get("mode") == "simulated":
            from evaluators.simulated import probe_rates

            answer = probe_rates(individual["key"], evaluation, [len(held) for held in gangs],
                                 epochs=individual["training"].get("epochs", 3))
        elif evaluation.get("mode") in (None, "train"):
            answer = _trained(individual, gangs, timeout)
        else:
            return None
    except Exception as error:  # a probe never costs the candidate anything but its time
        log.warning("individual %s: scaling probe failed: %s", individual.get("individual"), error)
        return None
    if answer is None or 1 not in answer["rates"]:
        return None
    return {**answer, "seconds": round(time.perf_counter() - started, 3)}


def _trained(individual: dict[str, Any], gangs: list[list[str]], timeout: float) -> dict[str, Any] | None:
    from evaluators.evaluate import evaluate

    cap = individual["training"].get("max_seconds")
    training = {**individual["training"], "max_seconds": min(float(cap), timeout) if cap else timeout}
    options = {"compression": individual["evaluation"]["compression"]} \
        if individual["evaluation"].get("compression") else {}
    rates, steps = {}, None
    for held in gangs:
        device = held[0] if len(held) == 1 else held
        result = evaluate(individual["genome"], individual["space"], training, individual["dataset"], device,
                          probe=STEPS, **(options if len(held) > 1 else {}),
                          **({"startup_seconds": timeout} if len(held) > 1 else {}))
        if not result.ok or not result.metrics.get("probe_rate"):
            log.warning("individual %s: scaling probe on %s: %s %s", individual.get("individual"), ",".join(held),
                        result.failure, result.message)
            break  # what was measured so far still counts
        rates[len(held)] = float(result.metrics["probe_rate"])
        steps = float(result.metrics["probe_steps"])
    return {"steps": steps, "rates": rates} if rates else None
