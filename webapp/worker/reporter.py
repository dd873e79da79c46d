"""The evaluation worker's reporter: each intermediate validation value of a training goes to the search's loop
as a ``progress`` message, and the answer is whether the loop's pruner asked to stop it (one Redis key per
individual, read right after each report; workers never read the database)."""
from __future__ import annotations

import math
import time

from evaluators.reporting import Report
from webapp.messaging import messages, transport


def reporter(origin: messages.Origin, attempt: int) -> Report:
    """The ``report(step, epoch, metrics) -> stop`` an evaluator calls for the individual of ``origin``."""

    def report(step: int, epoch: float, metrics: dict[str, float]) -> bool:
        values = {str(name): float(value) for name, value in metrics.items()
                  if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)}
        message = messages.Progress(origin, attempt=attempt, step=int(step), epoch=float(epoch), metrics=values,
                                    time=time.time())
        transport.push(origin.search, messages.to_dict(message))
        return transport.is_pruned(origin.search, origin.individual)

    return report
