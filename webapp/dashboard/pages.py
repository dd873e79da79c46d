"""Server-rendered pages. Thin: each gathers data from the services and renders a template."""
from __future__ import annotations

import json
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from webapp.dashboard import architecture, csp, display
from webapp.dashboard.attempts_view import attempt_rows, rerun_button, rerun_failed_button
from webapp.dashboard.access import owned_individual, owned_search
from webapp.dashboard.beliefs_chart import beliefs_kind
from webapp.dashboard.curve_chart import CURVE_WAITS, individual_curve
from webapp.dashboard.failure_view import failure_view
from webapp.dashboard.schedule_panel import schedule_view
from webapp.searches import data_notices, final_runs
from webapp.searches.kinds import kind_of, kinds
from webapp.searches.data_config import dataset_argument
from webapp.searches.models import Individual, Search
from webapp.searches.pruning_stats import describe as describe_pruning
from webapp.services import comparison, exports, lifecycle, node_control, nodes, queries, scaling
from webapp.services import search_list as search_list_service
from webapp.stack.health import system_status

ACTIONS = {"launch": lifecycle.launch, "stop": lifecycle.stop, "resume": lifecycle.resume}


def bad_request(message: str) -> HttpResponse:
    """A 400 whose message may quote what the user sent: plain text, so a browser never reads it as HTML."""
    return HttpResponse(message, status=400, content_type="text/plain; charset=utf-8")


#: How many of a user's searches the home page lists.
RECENT = 5


def list_row(search) -> dict:
    """A search as the list and the home page show it: the API's row plus dates and a duration for people."""
    row = queries.search_row(search)
    return {**row, "started_at": display.moment(search.started), "created_at": display.moment(search.created),
            "duration_text": display.duration(row["duration"])}


def home(request: HttpRequest) -> HttpResponse:
    """What the product does; a signed-in user's latest searches; the system's details for staff only (the
    Redis URL and the database engine tell a stranger where to aim)."""
    context = {}
    if request.user.is_authenticated:
        mine = queries.visible_searches(request.user).filter(owner=request.user).select_related("owner")
        context["recent"] = [list_row(s) for s in mine.order_by("-created", "-pk")[:RECENT]]
    if request.user.is_staff:
        context["status"] = system_status()
    return render(request, "dashboard/home.html", context)


#: The search list's columns: (sort key, heading); the key is ``None`` for a column that does not sort.
LIST_COLUMNS = (("name", "Name"), ("owner", "Owner"), ("space", "Space"), ("strategy", "Strategy"),
                ("status", "State"), ("progress", "Progress"), ("best", "Best fitness"), ("started", "Started"),
                ("duration", "Duration"))


@login_required
def search_list(request: HttpRequest) -> HttpResponse:
    """Every search the user may see; Grid.js (``static/js/search_list.js``) pages and sorts it through
    :func:`search_rows`, and without JavaScript the headings' links do the same."""
    try:
        page = search_list_service.search_page(request.user, request.GET)
    except queries.QueryError as error:
        return bad_request(str(error))
    return render(request, "dashboard/search_list.html", {
        "page": page, "rows": [list_row(s) for s in page.searches], "kinds": kinds().values(),
        "columns": LIST_COLUMNS, "compare_limits": (comparison.MIN_SEARCHES, comparison.MAX_SEARCHES)})


@login_required
def search_rows(request: HttpRequest) -> HttpResponse:
    """A page of the search list as JSON (``?sort=-best&page=2&per_page=50``), rows as the list shows them."""
    try:
        page = search_list_service.search_page(request.user, request.GET)
    except queries.QueryError as error:
        return JsonResponse({"error": str(error)}, status=400)
    return JsonResponse(search_list_service.page_dict(page, list_row))


@login_required
@require_http_methods(["GET", "POST"])
def search_edit(request: HttpRequest, search_id: int) -> HttpResponse:
    """A draft (a clone too) opens in the form, prefilled with its configuration, until it is launched."""
    search = owned_search(request, search_id)
    if search.status != Search.Status.DRAFT:
        messages.info(request, f"#{search.pk} was launched: clone it to try a change.")
        return redirect("search-detail", search_id=search.pk)
    return kind_of(search.config).part("form")(request, search)  # each kind has its form


@login_required
@csp.allow_eval  # its charts are WebGL
def search_detail(request: HttpRequest, search_id: int) -> HttpResponse:
    search = owned_search(request, search_id)
    return kind_of(search.config).part("page")(request, search)  # each kind has its page


def architecture_page(request: HttpRequest, search: Search) -> HttpResponse:
    """An architecture search's live page (the kind ``architecture``); a draft opens in its form."""
    if search.status == Search.Status.DRAFT:
        return redirect("search-edit", search_id=search.pk)
    return render(request, "dashboard/search_detail.html", architecture_context(request, search))


