"""A gang's attempt that lost a rank to a signal (``evaluators.data_parallel.RANK_LOST``: a rank killed, not the
candidate's fault) is run again on the same devices, ``NAS_MAX_ATTEMPTS`` runs in all; the result keeps what
happened to the earlier ones (``rank_lost`` in its metrics). Genome evaluations and a one-shot search's supernet
(which resumes from the checkpoint its leader left) both go through it."""
from __future__ import annotations

import logging
from collections.abc import Callable

from django.conf import settings

from evaluators.result import EvaluationResult

log = logging.getLogger(__name__)


def again_if_rank_lost(run: Callable[[], EvaluationResult], held: list[str]) -> EvaluationResult:
    """``run()``, again while its result is a lost rank, at most ``NAS_MAX_ATTEMPTS`` times."""
    from evaluators.data_parallel import RANK_LOST

    lost: list[str] = []
    for _ in range(max(1, settings.NAS_MAX_ATTEMPTS)):
        result = run()
        if result.failure != RANK_LOST:
            break
        lost.append(result.message)
        log.warning("a gang on %s lost a rank: %s; trying again", ",".join(held), result.message)
    if lost:
        result = result.with_fields(metrics={**result.metrics, "rank_lost": " | ".join(lost)[:500]})
    return result
