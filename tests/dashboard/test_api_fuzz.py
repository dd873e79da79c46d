"""The JSON API under random input (hypothesis): bodies of any JSON, configurations with a wrong type at any
level, and any query string, on every endpoint that reads a body or a query parameter. Whatever comes in, the
answer is never a 500, and every error is JSON with an ``error`` message."""
from __future__ import annotations

import json

import pytest
from django.test import Client
from django.urls import reverse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nas.spaces import SPACES
from nas.strategies import STRATEGIES
from webapp.searches.models import Search

pytestmark = pytest.mark.django_db

#: Modest counts: the whole module runs in about a minute on a busy 2-core machine.
FUZZ = settings(max_examples=250, deadline=None, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                       HealthCheck.data_too_large])

#: Any character UTF-8 can encode (every code point but the surrogates, category Cs): the set `st.text()` draws
#: from by default, named by category so that hypothesis does not build its UTF-8 table over all 1.1 million
#: code points first (5-20 s in each fresh clone, paid by the first test of the module).
ANY_CHARACTER = st.characters(exclude_categories=["Cs"])
#: JSON leaves: small numbers (the bounds of big ones are another check's job), text with any character.
leaves = st.none() | st.booleans() | st.integers(-1000, 1000) | st.sampled_from([2**70, -(2**63), 1e308, -0.0]) \
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(ANY_CHARACTER, max_size=30)
json_values = st.recursive(leaves, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(ANY_CHARACTER, max_size=10), inner, max_size=4), max_leaves=12)

#: A configuration that uses every field, with every value valid.
TEMPLATE = {
    "space": {"name": "chain", "max_layers": 4, "min_layers": 1, "modules": 2},
    "strategy": {"name": "regularized", "seed": 3,
                 "params": {"population": 4, "sample_size": 2, "max_evaluations": 12}},
    "dataset": "digits",
    "training": {"epochs": 2, "batch_size": 64, "learning_rate": 0.001, "weight_decay": 0.0, "max_seconds": None,
                 "seed": 0, "optimizer": "adam", "precision": "fp32"},
    "evaluation": {"mode": "simulated", "duration": 0.2, "sigma": 0.5, "distribution": "fixed", "faults": {}},
    "pool": "eval",
}
#: Other valid values a field may take, so that the fuzz reaches past the first check of each section.
ALTERNATIVES = {
    "name": [*SPACES, *STRATEGIES], "mode": ["train", "simulated"], "dataset": ["synthetic", "cifar10"],
    "params": [{"population": 4, "generations": 2, "objectives": [["accuracy", "max"], ["params", "min"]]},
               {"max_evaluations": 3}],
}


def mutated(value, key: str = ""):
    """``value``, or at any depth a value of a wrong type (or a valid alternative) in place of one part."""
    options = [st.just(value), json_values, st.sampled_from(ALTERNATIVES.get(key, [value]))]
    if isinstance(value, dict) and value:
        options.append(st.fixed_dictionaries({k: mutated(v, k) for k, v in value.items()},
                                             optional={"unknown": json_values}))
        options.append(st.dictionaries(st.sampled_from(sorted(value)), json_values, max_size=3))
    return st.one_of(*options)


bodies = st.one_of(
    json_values.map(json.dumps),
    st.fixed_dictionaries({}, optional={"name": st.text(ANY_CHARACTER, max_size=250) | json_values,
                                        "config": mutated(TEMPLATE), "launch": st.booleans() | json_values,
                                        "other": json_values}).map(json.dumps),
    st.binary(max_size=200).map(lambda raw: raw.decode("latin-1")),
)
#: Query strings as a client could send them: values from ``params`` or raw bytes, percent-escapes and all.
params = st.dictionaries(st.sampled_from(["page", "per_page", "sort", "status", "node", "q", "after", "x"]),
                         st.text(ANY_CHARACTER, max_size=20) | st.integers().map(str)
                         | st.sampled_from(["-fitness", "done", "1"]),
                         max_size=4)
raw_queries = st.text(st.characters(codec="ascii"), max_size=40) | st.sampled_from(["%ff%fe", "page=%00", "a=%zz"])


def check(response) -> None:
    """No 500; every error is JSON with a message."""
    assert response.status_code < 500, (response.status_code, response.content[:500])
    if response.status_code >= 400:
        assert response["Content-Type"] == "application/json", response.content[:200]
        error = response.json()["error"]
        assert isinstance(error, str) and error


@pytest.fixture
def api(users, search):
    client = Client()
    client.force_login(users["owner"])
    return client, search


@FUZZ
@given(body=bodies, content_type=st.sampled_from(["application/json", "text/plain", "application/x-www-form-urlencoded"]))
def test_create_never_fails_with_a_500(api, body, content_type):
    client, _ = api
    before = Search.objects.count()
    response = client.post(reverse("api-searches"), body, content_type=content_type)
    check(response)
    if response.status_code != 201:
        assert Search.objects.count() == before  # a refused body saves nothing


@FUZZ
@given(query=params, raw=raw_queries, name=st.sampled_from(["api-searches", "api-events", "api-individuals",
                                                             "api-snapshot", "api-search", "api-pareto"]))
def test_query_strings_never_fail_with_a_500(api, query, raw, name):
    client, search = api
    url = reverse(name) if name == "api-searches" else reverse(name, args=[search.pk])
    check(client.get(url, query))
    check(client.get(url, QUERY_STRING=raw))


@FUZZ
@given(action=st.text(st.characters(codec="ascii", categories=["L", "N"]), min_size=1, max_size=12)
       | st.sampled_from(["launch", "stop", "resume", "clone"]), body=bodies)
def test_actions_never_fail_with_a_500(api, action, body):
    client, search = api
    check(client.post(reverse("api-action", args=[search.pk, action]), body, content_type="application/json"))


@pytest.mark.parametrize("section", ["space", "strategy"])
@pytest.mark.parametrize("name", [[], {}, 3, None, True])
def test_a_name_that_is_not_a_string_is_a_400(api, section, name):
    """Found by the fuzz above in CI: a list as the space's name was looked up as a dict key (a 500)."""
    client, _ = api
    before = Search.objects.count()
    config = json.loads(json.dumps(TEMPLATE))
    config[section]["name"] = name
    response = client.post(reverse("api-searches"), json.dumps({"config": config}), content_type="application/json")
    check(response)
    assert response.status_code == 400 and Search.objects.count() == before
