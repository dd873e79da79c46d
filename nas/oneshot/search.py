"""The search over a supernet's paths: any strategy of ``nas.strategies``, its fitness a path's score."""
from __future__ import annotations

from collections.abc import Callable

from nas.spaces.base import Genome
from nas.strategies.base import Result, Strategy

#: Scores a batch of paths: one validation accuracy per path, ``None`` for a path that could not be scored.
ScoreBatch = Callable[[list[Genome]], list[float | None]]


def search_paths(strategy: Strategy, score: ScoreBatch, batch: int = 16,
                 on_result: Callable[[int, Genome, float | None], None] | None = None) -> Strategy:
    """Run ``strategy`` to its end, asking ``batch`` paths at a time and telling each its score; returns it
    (``strategy.best(k)`` are the best paths). ``on_result(candidate id, path, score)`` follows every tell.

    The scores are cheap and synchronous here (one process); the search's control loop does the same with path
    scorings sent to workers, many paths per task.
    """
    if batch < 1:
        raise ValueError(f"`batch` must be at least 1 (batch={batch!r}).")
    while not strategy.done:
        candidates = strategy.ask(batch)
        if not candidates:
            break  # nothing pending and nothing new: the space is exhausted
        scores = score([c.genome for c in candidates])
        for candidate, value in zip(candidates, scores, strict=True):
            strategy.tell(candidate.id, Result(fitness=value) if value is not None else Result.failed("unscored"))
            if on_result is not None:
                on_result(candidate.id, candidate.genome, value)
    return strategy
