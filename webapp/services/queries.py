"""Read-only queries for the dashboard, the JSON API and the exports: who may see a search, the list row,
the snapshot a live page starts from, a page of individuals (sorted, filtered), an individual's lineage.

Nothing here writes; the engine's own modules do that.
"""
from __future__ import annotations

import dataclasses
from types import SimpleNamespace
from typing import Any

from django.db.models import F, Q, QuerySet
from django.db.models.fields.json import KeyTransform

from webapp.searches import accounting, data_notices, final_runs, oneshot_state
from webapp.searches.models import Individual, Search
from webapp.searches.broadcast import individual_event

#: Columns of the individuals table a user may sort by (a leading "-" sorts descending).
SORTABLE = ("number", "fitness", "status", "node", "generation", "operator", "duration", "finished", "attempts")
PER_PAGE = 25
MAX_PER_PAGE = 500


class QueryError(ValueError):
    """A bad query parameter (sort key, page number ...): the view answers 400 with this message."""


def visible_searches(user) -> QuerySet[Search]:
    """The searches ``user`` may see: their own, or every one for staff."""
    if not getattr(user, "is_authenticated", False):
        return Search.objects.none()
    searches = Search.objects.all()
    return searches if user.is_staff else searches.filter(owner=user)


def search_row(search: Search) -> dict[str, Any]:
    """What the list and the API show of one search."""
    config = search.config or {}
    duration = None
    if search.started and search.finished:
        duration = (search.finished - search.started).total_seconds()
    elif search.started and (search.stats or {}).get("first_dispatch") is not None:
        duration = accounting.summary(search.stats)["wall"]
    total = search.evaluations_total
    return {
        "id": search.pk, "name": search.name, "owner": search.owner.get_username(),
        "space": (config.get("space") or {}).get("name", ""),
        "strategy": (config.get("strategy") or (config.get("oneshot") or {}).get("strategy") or {}).get("name", ""),
        "dataset": config.get("dataset", ""), "status": search.status, "status_reason": search.status_reason,
        "done": search.evaluations_done, "total": total,
        "progress": round(100.0 * search.evaluations_done / total, 1) if total else 0.0,
        "best_fitness": search.best_fitness,
        "created": search.created.isoformat(), "started": search.started.isoformat() if search.started else None,
        "finished": search.finished.isoformat() if search.finished else None, "duration": duration,
        "cloned_from": search.cloned_from_id, "event_seq": search.event_seq,
    }


def search_detail(search: Search) -> dict[str, Any]:
    """The API's search: its row, configuration, accounting, best, and its final training where it has one
    (``final_runs.summary``: each final run's state and accuracy, and the best run, the search's result)."""
    final = final_runs.summary(search)
    oneshot = {"oneshot": oneshot_state.summary(search), "tau": oneshot_state.tau(search)} \
        if search.config.get("kind") == "oneshot" else {}  # tau: None until the ranking check is done
    return {**search_row(search), "config": search.config, "summary": accounting.summary(search.stats),
            "best": search.best, "data_unreadable": data_notices.notices(search.stats),
            **({"final": final} if final is not None else {}), **oneshot}


#: The columns ``individual_event`` reads. It reads them as attributes, so plain rows of these give the same
#: dicts without building a model instance per row, and of the metrics (timings, curves' summaries ...) only
#: the one it shows is read out of the JSON: together half of a big snapshot's build.
EVENT_COLUMNS = ("id", "number", "status", "fitness", "key", "description", "generation", "operator", "role", "node",
                 "device", "slot", "failure", "attempts", "dispatched", "started", "finished", "duration")


#: The metrics a row of the individuals table shows (``params`` is in the event already).
ROW_METRICS = ("accuracy", "flops", "latency_ms")


def _plain(rows: QuerySet[Individual], metrics: tuple[str, ...], *columns: str) -> QuerySet:
    """Plain rows of :data:`EVENT_COLUMNS` and ``columns``, with the ``metrics`` named (as ``metric.NAME``)."""
    named = {f"metric.{name}": KeyTransform(name, "metrics") for name in dict.fromkeys((*metrics, "devices", "allocation", "allocation_finish"))}
    return rows.values(*EVENT_COLUMNS, *columns, **named)


def _event(row: dict[str, Any]) -> dict[str, Any]:
    """``individual_event`` of a plain row of :func:`_plain` (given ``params`` at least)."""
    metrics = {key[len("metric."):]: row.pop(key) for key in [k for k in row if k.startswith("metric.")]}
    return individual_event(SimpleNamespace(pk=row["id"], metrics=metrics, **row))  # type: ignore[arg-type]


