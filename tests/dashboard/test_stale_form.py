"""Issue 36, item 9: a form whose CSRF token went stale (signed out and in again from another tab) answers a 403
that says so and gives the submitted values back in a form with a fresh token, never Django's debug page; the API
answers a JSON 403 with a message."""
from __future__ import annotations

import json
import re

from django.test import Client
from django.urls import reverse

from webapp.dashboard.architecture_form import DEFAULTS
from webapp.searches.models import Search

ORIGIN = {"HTTP_ORIGIN": "http://testserver"}  # what a browser sends with a post from this site


def token_in(html: str) -> str:
    return re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html).group(1)


def sign_in(client: Client) -> None:
    page = client.get(reverse("login")).content.decode()
    response = client.post(reverse("login"), {"username": "owner", "password": "pw-owner-123",
                                              "csrfmiddlewaretoken": token_in(page)}, **ORIGIN)
    assert response.status_code == 302


def stale_form(users) -> tuple[Client, str]:
    """A browser that loaded the form, then signed out and in again in another tab: the form's token is stale."""
    client = Client(enforce_csrf_checks=True)
    sign_in(client)
    stale = token_in(client.get(reverse("search-create")).content.decode())
    other_tab = token_in(client.get(reverse("search-list")).content.decode())
    assert client.post(reverse("logout"), {"csrfmiddlewaretoken": other_tab}, **ORIGIN).status_code == 302
    sign_in(client)
    return client, stale


def test_a_stale_form_gets_its_values_back_and_submits_again(users, settings):
    settings.DEBUG = True  # the local run has DEBUG on: still no technical page
    client, stale = stale_form(users)
    posted = {**DEFAULTS, "name": "typed before", "population": "5", "csrfmiddlewaretoken": stale}
    response = client.post(reverse("search-create"), posted, **ORIGIN)
    html = response.content.decode()
    assert response.status_code == 403 and "Your session changed" in html and "Nothing was saved" in html
    assert "CSRF verification failed" not in html and "Help" not in html.split("<main>")[0]
    assert 'value="typed before"' in html and 'name="population" value="5"' in html
    assert not Search.objects.exists()
    form = re.search(r'<form method="post" action="([^"]+)" id="resubmit".*?</form>', html, re.S)
    assert form.group(1) == reverse("search-create")
    again = dict(re.findall(r'name="([^"]+)" value="([^"]*)"', form.group(0)))
    resubmitted = client.post(form.group(1), again, **ORIGIN)
    assert resubmitted.status_code == 302
    search = Search.objects.get(name="typed before")
    assert search.config["strategy"]["params"]["population"] == 5


def test_a_cross_site_post_gets_the_message_without_values(users):
    client, stale = stale_form(users)
    response = client.post(reverse("search-create"), {**DEFAULTS, "name": "x", "csrfmiddlewaretoken": stale})
    html = response.content.decode()
    assert response.status_code == 403 and "Your session changed" in html and 'id="resubmit"' not in html
    hostile = client.post(reverse("search-create"), {**DEFAULTS, "name": "x"}, HTTP_ORIGIN="https://evil.example")
    assert hostile.status_code == 403 and 'id="resubmit"' not in hostile.content.decode()


def test_the_api_answers_a_json_403_with_a_message(users):
    client, stale = stale_form(users)
    response = client.post(reverse("api-searches"), json.dumps({"name": "x"}), content_type="application/json",
                           HTTP_X_CSRFTOKEN=stale)
    assert response.status_code == 403 and response["Content-Type"] == "application/json"
    assert "session may have changed" in response.json()["error"] and "X-CSRFToken" in response.json()["error"]
