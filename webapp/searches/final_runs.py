"""A search's final runs (``final``: its top genomes retrained from scratch once the search ended): which
genomes they retrain, and what the page and the API show of them. Reads only; the control loop's
``webapp.control.final`` writes them."""
from __future__ import annotations

from typing import Any

from webapp.searches.models import Individual, Search

#: What the phase is, in the page's words: not configured, waiting for the search, training, done.
STATES = ("off", "waiting", "training", "done")


def plan_of(config: dict[str, Any]) -> dict[str, int] | None:
    """The checked ``final`` section (``{"top", "epochs"}``), or ``None`` when the search has no final training."""
    final = (config or {}).get("final")
    return final if isinstance(final, dict) else None


def epochs_of(config: dict[str, Any], individual: Individual) -> int:
    """The epochs an individual trains: a final run's ``final.epochs``, else the search's ``training.epochs``."""
    plan = plan_of(config)
    if individual.role == Individual.Role.FINAL and plan is not None:
        return plan["epochs"]
    return config["training"]["epochs"]


def runs(search: Search | int):
    """The final runs, in the order they were created."""
    return Individual.objects.filter(search=search, role=Individual.Role.FINAL).order_by("number")


def searched(search: Search | int):
    """The individuals the strategy asked for (every individual but the final runs)."""
    return Individual.objects.filter(search=search, role=Individual.Role.SEARCH)


def top_genomes(search: Search | int, k: int) -> list[dict[str, Any]]:
    """The genomes of the ``k`` best successful individuals of the search, best first, each once (a genome the
    strategy evaluated twice counts once)."""
    genomes, keys = [], set()
    rows = (searched(search).filter(status=Individual.Status.DONE, fitness__isnull=False)
            .order_by("-fitness", "number").values_list("key", "genome"))
    for key, genome in rows.iterator(chunk_size=200):
        if key not in keys:
            keys.add(key)
            genomes.append(genome)
            if len(genomes) == k:
                break
    return genomes


def best_run(search: Search | int) -> Individual | None:
    """The search's result when it has final runs: the best that finished (ties by number)."""
    return (runs(search).filter(status=Individual.Status.DONE, fitness__isnull=False)
            .order_by("-fitness", "number").first())


def summary(search: Search) -> dict[str, Any] | None:
    """The final training as the page and the API show it (``None`` when the search has none): its plan, its
    state, each run (number, state, accuracy, the search's fitness of the same genome) and the best run."""
    plan = plan_of(search.config)
    if plan is None:
        return None
    rows = list(runs(search))
    searched_fitness = dict(searched(search).filter(key__in=[r.key for r in rows], status=Individual.Status.DONE)
                            .order_by("fitness").values_list("key", "fitness"))  # the best of a repeated genome last
    best = best_run(search)
    if not rows:
        state = "waiting"
    elif all(r.status in Individual.FINAL for r in rows):
        state = "done"
    else:
        state = "training"
    return {
        "top": plan["top"], "epochs": plan["epochs"], "state": state,
        "runs": [{"id": r.pk, "number": r.number, "key": r.key, "description": r.description, "status": r.status,
                  "fitness": r.fitness, "accuracy": (r.metrics or {}).get("accuracy"),
                  "search_fitness": searched_fitness.get(r.key), "epochs_trained": r.epochs_trained,
                  "node": r.node, "duration": r.duration, "failure": r.failure} for r in rows],
        "best": None if best is None else {"id": best.pk, "number": best.number, "fitness": best.fitness,
                                           "accuracy": (best.metrics or {}).get("accuracy"),
                                           "description": best.description},
    }
