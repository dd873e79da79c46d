"""Two to six searches side by side: which ones (checked against who asks), their best so far against
evaluations and against running time, their Pareto fronts, their configurations with the differences marked,
a table of figures and one CSV of all their individuals. Plain data in, plain data out: the figures are drawn
by ``webapp.dashboard.compare_charts``, the page and the downloads by ``webapp.dashboard.compare_views``.

Every speedup here is ``accounting.summary``'s (the one definition the search page reads too).
"""
from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Iterable
from typing import Any, TextIO

from webapp.searches import accounting
from webapp.searches.models import Individual, Search
from webapp.services import queries

MIN_SEARCHES, MAX_SEARCHES = 2, 6
#: Searches whose figures still change: the compare page asks again while one of them is in such a state.
LIVE = (Search.Status.RUNNING, Search.Status.STOPPING)


class ComparisonError(ValueError):
    """A comparison that cannot be made; ``status`` is the HTTP status the view answers with."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def parse_ids(values: Iterable[str]) -> list[int]:
    """The search ids of a query: ``ids=1,2`` or ``ids=1&ids=2`` (the list page's form sends the second), in the
    order given, each once; 2 to 6 of them."""
    ids: list[int] = []
    for value in values:
        for part in str(value).split(","):
            part = part.strip()
            if not part:
                continue
            if not part.isdigit() or len(part) > 18:
                raise ComparisonError(f"`ids` must be search numbers separated by commas (got {part!r:.40}).")
            if int(part) not in ids:
                ids.append(int(part))
    if not MIN_SEARCHES <= len(ids) <= MAX_SEARCHES:
        raise ComparisonError(f"Choose {MIN_SEARCHES} to {MAX_SEARCHES} different searches to compare "
                              f"(got {len(ids)}: `ids=1,2`).")
    return ids


def chosen(user, ids: list[int]) -> list[Search]:
    """The searches ``ids``, in that order, if ``user`` may see every one (their own; staff: any), else a 404
    that names the first one missing (unknown and another user's read the same, as everywhere else)."""
    found = {s.pk: s for s in queries.visible_searches(user).filter(pk__in=ids).select_related("owner")
             .defer("strategy_state")}
    missing = [pk for pk in ids if pk not in found]
    if missing:
        raise ComparisonError(f"No search #{missing[0]} among yours: it does not exist or belongs to another user.",
                              status=404)
    return [found[pk] for pk in ids]


def label(search: Search) -> str:
    """A search's name in the legends: its number first (two searches may share a name)."""
    return f"#{search.pk} {search.name}"


def _running_seconds(stats: dict[str, Any], first: float, finished: float) -> float:
    """Seconds the search had been running when a result came (pauses between Stop and Resume left out)."""
    if stats and stats.get("first_dispatch") is not None:
        return accounting.running_time(stats, finished)
    return max(finished - first, 0.0)


def best_curve(search: Search) -> dict[str, list[float]]:
    """The best fitness so far after each evaluation with a final result (failed ones count: they used a slot),
    against the evaluation's rank and against the running time at its result. Only the points where the best
    improves are kept, and the last evaluation's, so a step line of a 10,000-evaluation search stays small.
    The results are read in order without their times (a date costs more to read than the rest of a row), and
    only the kept points' times are read after."""
    rows = (Individual.objects.filter(search=search, status__in=Individual.FINAL, finished__isnull=False)
            .order_by("finished", "number").values_list("pk", "fitness", "status"))
    kept: list[tuple[int, int, float]] = []  # (rank, pk, best)
    current, rank, last = None, 0, None
    for pk, fitness, status in rows.iterator(chunk_size=5000):
        rank += 1
        last = pk
        if fitness is not None and status != Individual.Status.PRUNED and (current is None or fitness > current):
            current = fitness  # a pruned value is partial: never "best"
            kept.append((rank, pk, current))
    if current is not None and kept[-1][0] != rank:
        kept.append((rank, last, current))
    moments = dict(Individual.objects.filter(pk__in=[pk for _, pk, _ in kept]).values_list("pk", "finished"))
    first = (Individual.objects.filter(search=search, status__in=Individual.FINAL, finished__isnull=False)
             .order_by("finished").values_list("finished", flat=True).first())
    stats = search.stats or {}
    return {"evaluations": [rank for rank, _, _ in kept],
            "seconds": [_running_seconds(stats, first.timestamp(), moments[pk].timestamp()) for _, pk, _ in kept],
            "best": [best for _, _, best in kept]}


def pareto_of(search: Search) -> dict[str, Any] | None:
    """The objectives (the first two) and objective values of every successful individual of a
    multi-objective search (its front is drawn from them), or ``None`` for a single-objective search."""
    objectives = queries.objectives_of(search)
    if not objectives:
        return None
    return {"objectives": [list(o) for o in objectives[:2]], "points": queries.pareto_points(search)}


def figures_row(search: Search) -> dict[str, Any]:
    """One line of the comparison's table: state, best, evaluations, device-hours, speedup."""
    row = queries.search_row(search)
    summary = accounting.summary(search.stats or {})
    stats = search.stats or {}
    # Device-seconds busy: a gang of g devices counts g (recorded as ``device_busy``); older stats: the serial time.
    busy = stats.get("device_busy", stats.get("serial", 0.0)) or 0.0
    return {
        "id": search.pk, "label": label(search), "name": search.name, "owner": row["owner"], "status": search.status,
        "best": search.best_fitness, "done": row["done"], "total": row["total"], "failed": summary["failed"],
        "device_hours": busy / 3600.0, "wall": summary["wall"], "speedup": summary["speedup"],
        "held": summary["held"], "efficiency": summary["efficiency"], "waiting": summary["waiting"],
    }


def flatten(config: Any, prefix: str = "") -> dict[str, Any]:
    """A configuration as dotted fields (``strategy.params.population``), lists kept whole."""
    if isinstance(config, dict) and config:
        flat: dict[str, Any] = {}
        for key, value in config.items():
            flat.update(flatten(value, f"{prefix}{key}."))
        return flat
    return {prefix[:-1]: config} if prefix else {}


def _shown(value: Any) -> str:
    return "—" if value is None or value == {} else value if isinstance(value, str) else json.dumps(value)


def config_rows(searches: list[Search]) -> list[dict[str, Any]]:
    """Every field of any of the configurations, with each search's value (``—`` where it has none) and
    whether they differ; fields that differ first, then in the configurations' order."""
    flats = [flatten(search.config or {}) for search in searches]
    fields = list(dict.fromkeys(field for flat in flats for field in flat))
    rows = []
    for field in fields:
        values = [flat.get(field) for flat in flats]
        differs = any(json.dumps(v, sort_keys=True) != json.dumps(values[0], sort_keys=True) for v in values)
        rows.append({"field": field, "values": [_shown(v) for v in values], "differs": differs})
    return sorted(rows, key=lambda row: not row["differs"])


def comparison(searches: list[Search]) -> dict[str, Any]:
    """Everything the compare page shows, per search in the order chosen."""
    return {
        "searches": [{**figures_row(s), "curve": best_curve(s), "pareto": pareto_of(s)} for s in searches],
        "config": config_rows(searches),
        "live": any(s.status in LIVE for s in searches),
    }


def comparison_csv(searches: list[Search], log_of: Callable[[Search], str], out: TextIO) -> int:
    """Every search's own CSV log (``log_of(search)``: the individuals of an architecture search, the generations
    of a weight search) in one file, a ``search`` column (its number) first and ``search_name`` second; the
    columns are the union of theirs, in the order first seen (a search's missing columns are empty). Returns
    the number of rows."""
    tables = []
    header: list[str] = []
    for search in searches:
        reader = csv.DictReader(io.StringIO(log_of(search)))
        rows = list(reader)
        tables.append((search, rows))
        header.extend(name for name in reader.fieldnames or () if name not in header)
    writer = csv.DictWriter(out, ["search", "search_name", *header], restval="", lineterminator="\n")
    writer.writeheader()
    count = 0
    for search, rows in tables:
        for row in rows:
            writer.writerow({"search": search.pk, "search_name": search.name, **row})
            count += 1
    return count
