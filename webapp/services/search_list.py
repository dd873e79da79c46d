"""The search list, sorted and paged in the database: by name, owner, space, strategy, state, progress, best
fitness, start or duration, so a sort covers every search a user may see, not only one page of them (the list
page's table, Grid.js, asks for each page and sort here; without JavaScript the page's links do the same)."""
from __future__ import annotations

import dataclasses
from typing import Any

from django.db.models import DurationField, ExpressionWrapper, F, FloatField, QuerySet
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Coalesce, Now, NullIf

from webapp.searches.models import Search
from webapp.services import queries

PER_PAGE = 50
MAX_PER_PAGE = 200
#: What a sort key orders by; ``-KEY`` descends. Searches with no value (no result yet, not started) come last
#: either way; ties go newest first.
SORTS = {
    "name": F("name"), "owner": F("owner__username"),
    "space": KeyTextTransform("name", KeyTextTransform("space", "config")),
    "strategy": KeyTextTransform("name", KeyTextTransform("strategy", "config")),
    "status": F("status"), "best": F("best_fitness"), "done": F("evaluations_done"),
    "progress": ExpressionWrapper(F("evaluations_done") * 1.0 / NullIf(F("evaluations_total"), 0),
                                  output_field=FloatField()),
    "created": F("created"), "started": F("started"),
    "duration": ExpressionWrapper(Coalesce(F("finished"), Now()) - F("started"), output_field=DurationField()),
}
DEFAULT_SORT = "-created"


@dataclasses.dataclass(frozen=True)
class SearchPage:
    searches: list[Search]
    count: int
    page: int
    pages: int
    per_page: int
    sort: str


def _number(params, name: str, default: int, high: int | None = None) -> int:
    raw = params.get(name)
    if raw in (None, ""):
        return default
    try:
        value = int(raw)
    except (TypeError, ValueError):
        raise queries.QueryError(f"`{name}` must be an integer (got {raw!r:.40})") from None
    if value < 1 or (high is not None and value > high):
        raise queries.QueryError(f"`{name}` must be in [1, {high or '...'}] (got {value})")
    return value


def ordered(searches: QuerySet[Search], sort: str) -> QuerySet[Search]:
    """``searches`` in the order of ``sort`` (a key of :data:`SORTS`, ``-`` for descending), else ``QueryError``."""
    key = sort.lstrip("-")
    if key not in SORTS or sort.count("-") > 1:
        raise queries.QueryError(f"`sort` must be one of {', '.join(SORTS)}, optionally prefixed by '-' "
                                 f"(got {sort!r:.40})")
    expression = SORTS[key]
    first = expression.desc(nulls_last=True) if sort.startswith("-") else expression.asc(nulls_last=True)
    return searches.order_by(first, "-created", "-pk")


def search_page(user, params) -> SearchPage:
    """One page of the searches ``user`` may see. ``params`` (a QueryDict or a dict): ``sort``, ``page``,
    ``per_page``; a bad one is a ``QueryError`` that says which."""
    sort = params.get("sort") or DEFAULT_SORT
    per_page = _number(params, "per_page", PER_PAGE, MAX_PER_PAGE)
    visible = ordered(queries.visible_searches(user).select_related("owner").defer("strategy_state"), sort)
    count = visible.count()
    pages = max((count + per_page - 1) // per_page, 1)
    page = min(_number(params, "page", 1), pages)
    return SearchPage(list(visible[(page - 1) * per_page : page * per_page]), count, page, pages, per_page, sort)


def page_dict(page: SearchPage, row) -> dict[str, Any]:
    """The page as JSON, each search through ``row`` (``results`` and ``count`` as every list endpoint names them)."""
    return {"results": [row(search) for search in page.searches], "count": page.count, "page": page.page,
            "pages": page.pages, "per_page": page.per_page, "sort": page.sort}
