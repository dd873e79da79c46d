"""A search's name is 1 to 200 printable characters, in the API, the form and the ``search`` command alike
(they all go through ``lifecycle.create_search``): anything else is a clear error on the name and saves nothing."""
from __future__ import annotations

import json

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from tests.dashboard.conftest import CONFIG
from webapp.dashboard.architecture_form import DEFAULTS
from webapp.services import lifecycle
from webapp.searches.models import Search

pytestmark = pytest.mark.django_db

#: Names refused, and a word the error about each says.
BAD_NAMES = [("x" * 201, "200"), ("a\x00b", "printable"), ("bell\x07", "printable"), ("two\nlines", "printable"),
             ("\x1b[31mred", "printable"), ("tab\there", "printable"), ("   ", "needs a name")]


@pytest.mark.parametrize("name,why", BAD_NAMES)
def test_the_api_refuses_bad_names_with_a_400_on_the_name(owner_client, name, why):
    response = owner_client.post(reverse("api-searches"), json.dumps({"name": name, "config": CONFIG}),
                                 content_type="application/json")
    assert response.status_code == 400 and response.json()["field"] == "name"
    assert why in response.json()["error"]
    assert not Search.objects.exists()


def test_a_name_of_200_characters_is_kept_whole_and_its_clone_fits(owner_client, users):
    name = "é" * 199 + "z"
    response = owner_client.post(reverse("api-searches"), json.dumps({"name": f"  {name} ", "config": CONFIG}),
                                 content_type="application/json")
    assert response.status_code == 201 and response.json()["name"] == name
    copy = lifecycle.clone(Search.objects.get(), users["owner"])
    assert copy.name.endswith(" (copy)") and len(copy.name) == 200


#: The form's own field checks come first for some (Django's words for them).
FORM_WORDS = {"a\x00b": "null", "   ": "required"}


@pytest.mark.parametrize("name,why", [(name, FORM_WORDS.get(name, why)) for name, why in BAD_NAMES])
def test_the_form_shows_the_error_on_the_name(owner_client, name, why):
    data = {**{k: v for k, v in DEFAULTS.items() if v is not None}, "name": name}
    response = owner_client.post(reverse("search-create"), data)
    assert response.status_code == 400
    errors = response.context["form"].errors
    assert "name" in errors and why.lower() in " ".join(errors["name"]).lower(), errors
    assert not Search.objects.exists()


def test_the_search_command_refuses_a_bad_name(users, tmp_path):
    config = tmp_path / "config.json"
    config.write_text(json.dumps(CONFIG))
    with pytest.raises(CommandError, match="printable"):
        call_command("search", "create", "--name", "bad\x07name", "--config", str(config), "--owner", "owner")
    assert not Search.objects.exists()
