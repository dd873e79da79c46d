"""Editing a weight-search draft in the browser form (seed 001): prefilled, checked as at creation, refused once
launched or when the draft is another user's."""
from __future__ import annotations

import pytest
from django.urls import reverse

from tests.dashboard.conftest import CONFIG as ARCHITECTURE
from tests.dashboard.conftest import fill
from tests.dashboard.test_weights_page import FORM
from webapp.dashboard.weights_form import WeightSearchForm
from webapp.searches.models import Search
from webapp.services import lifecycle

pytestmark = pytest.mark.django_db
CONFIG = {"kind": "weights", "network": {"kind": "mlp", "layers": [64, 32, 10]},
          "weights": {"population": 16, "generations": 5, "mirrored": True}}


def posted(search: Search, **change) -> dict:
    """The form as the browser posts it for ``search``, with ``change`` applied."""
    initial = WeightSearchForm.initial_from(search.name, search.config)
    data = {**initial, **change}
    if not data.pop("mirrored"):
        data.pop("mirrored", None)
    else:
        data["mirrored"] = "on"
    return {key: "" if value is None else value for key, value in data.items()}


@pytest.fixture
def draft(users) -> Search:
    return lifecycle.create_search(users["owner"], "es draft", CONFIG)


def test_the_form_opens_prefilled_and_its_page_links_to_it(owner_client, draft):
    page = owner_client.get(reverse("search-detail", args=[draft.pk])).content.decode()
    assert f'href="{reverse("search-edit", args=[draft.pk])}"' in page and 'id="edit-button"' in page
    response = owner_client.get(reverse("search-edit", args=[draft.pk]))
    html = response.content.decode()
    assert response.status_code == 200 and f"Edit draft #{draft.pk}" in html
    assert 'value="64,32,10"' in html and 'name="population" value="16"' in html and 'value="es draft"' in html


def test_a_valid_edit_changes_the_config(owner_client, draft):
    response = owner_client.post(reverse("search-edit", args=[draft.pk]),
                                 posted(draft, name="es wider", layers="64,48,10", population=32, sigma=0.1))
    assert response.status_code == 302
    draft.refresh_from_db()
    assert draft.name == "es wider" and draft.status == "draft"
    assert draft.config["network"]["layers"] == [64, 48, 10]
    assert draft.config["weights"]["population"] == 32 and draft.config["weights"]["sigma"] == 0.1
    assert draft.config["parameters"] == 64 * 48 + 48 + 48 * 10 + 10  # recounted by the checker


def test_save_and_launch(owner_client, draft):
    owner_client.post(reverse("search-edit", args=[draft.pk]), {**posted(draft, generations=7), "launch": "1"})
    draft.refresh_from_db()
    assert draft.status == "running" and draft.config["weights"]["generations"] == 7


@pytest.mark.parametrize("change, field, words", [
    ({"population": 15}, "population", "even with mirrored"),
    ({"sigma": 0}, "sigma", "greater than 0"),
    ({"layers": "64,x"}, "layers", "integers separated by commas"),
    ({"network": "best_of", "source_search": 999}, "source_search", "no architecture search #999"),
])
def test_bad_input_is_a_field_error_and_the_stored_config_is_unchanged(owner_client, draft, change, field, words):
    before = Search.objects.values("name", "config").get(pk=draft.pk)
    response = owner_client.post(reverse("search-edit", args=[draft.pk]), posted(draft, name="renamed", **change))
    html = response.content.decode()
    assert response.status_code == 400 and f'id="error-{field}"' in html and words in html
    assert Search.objects.values("name", "config").get(pk=draft.pk) == before


def test_a_launched_search_is_refused_with_a_message(owner_client, draft):
    lifecycle.launch(draft)
    before = Search.objects.values("config").get(pk=draft.pk)
    response = owner_client.post(reverse("search-edit", args=[draft.pk]), posted(draft, population=32),
                                 follow=True)
    assert response.status_code == 200 and "clone it to try a change" in response.content.decode()
    assert Search.objects.values("config").get(pk=draft.pk) == before
    page = owner_client.get(reverse("search-detail", args=[draft.pk])).content.decode()
    assert 'id="edit-button"' not in page


def test_another_users_draft_is_a_404(client, users, draft):
    client.force_login(users["other"])
    before = Search.objects.values("config").get(pk=draft.pk)
    assert client.get(reverse("search-edit", args=[draft.pk])).status_code == 404
    assert client.post(reverse("search-edit", args=[draft.pk]), posted(draft, population=32)).status_code == 404
    assert Search.objects.values("config").get(pk=draft.pk) == before


def test_the_best_architecture_chosen_at_creation_is_kept_until_its_source_changes(owner_client, draft, search):
    """Re-saving a best-of draft keeps the genome found when it was chosen, even if the source's best changed."""
    url = reverse("search-edit", args=[draft.pk])
    assert owner_client.post(url, posted(draft, network="best_of", source_search=search.pk)).status_code == 302
    draft.refresh_from_db()
    chosen = draft.config["network"]
    assert chosen["kind"] == "genome" and chosen["source_search"] == search.pk
    best = search.individuals.get(genome=chosen["genome"])
    search.individuals.exclude(pk=best.pk).filter(status="done").update(fitness=best.fitness + 1)  # a new best
    assert owner_client.get(url).content.decode().count(f'value="{search.pk}"') == 1  # prefilled
    assert owner_client.post(url, posted(draft, population=32)).status_code == 302
    draft.refresh_from_db()
    assert draft.config["network"] == chosen and draft.config["weights"]["population"] == 32


def test_another_users_architecture_is_refused_and_nothing_changes(owner_client, users, draft):
    theirs = fill(lifecycle.create_search(users["other"], "theirs", ARCHITECTURE), 2)
    before = Search.objects.values("config").get(pk=draft.pk)
    response = owner_client.post(reverse("search-edit", args=[draft.pk]),
                                 posted(draft, network="best_of", source_search=theirs.pk))
    html = response.content.decode()
    assert response.status_code == 400 and f"there is no architecture search #{theirs.pk}" in html
    assert 'id="error-source_search"' in html  # on the field it names, not above the form
    assert Search.objects.values("config").get(pk=draft.pk) == before


def test_creating_from_another_users_architecture_is_an_error_on_its_field(owner_client, users):
    theirs = fill(lifecycle.create_search(users["other"], "theirs", ARCHITECTURE), 2)
    form = {**FORM, "network": "best_of", "source_search": theirs.pk}
    response = owner_client.post(reverse("weights-create"), form)
    html = response.content.decode()
    assert response.status_code == 400 and 'id="error-source_search"' in html and 'id="error-name"' not in html
    assert not Search.objects.filter(owner__username="owner").exists()


def test_a_genome_given_whole_is_kept_as_stored(owner_client, users, search):
    """A draft whose genome came from ``search create --set`` (no source search) keeps it through the form."""
    genome = search.individuals.filter(status="done").first().genome
    draft = lifecycle.create_search(users["owner"], "es genome", {
        **CONFIG, "network": {"kind": "genome", "space": search.config["space"], "genome": genome}})
    url = reverse("search-edit", args=[draft.pk])
    assert 'value="stored" selected' in owner_client.get(url).content.decode()
    assert owner_client.post(url, posted(draft, population=32)).status_code == 302
    draft.refresh_from_db()
    assert draft.config["network"]["genome"] == genome and draft.config["weights"]["population"] == 32