def architecture_context(request: HttpRequest, search: Search) -> dict[str, Any]:
    """What the detail page of a search whose individuals are architectures shows (a one-shot search's page adds
    its own panel)."""
    gangs = scaling.gang_scaling(search)
    return {
        "search": search, "row": queries.search_row(search), "nodes": queries.nodes_of(search),
        "config_json": json.dumps(search.config, indent=2), "multi": bool(queries.objectives_of(search)),
        "beliefs": beliefs_kind(search),
        "sortable": queries.SORTABLE, "statuses": ["queued", "running", "done", "pruned", "failed"],
        "pruning_text": describe_pruning(search.stats),
        "scaling": gangs, "scaling_rows": display.scaling_rows(gangs),
        "rerun_failed": rerun_failed_button(request.user, search),
        "workers_idle": node_control.idle_reason(search.config.get("pool", "eval"))
        if search.status == Search.Status.RUNNING else "",
        "final": final_runs.summary(search),
        "data_unreadable": data_notices.notices(search.stats),
    }


@login_required
def final_panel(request: HttpRequest, search_id: int) -> HttpResponse:
    """The final training's panel as an HTML fragment (the detail page reloads it as its runs advance)."""
    search = owned_search(request, search_id)
    return render(request, "dashboard/_final_training.html", {"search": search, "final": final_runs.summary(search)})


@login_required
def individuals_table(request: HttpRequest, search_id: int) -> HttpResponse:
    """The table of individuals as an HTML fragment (the detail page loads and refreshes it)."""
    search = owned_search(request, search_id, only=("status",))  # its id, and its state for the rows
    try:
        page = queries.individuals_page(search, request.GET)
    except queries.QueryError as error:
        return bad_request(str(error))
    columns = [("number", "#"), ("status", "state"), ("fitness", "fitness"), (None, "architecture"),
               ("node", "node"), ("generation", "gen"), ("operator", "operator"), ("duration", "seconds"),
               ("attempts", "tries")]
    return render(request, "dashboard/_individuals_table.html", {"search": search, "page": page,
                                                                 "columns": columns})


@login_required
@require_POST
def search_action(request: HttpRequest, search_id: int, action: str) -> HttpResponse:
    search = owned_search(request, search_id)
    try:
        if action == "clone":
            copy = lifecycle.clone(search, request.user)
            messages.success(request, f"Cloned as draft #{copy.pk}: launch it when ready.")
            return redirect("search-detail", search_id=copy.pk)
        if action not in ACTIONS:
            return bad_request(f"Unknown action {action!r}.")
        ACTIONS[action](search)
    except lifecycle.ActionError as error:
        messages.error(request, str(error))
    return redirect("search-detail", search_id=search.pk)


@login_required
def individual_detail(request: HttpRequest, search_id: int, number: int) -> HttpResponse:
    individual = owned_individual(request, search_id, number)
    search = individual.search
    metrics = {k: display.metric(k, v) for k, v in (individual.metrics or {}).items()
               if k not in ("timings", "schedule")}
    timings = ((individual.metrics or {}).get("timings") or {}).items()
    return render(request, "dashboard/individual.html", {
        "search": search, "individual": individual, "lineage": queries.lineage(individual),
        "genome_json": json.dumps(individual.genome, indent=2), "metrics": sorted(metrics.items()),
        "timings": sorted((name, display.seconds(value)) for name, value in timings),
        "fitness": display.metric("fitness", individual.fitness),
        "duration": display.seconds(individual.duration),
        "blocks": architecture.blocks(search.config["space"], individual.genome, dataset_argument(search.config)),
        "epochs": final_runs.epochs_of(search.config, individual),
        "curve_figure": individual_curve(individual, float(final_runs.epochs_of(search.config, individual))),
        "zip_contents": exports.zip_contents(individual),
        "schedule": schedule_view(individual.metrics),
        "traffic": display.traffic(individual.metrics or {}),
        "failure": failure_view(individual),
        # "lost, retrying (attempt 2)" rather than a bare "queued": the table's words (issue 36, item 7).
        "state": queries.shown_state(individual.status, individual.dispatched, search.status, individual.attempts,
                                     individual.attempt_base),
        "attempts": attempt_rows(individual), "rerun": rerun_button(request.user, individual),
        "curve_waits": CURVE_WAITS if not individual.curve and individual.status not in Individual.FINAL else "",
    })


@login_required
def node_list(request: HttpRequest) -> HttpResponse:
    workers = nodes.worker_table()
    # Which search a worker runs is shown only to those who may see that search.
    visible = set(queries.visible_searches(request.user).filter(
        pk__in=[w["current"]["search"] for w in workers if w["current"]]).values_list("pk", flat=True))
    for worker in workers:
        worker["current_visible"] = bool(worker["current"]) and worker["current"]["search"] in visible
    # Messages the workers refused (malformed, unsigned): for staff, who run the installation.
    refused = nodes.refused_messages() if request.user.is_staff else []
    return render(request, "dashboard/nodes.html", {"workers": workers, "refused": refused,
                                                    "nodes": node_control.node_rows(),
                                                    "node_actions": list(node_control.ACTIONS)})


