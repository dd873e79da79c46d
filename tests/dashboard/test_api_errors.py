"""Every error under /api/ is JSON with a message (CSRF, not signed in, not found, wrong method, server error,
malformed bodies); pages outside /api/ keep Django's HTML errors."""
from __future__ import annotations

import json

import pytest
from django.test import Client
from django.urls import reverse

from tests.dashboard.conftest import CONFIG
from webapp.searches.models import Search

pytestmark = pytest.mark.django_db


def api_error(response, status: int) -> str:
    """The message of a JSON error with this status (fails on an HTML page)."""
    assert response.status_code == status, (response.status_code, response.content[:300])
    assert response["Content-Type"] == "application/json", response.content[:300]
    message = response.json()["error"]
    assert isinstance(message, str) and message
    return message


def html_error(response, status: int) -> None:
    assert response.status_code == status
    assert response["Content-Type"].startswith("text/html")


def csrf_client(user) -> tuple[Client, str]:
    """A client that enforces CSRF as a browser meets it, signed in, with the token a page handed out."""
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    client.get(reverse("search-list"))
    return client, client.cookies["csrftoken"].value


# --- malformed bodies (issue 15, item 6) --------------------------------------------------------------------

@pytest.mark.parametrize("body", ["[" * 50_000 + "]" * 50_000, '{"a":' * 50_000 + "1" + "}" * 50_000,
                                  '{"name": "deep", "config": ' + "[" * 50_000 + "]" * 50_000 + "}"])
def test_json_nested_50000_deep_is_a_400(owner_client, body):
    response = owner_client.post(reverse("api-searches"), body, content_type="application/json")
    assert "JSON" in api_error(response, 400)
    assert not Search.objects.exists()


@pytest.mark.parametrize("name", [5, 2.5, True, None, ["a"], {"first": "x"}])
def test_a_name_that_is_not_text_is_a_400_on_the_name(owner_client, name):
    response = owner_client.post(reverse("api-searches"), json.dumps({"name": name, "config": CONFIG}),
                                 content_type="application/json")
    assert "name" in api_error(response, 400) and response.json()["field"] == "name"
    assert not Search.objects.exists()


def test_a_multipart_body_is_a_400(users):
    client, token = csrf_client(users["owner"])
    response = client.post(reverse("api-searches"), {"name": "form", "config": json.dumps(CONFIG)},
                           HTTP_X_CSRFTOKEN=token)  # the test client's default: multipart/form-data
    assert "multipart" in api_error(response, 400)
    assert not Search.objects.exists()


def test_other_body_fields_and_launch_flags_are_checked(owner_client):
    url = reverse("api-searches")
    for body, field in [({"name": "x", "config": CONFIG, "nmae": "y"}, "nmae"),
                        ({"name": "x", "config": CONFIG, "launch": "yes"}, "launch")]:
        response = owner_client.post(url, json.dumps(body), content_type="application/json")
        api_error(response, 400)
        assert response.json()["field"] == field
    assert not Search.objects.exists()


@pytest.mark.parametrize("after", [str(10**20), "-1", "1e3"])
def test_an_events_cursor_out_of_range_is_a_400(owner_client, search, after):
    assert "after" in api_error(owner_client.get(reverse("api-events", args=[search.pk]), {"after": after}), 400)


def test_control_characters_in_a_query_are_a_400(owner_client, search):
    response = owner_client.get(reverse("api-individuals", args=[search.pk]), {"node": "alpha\x00"})
    assert "control character" in api_error(response, 400)


# --- JSON errors for every kind of failure (issue 16, item 6) --------------------------------------------

def test_csrf_failures_under_api_are_json_and_pages_keep_html(users, search):
    client, _ = csrf_client(users["owner"])
    for url in [reverse("api-searches"), reverse("api-action", args=[search.pk, "stop"])]:
        assert "CSRF" in api_error(client.post(url, json.dumps({}), content_type="application/json"), 403)
    html_error(client.post(reverse("search-action", args=[search.pk, "stop"])), 403)
    search.refresh_from_db()
    assert search.status == "running"


def test_not_signed_in_is_json(client, search):
    assert "Sign in" in api_error(client.get(reverse("api-search", args=[search.pk])), 401)
    assert "Sign in" in api_error(client.post(reverse("api-action", args=[search.pk, "stop"])), 401)


@pytest.mark.parametrize("debug", [False, True])
def test_unknown_api_urls_are_json_404s(owner_client, settings, debug):
    settings.DEBUG = debug  # the local run command has DEBUG on: its technical 404 page must not leak here
    for url in ["/api/", "/api/nothing/", "/api/searches/12345/", "/api/searches/x/", "/api/searches/1/a/b/"]:
        assert "Not found" in api_error(owner_client.get(url), 404), url
    html_error(owner_client.get("/no-such-page/"), 404)


def test_wrong_methods_are_json_405s_that_name_the_allowed_ones(owner_client, search):
    response = owner_client.put(reverse("api-searches"), "{}", content_type="application/json")
    assert "PUT" in api_error(response, 405) and "GET" in response["Allow"]
    api_error(owner_client.delete(reverse("api-search", args=[search.pk])), 405)
    assert "POST" in api_error(owner_client.get(reverse("api-action", args=[search.pk, "stop"])), 405)


@pytest.mark.parametrize("debug", [False, True])
def test_a_server_error_is_json_without_the_traceback(users, search, monkeypatch, settings, debug):
    from webapp.services import queries

    def broken(*args, **kwargs):
        raise RuntimeError("secret detail of a bug")

    settings.DEBUG = debug
    monkeypatch.setattr(queries, "search_detail", broken)
    monkeypatch.setattr(queries, "search_row", broken)
    client = Client(raise_request_exception=False)
    client.force_login(users["owner"])
    response = client.get(reverse("api-search", args=[search.pk]))
    assert "server" in api_error(response, 500).lower()
    assert b"secret detail" not in response.content
    html_error(client.get(reverse("search-list")), 500)