def _events_of(rows: QuerySet[Individual]) -> list[dict[str, Any]]:
    return [_event(row) for row in _plain(rows, ("params",)).iterator(chunk_size=2000)]


def final_points(search: Search) -> list[dict[str, Any]]:
    """Every individual with a final result, as the websocket's ``individual.finished`` events carry them."""
    return _events_of(Individual.objects.filter(search=search, status__in=Individual.FINAL)
                      .order_by("finished", "number"))


def running_points(search: Search) -> list[dict[str, Any]]:
    """The individuals under way (started on a slot, no result yet), as ``individual.started`` events carry them."""
    return _events_of(Individual.objects.filter(search=search, status=Individual.Status.RUNNING,
                                                started__isnull=False).order_by("started"))


def speedup_history(search: Search, points: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Speedup, slots held and efficiency after each result, by ``accounting.figures`` (searches recorded before
    the running periods were kept: over their whole time, against the slots used)."""
    if "periods" in (search.stats or {}):
        return accounting.history(search.stats)
    first = (search.stats or {}).get("first_dispatch")
    if first is None:
        return []
    serial, slots, history = 0.0, set(), []
    for point in points:
        if point["finished"] is None:
            continue
        serial += point["duration"] or 0.0
        if point["slot"]:
            slots.add(point["slot"])
        wall = max(point["finished"] - first, 0.0)
        figures = accounting.figures(wall, serial, len(slots) * wall, 1)
        if figures["speedup"] is not None:
            history.append({"time": point["finished"], "ideal": len(slots), **figures})
    return history


def objectives_of(search: Search) -> list[list[str]]:
    """The objectives of a multi-objective search (``[[name, "max"|"min"], ...]``), else ``[]``."""
    params = ((search.config or {}).get("strategy") or {}).get("params") or {}
    objectives = params.get("objectives")
    return objectives if isinstance(objectives, list) and len(objectives) >= 2 else []


def pareto_points(search: Search) -> list[dict[str, Any]]:
    """Number, description and objective values of every successful individual (for the Pareto chart)."""
    names = [name for name, _ in objectives_of(search)]
    if not names:
        return []
    rows = Individual.objects.filter(search=search, status=Individual.Status.DONE).values(
        "number", "description", "fitness", "metrics")
    points = []
    for row in rows:
        values = {name: row["fitness"] if name == "fitness" else (row["metrics"] or {}).get(name) for name in names}
        if all(isinstance(v, (int, float)) for v in values.values()):
            points.append({"number": row["number"], "description": row["description"], **values})
    return points


@dataclasses.dataclass(frozen=True)
class IndividualPage:
    rows: list[dict[str, Any]]
    total: int
    page: int
    pages: int
    per_page: int
    sort: str
    filters: dict[str, str]

    def as_dict(self) -> dict[str, Any]:
        """The API's page: ``results`` as every list endpoint names its items (``rows``, the same list, is kept
        for one release for readers of the old name), with ``count`` and ``page``/``pages`` as the list has."""
        # Not dataclasses.asdict: it deep-copies every value of every row, a third of the API page's time.
        fields = {field.name: getattr(self, field.name) for field in dataclasses.fields(self)}
        return {"results": self.rows, "count": self.total, **fields}


def _int(params, name: str, default: int, low: int, high: int | None = None) -> int:
    raw = params.get(name)
    if raw in (None, ""):
        return default
    try:
        value = int(raw)
    except (TypeError, ValueError):
        raise QueryError(f"`{name}` must be an integer (got {raw!r})") from None
    if value < low or (high is not None and value > high):
        raise QueryError(f"`{name}` must be in [{low}, {high if high is not None else '...'}] (got {value})")
    return value


def individuals_page(search: Search, params) -> IndividualPage:
    """One page of the search's individuals. ``params`` (a QueryDict or a dict) may hold ``page``, ``per_page``,
    ``sort`` (one of :data:`SORTABLE`, ``-`` for descending), ``status``, ``node`` and ``q`` (text in the
    description or the key)."""
    sort = params.get("sort") or "number"
    if sort.lstrip("-") not in SORTABLE:
        raise QueryError(f"`sort` must be one of {', '.join(SORTABLE)}, optionally prefixed by '-' (got {sort!r})")
    status = params.get("status") or ""
    if status and status not in Individual.Status.values:
        raise QueryError(f"`status` must be one of {', '.join(Individual.Status.values)} (got {status!r})")
    per_page = _int(params, "per_page", PER_PAGE, 1, MAX_PER_PAGE)
    rows = Individual.objects.filter(search=search)
    filters = {"status": status, "node": params.get("node") or "", "q": (params.get("q") or "").strip()}
    if status:
        rows = rows.filter(status=status)
    if filters["node"]:
        rows = rows.filter(node=filters["node"])
    if filters["q"]:
        rows = rows.filter(Q(description__icontains=filters["q"]) | Q(key__istartswith=filters["q"]))
    total = rows.count()
    pages = max((total + per_page - 1) // per_page, 1)
    page = min(_int(params, "page", 1, 1), pages)
    field = sort.lstrip("-")
    order = [f"-{field}" if sort.startswith("-") else field, "number"]
    if field == "fitness":  # failed ones (no fitness) last either way
        order[0] = F(field).desc(nulls_last=True) if sort.startswith("-") else F(field).asc(nulls_last=True)
    # Plain rows, and of the JSON only the metrics shown: no model instances, no genome, curve or timings.
    chunk = _plain(rows, ("params", *ROW_METRICS), "parents", "message", "attempt_base").order_by(*order)
    chunk = chunk[(page - 1) * per_page : page * per_page]
    return IndividualPage([table_row(row, search.status) for row in chunk], total, page, pages, per_page, sort,
                          filters)


#: Searches that send nothing now: their queued individuals wait for a resume.
PAUSED = (Search.Status.STOPPING, Search.Status.STOPPED, Search.Status.FAILED)


def shown_state(status: str, dispatched: Any, search_status: str, attempts: int = 0, base: int = 0) -> str:
    """An individual's state as a person reads it: ``not sent`` for queued work that no worker will run until
    the search is resumed (a stopped search's queue); ``lost, retrying (attempt n)`` for one whose last attempt
    was lost with its worker and that waits to run again; ``running (attempt n)`` from the second attempt on; else
    its status. In a running search a queued individual not yet handed to the queue (just created, or skipped
    before a resume) is ``queued``: its loop sends it. A failed individual its owner re-ran (``base``: the attempts
    it made before) is ``re-run queued (attempt n)`` until it starts."""
    if status == Individual.Status.QUEUED and search_status in PAUSED:
        return "not sent"
    if status == Individual.Status.QUEUED and attempts > base:
        return f"lost, retrying (attempt {attempts + 1})"
    if status == Individual.Status.QUEUED and attempts:
        return f"re-run queued (attempt {attempts + 1})"
    if status == Individual.Status.RUNNING and attempts > 1:
        return f"running (attempt {attempts})"
    return status


def table_row(row: dict[str, Any], search_status: str = Search.Status.RUNNING) -> dict[str, Any]:
    """A row of the individuals table from a plain row (:func:`individuals_page`): the event's fields, its
    state as shown, some metrics, the parents and the failure's whole message (the table shortens it on screen)."""
    shown = {name: row.get(f"metric.{name}") for name in ROW_METRICS}
    parents, message, base = row.pop("parents"), row.pop("message"), row.pop("attempt_base", 0)
    state = shown_state(row["status"], row["dispatched"], search_status, row["attempts"] or 0, base or 0)
    return {**_event(row), "state": state, **shown, "parents": parents, "message": message}


def nodes_of(search: Search) -> list[str]:
    """The nodes that evaluated an individual of the search: those its accounting counted a result of ("-" is
    its name for none), and those evaluating one now. Not a scan of every individual: the page asks for this
    on every view."""
    counted = {entry["node"] for entry in ((search.stats or {}).get("nodes") or {}).values()}
    # No ordering: the model's default (by search, so by its creation time) joins the search and reads every row.
    running = Individual.objects.filter(search=search, status=Individual.Status.RUNNING).exclude(node="").order_by()
    return sorted((counted | set(running.values_list("node", flat=True))) - {"-", ""})


def lineage(individual: Individual) -> dict[str, list[dict[str, Any]]]:
    """Parents (by key, the first individual of the search with that key) and children of an individual."""
    rows = list(Individual.objects.filter(search_id=individual.search_id).values("pk", "number", "key", "parents",
                                                                                "operator", "fitness", "status"))
    first_by_key: dict[str, dict] = {}
    for row in sorted(rows, key=lambda r: r["number"]):
        first_by_key.setdefault(row["key"], row)
    parents = [first_by_key[key] for key in individual.parents if key in first_by_key]
    children = [row for row in rows if individual.key in (row["parents"] or []) and row["pk"] != individual.pk]
    return {"parents": parents, "children": sorted(children, key=lambda r: r["number"])}
