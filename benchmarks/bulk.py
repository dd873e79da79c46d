"""A big search written in bulk, as if its loop had recorded every result: for load tests and benchmarks of the
dashboard (10,000 individuals in a second or two, where running them would take hours)."""
from __future__ import annotations

import datetime as dt
import time

from webapp.searches import accounting
from webapp.services import lifecycle
from webapp.searches.models import Individual, Search

CONFIG = {"space": {"name": "chain", "max_layers": 4},
          "strategy": {"name": "random", "seed": 0, "params": {"max_evaluations": 1_000_000}},
          "evaluation": {"mode": "simulated", "duration": 0.1}}


def bulk_search(owner, count: int, nodes: int = 8, name: str = "ten thousand") -> Search:
    """A running search with ``count`` final individuals on ``nodes`` nodes (one in fifty failed)."""
    search = lifecycle.create_search(owner, name, CONFIG)
    start = time.time() - 3600
    search.stats = accounting.new_stats(start)
    rows = []
    for i in range(count):
        node, finished = f"node{i % nodes}", start + 1 + i * 0.3
        ok = i % 50 != 7
        rows.append(Individual(
            search=search, number=i, genome={"layers": [{"kernel": 3, "filters": 16}]}, key=f"k{i}",
            description=f"3 modules of 1 layer: 3x3/{16 + i % 5}", status="done" if ok else "failed",
            fitness=0.5 + (i % 997) / 2000 if ok else None, node=node, device="cpu", slot=f"{node}/cpu/0",
            started=dt.datetime.fromtimestamp(finished - 2.0, dt.timezone.utc),
            finished=dt.datetime.fromtimestamp(finished, dt.timezone.utc), duration=2.0, failure="" if ok else "oom"))
        accounting.count_result(search.stats, node=node, device="cpu", slot=f"{node}/cpu/0", ok=ok, duration=2.0,
                                finished=finished, nbytes=0)
    Individual.objects.bulk_create(rows, batch_size=2000)
    search.status, search.evaluations_done, search.evaluations_total = Search.Status.RUNNING, count, count + 1
    search.started = dt.datetime.fromtimestamp(start, dt.timezone.utc)
    search.save()
    return search
