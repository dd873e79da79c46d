"""Login everywhere but the login page, 404 for another user's searches on every URL that takes a search id,
CSRF on every form and API write."""
from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

pytestmark = pytest.mark.django_db

#: Every URL name that takes a search id, with its method.
SEARCH_URLS = [
    ("search-detail", "get"), ("search-table", "get"), ("download-csv", "get"), ("download-events", "get"),
    ("download-best", "get"), ("api-search", "get"), ("api-snapshot", "get"), ("api-events", "get"),
    ("api-individuals", "get"), ("api-pareto", "get"), ("search-final", "get"),
]
ACTIONS = ["launch", "stop", "resume", "clone"]
INDIVIDUAL_URLS = ["individual-detail", "download-genome", "download-individual"]


def all_urls(search_id: int) -> list[tuple[str, str]]:
    urls = [(reverse(name, args=[search_id]), method) for name, method in SEARCH_URLS]
    urls += [(reverse("search-action", args=[search_id, a]), "post") for a in ACTIONS]
    urls += [(reverse("api-action", args=[search_id, a]), "post") for a in ACTIONS]
    urls += [(reverse(name, args=[search_id, 0]), "get") for name in INDIVIDUAL_URLS]
    return urls


def test_anonymous_users_are_sent_to_the_login_page(client, search):
    pages = [reverse("search-list"), reverse("search-create"), reverse("nodes")]
    pages += [url for url, method in all_urls(search.pk) if method == "get" and "/api/" not in url]
    for url in pages:
        response = client.get(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith(reverse("login") + "?next="), url
    assert client.get(reverse("login")).status_code == 200


def test_anonymous_api_calls_get_401(client, search):
    for url, method in [(reverse("api-searches"), "get"), *all_urls(search.pk)]:
        if "/api/" in url:
            response = getattr(client, method)(url)
            assert response.status_code == 401, url
            assert "Sign in" in response.json()["error"]


def test_another_user_gets_404_on_every_url_of_the_search(client, users, search):
    client.force_login(users["other"])
    for url, method in all_urls(search.pk):
        response = getattr(client, method)(url)
        assert response.status_code == 404, (url, response.status_code)
    search.refresh_from_db()
    assert search.status == "running" and search.clones.count() == 0  # no action went through
    listing = client.get(reverse("api-searches")).json()
    assert listing["count"] == 0
    assert "mine" not in client.get(reverse("search-list")).content.decode()


def test_the_owner_and_staff_see_it(client, users, search):
    for who in ("owner", "staff"):
        client.force_login(users[who])
        assert client.get(reverse("search-detail", args=[search.pk])).status_code == 200
        assert client.get(reverse("individual-detail", args=[search.pk, 0])).status_code == 200
        assert client.get(reverse("api-searches")).json()["count"] == 1


def test_csrf_is_required_on_forms_and_api_writes(users, search):
    client = Client(enforce_csrf_checks=True)
    client.force_login(users["owner"])
    writes = [reverse("search-create"), reverse("api-searches"), reverse("search-action", args=[search.pk, "stop"]),
              reverse("api-action", args=[search.pk, "stop"]), reverse("logout")]
    for url in writes:
        assert client.post(url, {}).status_code == 403, url
    search.refresh_from_db()
    assert search.status == "running"
    # With the token from a page, the same write goes through.
    client.get(reverse("search-detail", args=[search.pk]))
    token = client.cookies["csrftoken"].value
    response = client.post(reverse("api-action", args=[search.pk, "stop"]), HTTP_X_CSRFTOKEN=token)
    assert response.status_code == 200 and response.json()["status"] == "stopped"
