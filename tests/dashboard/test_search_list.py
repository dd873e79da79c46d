"""The search list: sorted and paged in the database by every column (the page's links and Grid.js's JSON)."""
from __future__ import annotations

import pytest
from django.urls import reverse

from tests.dashboard.conftest import CONFIG, fill
from webapp.searches.models import Search
from webapp.services import lifecycle, search_list

pytestmark = pytest.mark.django_db


@pytest.fixture
def three(users, search):
    low = fill(lifecycle.create_search(users["owner"], "low", CONFIG), 3)      # best 0.52, 3 of 12 done
    draft = lifecycle.create_search(users["owner"], "a draft", CONFIG)          # no best, not started
    lifecycle.create_search(users["other"], "theirs", CONFIG)
    return search, low, draft


def names(page):
    return [s.name for s in page.searches]


def test_sorts_by_best_with_no_value_last_either_way(users, three):
    assert names(search_list.search_page(users["owner"], {"sort": "-best"})) == ["mine", "low", "a draft"]
    assert names(search_list.search_page(users["owner"], {"sort": "best"})) == ["low", "mine", "a draft"]


@pytest.mark.parametrize("sort", list(search_list.SORTS) + [f"-{key}" for key in search_list.SORTS])
def test_every_column_sorts(users, three, sort):
    page = search_list.search_page(users["owner"], {"sort": sort})
    assert sorted(names(page)) == ["a draft", "low", "mine"]  # the user's own, and only those


def test_progress_sorts_by_the_share_done(users, three):
    assert names(search_list.search_page(users["owner"], {"sort": "-progress"})) == ["mine", "low", "a draft"]


def test_staff_see_every_owner_and_pages_split(users, three):
    page = search_list.search_page(users["staff"], {"sort": "owner", "per_page": 2, "page": 2})
    assert page.count == 4 and page.pages == 2 and [s.owner.username for s in page.searches] == ["owner", "owner"]
    assert search_list.search_page(users["staff"], {"page": 99}).page == 1  # past the end: the last page


def test_rows_json_and_page_sorted(owner_client, three):
    data = owner_client.get(reverse("search-rows"), {"sort": "-best", "per_page": 2}).json()
    assert data["count"] == 3 and data["pages"] == 2 and [r["name"] for r in data["results"]] == ["mine", "low"]
    row = data["results"][0]
    assert {"owner", "status", "done", "total", "progress", "best_fitness", "started_at", "duration_text"} <= set(row)
    html = owner_client.get(reverse("search-list"), {"sort": "-best"}).content.decode()
    assert html.index(">mine<") < html.index(">low<") < html.index(">a draft<")
    assert "Best fitness ▼" in html and "theirs" not in html
    assert 'src="/static/vendor/gridjs/gridjs.umd.js"' in html and "//cdn" not in html.lower()


@pytest.mark.parametrize("params, words", [({"sort": "password"}, "`sort` must be one of"),
                                           ({"sort": "--best"}, "`sort` must be one of"),
                                           ({"page": "x"}, "`page` must be an integer"),
                                           ({"per_page": "100000"}, "`per_page` must be in")])
def test_bad_list_queries_are_400(owner_client, three, params, words):
    before = list(Search.objects.values_list("pk", "status"))
    rows = owner_client.get(reverse("search-rows"), params)
    assert rows.status_code == 400 and words in rows.json()["error"]
    page = owner_client.get(reverse("search-list"), params)
    assert page.status_code == 400 and words in page.content.decode()
    assert list(Search.objects.values_list("pk", "status")) == before
