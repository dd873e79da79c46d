"""Server-rendered pages and the create form."""
from __future__ import annotations

import pytest
from django.urls import reverse

from evaluators import budget
from webapp.dashboard.architecture_form import DEFAULTS, SearchForm, form_name
from webapp.searches.config import check_config
from webapp.searches.models import Search

pytestmark = pytest.mark.django_db


def test_list_shows_searches_newest_first(owner_client, users, search):
    from webapp.services import lifecycle

    newer = lifecycle.create_search(users["owner"], "newer one", search.config)
    html = owner_client.get(reverse("search-list")).content.decode()
    assert html.index("newer one") < html.index(">mine<")
    for key, column in (("name", "Name"), ("owner", "Owner"), ("space", "Space"), ("strategy", "Strategy"),
                        ("status", "State"), ("progress", "Progress"), ("best", "Best fitness"),
                        ("started", "Started"), ("duration", "Duration")):
        assert f'<th><a href="?sort={key}">{column}</a></th>' in html
    assert "0.5900" in html  # best fitness of `search`
    assert newer.status == "draft"


def test_detail_page_has_the_charts_and_the_buttons(owner_client, search):
    html = owner_client.get(reverse("search-detail", args=[search.pk])).content.decode()
    for element in ("chart-fitness", "chart-best", "chart-nodes", "chart-throughput", "chart-speedup",
                    "chart-gantt", "stop-button", "resume-button", "clone-button", "download-csv",
                    "download-best"):
        assert f'id="{element}"' in html
    assert reverse("plotly-js") in html and "//cdn" not in html.lower()  # (a random CSRF token may hold "cdn")


def test_plotly_js_comes_from_the_installed_package(owner_client):
    response = owner_client.get(reverse("plotly-js"))
    assert response.status_code == 200 and len(response.content) > 1_000_000
    assert b"plotly" in response.content[:2000].lower()
    again = owner_client.get(reverse("plotly-js"), HTTP_IF_NONE_MATCH=response["ETag"])
    assert again.status_code == 304


def test_table_is_paginated_sorted_and_filtered(owner_client, search):
    url = reverse("search-table", args=[search.pk])
    html = owner_client.get(url, {"sort": "-fitness", "per_page": 3}).content.decode()
    assert "10 individuals · page 1 of 4" in html
    assert html.index("0.5900") < html.index("0.5800")
    failed = owner_client.get(url, {"status": "failed"}).content.decode()
    assert "1 individual · page 1 of 1" in failed and "oom" in failed
    assert owner_client.get(url, {"sort": "password"}).status_code == 400
    assert owner_client.get(url, {"page": "x"}).status_code == 400


def test_individual_page_shows_lineage_metrics_and_diagram(owner_client, search):
    html = owner_client.get(reverse("individual-detail", args=[search.pk, 4])).content.decode()
    assert 'href="%s"' % reverse("individual-detail", args=[search.pk, 3]) in html  # parent
    assert 'href="%s"' % reverse("individual-detail", args=[search.pk, 5]) in html  # child
    assert "mutation" in html and "accuracy" in html and 'id="diagram"' in html and "conv " in html
    failed = owner_client.get(reverse("individual-detail", args=[search.pk, 3])).content.decode()
    assert "oom: simulated out of memory" in failed
    assert "(zip: genome, PyTorch source)" in html  # no files kept for it: no weights, no ONNX


def test_individual_page_says_when_its_trained_weights_are_kept(owner_client, search):
    from webapp.searches.models import Individual, Weights

    Weights.objects.create(individual=Individual.objects.get(search=search, number=4), data=b"w", nbytes=1,
                           sha256="0" * 64, source="def build(): ...", onnx=b"onnx")
    html = owner_client.get(reverse("individual-detail", args=[search.pk, 4])).content.decode()
    assert "genome, PyTorch source, trained weights, ONNX" in html


def test_individual_page_shows_a_gangs_gradient_exchange(owner_client, search):
    from webapp.searches.models import Individual

    from tests.dashboard.test_exports import GANG

    individual = Individual.objects.get(search=search, number=4)
    assert 'id="traffic"' not in owner_client.get(reverse("individual-detail", args=[search.pk, 4])).content.decode()
    individual.metrics = {**(individual.metrics or {}), **GANG}
    individual.save()
    html = owner_client.get(reverse("individual-detail", args=[search.pk, 4])).content.decode()
    assert 'id="traffic"' in html and "segment_topk" in html
    assert "120 B against 4.00 kB dense (3.00%)" in html  # per rank and step
    assert "1.25%" in html and "(25% communicating)" in html


def test_the_form_defaults_are_a_short_real_digits_search():
    form = SearchForm(data={k: v for k, v in DEFAULTS.items()})
    assert form.is_valid(), form.errors
    config = form.config
    assert config == check_config(config)
    assert config["dataset"] == "digits" and config["evaluation"] == {"mode": "train", "keep_weights": 5}
    assert config["strategy"]["params"]["max_evaluations"] <= 30 and config["training"]["epochs"] <= 3
    no_weights = SearchForm(data={**DEFAULTS, "keep_weights": "0"})
    assert no_weights.is_valid() and no_weights.config["evaluation"]["keep_weights"] == 0


def test_the_explorers_from_the_form_take_their_own_defaults_and_their_parameters_clash_with_no_field():
    """Strategy parameters share the form with the budget's fields: a parameter named like one (reinforce's
    learning rate was) would take that field's value."""
    from nas.strategies import STRATEGIES

    budget_fields = {form_name(name) for name in budget.rules()}
    for cls in STRATEGIES.values():
        assert not {p.name for p in cls.PARAMS} & (budget_fields | set(SearchForm.base_fields)), cls.name
    reinforce = SearchForm(data={**DEFAULTS, "strategy": "reinforce", "entropy": "0.1"})
    assert reinforce.is_valid(), reinforce.errors
    assert reinforce.config["strategy"]["params"] == {"objectives": [["fitness", "max"]], "policy_learning_rate": 0.3,
                                                      "entropy": 0.1, "baseline_decay": 0.9, "max_evaluations": 24}
    assert reinforce.config["training"]["learning_rate"] == DEFAULTS["learning_rate"]
    tpe = SearchForm(data={**DEFAULTS, "strategy": "tpe", "objectives": "accuracy:max, params:min"})
    assert tpe.is_valid(), tpe.errors
    assert tpe.config["strategy"]["params"]["objectives"] == [["accuracy", "max"], ["params", "min"]]
    two = SearchForm(data={**DEFAULTS, "strategy": "reinforce", "objectives": "accuracy:max, params:min"})
    assert not two.is_valid() and "one reward" in str(two.errors["objectives"])


def test_create_then_launch_from_the_form(owner_client):
    data = {**DEFAULTS, "name": "from the form", "launch": "1", "evaluation": "simulated", "sim_duration": "0.1"}
    response = owner_client.post(reverse("search-create"), data)
    search = Search.objects.get(name="from the form")
    assert response.status_code == 302 and response["Location"] == reverse("search-detail", args=[search.pk])
    assert search.status == "running" and search.config["evaluation"]["duration"] == 0.1


def test_every_invalid_value_gets_its_own_error_and_nothing_is_saved(owner_client):
    bad = {**DEFAULTS, "population": "1", "epochs": "0", "learning_rate": "-1", "pool": "no spaces",
           "batch_size": "abc", "seed": "-3", "dataset": "imagenet", "name": "", "keep_weights": "-1"}
    response = owner_client.post(reverse("search-create"), bad)
    assert response.status_code == 400
    html = response.content.decode()
    for field in ("population", "epochs", "learning_rate", "pool", "batch_size", "seed", "dataset", "name",
                  "keep_weights"):
        assert f'id="error-{field}"' in html, field
    assert Search.objects.count() == 0


def test_the_form_offers_a_gangs_compression_and_refuses_a_bad_one_at_its_field(owner_client):
    good = SearchForm(data={**DEFAULTS, "name": "sparse", "compression": "segment_topk:0.01"})
    assert good.is_valid(), good.errors
    assert good.config["evaluation"]["compression"] == {"kind": "segment_topk", "ratio": 0.01}
    assert SearchForm.initial_from("sparse", good.config)["compression"] == "segment_topk:0.01"
    for text, words in (("segment_topk:2", "ratio must be a number in (0, 1]"), ("powersgd:x", "is not a number"),
                        ("gzip", "the kinds are none, segment_topk, powersgd, fp16")):
        response = owner_client.post(reverse("search-create"), {**DEFAULTS, "name": "bad", "compression": text})
        assert response.status_code == 400 and 'id="error-compression"' in response.content.decode(), text
        assert words in response.content.decode(), text
    assert Search.objects.count() == 0


def test_an_engine_check_error_lands_on_its_field(owner_client):
    # Valid field by field, refused by the strategy: generational with no generations and no budget.
    data = {**DEFAULTS, "strategy": "generational", "generations": "", "max_evaluations": ""}
    response = owner_client.post(reverse("search-create"), data)
    assert response.status_code == 400
    assert 'id="error-' in response.content.decode()
    assert Search.objects.count() == 0


def test_actions_stop_resume_clone(owner_client, search):
    assert owner_client.post(reverse("search-action", args=[search.pk, "stop"])).status_code == 302
    search.refresh_from_db()
    assert search.status == "stopped"
    response = owner_client.post(reverse("search-action", args=[search.pk, "stop"]), follow=True)
    assert "Only a running search can be stopped" in response.content.decode()
    owner_client.post(reverse("search-action", args=[search.pk, "resume"]))
    search.refresh_from_db()
    assert search.status == "running"
    response = owner_client.post(reverse("search-action", args=[search.pk, "clone"]))
    copy = Search.objects.exclude(pk=search.pk).get()
    assert copy.cloned_from_id == search.pk and copy.status == "draft" and copy.config == search.config
    assert response["Location"] == reverse("search-detail", args=[copy.pk])


def test_admin_has_every_model(client, django_user_model):
    admin = django_user_model.objects.create_superuser("root", password="pw-root-123")
    client.force_login(admin)
    from django.apps import apps

    models = [model._meta.model_name for model in apps.get_app_config("searches").get_models()]
    assert {"search", "individual", "event", "worker", "archiverow"} <= set(models)
    for model in models:  # a model added later without an admin fails here
        assert client.get(f"/admin/searches/{model}/").status_code == 200, model


def test_nodes_page_lists_workers(owner_client, settings):
    import datetime as dt

    from django.utils import timezone

    from webapp.searches.models import Worker

    Worker.objects.create(name="n1/cpu/0", node="n1", device="cpu", host="host-1", last_seen=timezone.now())
    Worker.objects.create(name="n2/cpu/0", node="n2", device="cpu", host="host-2",
                          last_seen=timezone.now() - dt.timedelta(hours=1))
    from unittest import mock

    with mock.patch("webapp.services.nodes.transport.live_slots", return_value=[]):
        html = owner_client.get(reverse("nodes")).content.decode()
    assert "host-1" in html and "host-2" in html
    assert '<td class="ok">live</td>' in html and '<td class="bad">stale</td>' in html


def test_every_page_carries_the_content_security_policy(owner_client, search, client):
    from webapp.dashboard.csp import HEADER

    urls = [reverse("home"), reverse("search-list"), reverse("search-create"), reverse("nodes"),
            reverse("search-detail", args=[search.pk]), reverse("search-table", args=[search.pk]),
            reverse("search-table", args=[search.pk]) + "?sort=nope", reverse("individual-detail", args=[search.pk, 4]),
            reverse("search-detail", args=[search.pk + 100]), reverse("plotly-js"), reverse("api-searches"), "/admin/"]
    responses = [owner_client.get(url) for url in urls] + [client.get(reverse("login"))]
    statuses = {response.status_code for response in responses}
    assert {200, 400, 404, 302} <= statuses  # pages, a bad query, a missing search, the admin's redirect
    for url, response in zip(urls + [reverse("login")], responses):
        policy = dict(part.strip().split(" ", 1) for part in response[HEADER].split(";"))
        # Only the live page's WebGL charts need eval (see webapp.dashboard.csp.allow_eval).
        webgl = url == reverse("search-detail", args=[search.pk])
        assert policy["script-src"] == ("'self' 'unsafe-eval'" if webgl else "'self'"), url
        assert "unsafe-inline" not in response[HEADER]
        assert policy["style-src"].startswith("'self' 'sha256-"), url
        assert policy["object-src"] == "'none'" and policy["frame-ancestors"] == "'none'"
        assert policy["base-uri"] == "'self'"


def test_no_page_holds_an_inline_script(owner_client, search):
    import re

    from webapp.searches.models import Individual

    Individual.objects.filter(search=search, number=4).update(curve=[{"epoch": 1, "val_accuracy": 0.5}])
    urls = [reverse("home"), reverse("search-list"), reverse("search-create"), reverse("nodes"),
            reverse("search-detail", args=[search.pk]), reverse("individual-detail", args=[search.pk, 4])]
    for url in urls:
        html = owner_client.get(url).content.decode()
        scripts = re.findall(r"<script([^>]*)>(.*?)</script>", html, re.S)
        # Only scripts from a URL, or JSON data (json_script), which a browser never runs.
        assert all("src=" in attrs or 'type="application/json"' in attrs for attrs, _ in scripts), url
        assert all(not body.strip() or "json" in attrs for attrs, body in scripts), url
        assert not re.search(r"\son[a-z]+\s*=", html), url
    html = owner_client.get(reverse("individual-detail", args=[search.pk, 4])).content.decode()
    assert 'id="curve-figure"' in html and "js/individual.js" in html


@pytest.mark.parametrize("name", ["sort", "status", "page", "per_page"])
def test_a_bad_table_query_is_answered_in_plain_text(owner_client, search, name):
    payload = "<script>alert(document.cookie)</script>"
    response = owner_client.get(reverse("search-table", args=[search.pk]), {name: payload})
    assert response.status_code == 400
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert f"`{name}` must" in response.content.decode()


def test_an_unknown_action_is_answered_in_plain_text(owner_client, search):
    response = owner_client.post(reverse("search-action", args=[search.pk, "<img src=x onerror=alert(1)>"]))
    assert response.status_code == 400 and response["Content-Type"].startswith("text/plain")


def test_only_staff_see_the_systems_details_on_the_home_page(client, users, settings):
    settings.REDIS_URL = "redis://127.0.0.1:6399/0"
    engine = settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1]
    for who in (None, "owner"):
        if who:
            client.force_login(users[who])
        html = client.get(reverse("home")).content.decode()
        assert "6399" not in html and engine not in html and "Redis" not in html, who
        assert 'id="system-status"' not in html, who
    client.force_login(users["staff"])
    html = client.get(reverse("home")).content.decode()
    assert 'id="system-status"' in html and "6399" in html and engine in html


def test_the_home_page_lists_the_users_latest_searches(client, users, search):
    from webapp.services import lifecycle

    for n in range(6):
        lifecycle.create_search(users["owner"], f"draft {n}", search.config)
    lifecycle.create_search(users["other"], "not yours", search.config)
    client.force_login(users["owner"])
    html = client.get(reverse("home")).content.decode()
    recent = html[html.index('id="recent-searches"'):]
    assert "draft 5" in recent and "draft 1" in recent and "draft 0" not in recent  # the latest five
    assert "not yours" not in html and ">mine<" not in recent  # older than the five drafts
    assert "status-draft" in recent and "0/12" in recent and "<progress" in recent
    client.force_login(users["other"])
    html = client.get(reverse("home")).content.decode()
    assert "not yours" in html and 'href="%s"' % reverse("search-detail", args=[search.pk]) not in html
    client.force_login(users["staff"])
    assert "No search yet" in client.get(reverse("home")).content.decode()


def test_the_login_error_is_shown_once(client, users):
    response = client.post(reverse("login"), {"username": "owner", "password": "wrong"})
    assert response.content.decode().count("Please enter a correct username and password") == 1


def test_descriptions_count_in_the_singular_and_the_plural():
    from nas.spaces.chain import ChainSpace

    one = {"layers": [{"kernel": 3, "filters": 16}]}
    two = {"layers": [{"kernel": 3, "filters": 16}, {"kernel": 5, "filters": 32}]}
    assert ChainSpace(modules=3).describe(one) == "3 modules of 1 layer: 3x3/16"
    assert ChainSpace(modules=1).describe(two) == "1 module of 2 layers: 3x3/16 > 5x5/32"


def test_the_individual_page_shows_metrics_with_sensible_precision(owner_client, search):
    import re

    from webapp.searches.models import Individual

    Individual.objects.filter(search=search, number=4).update(
        fitness=0.9861111111111112, duration=4.123456789,
        metrics={"accuracy": 0.9861111111111112, "params": 1234567, "flops": 98765432.0, "val_loss": 0.0468791234567,
                 "latency_ms": 0.123456789, "images_per_second": 8123.456789, "precision": "fp32",
                 "peak_memory_bytes": 1536000, "timings": {"train": 1.23456789, "total": 12.3456789}})
    html = owner_client.get(reverse("individual-detail", args=[search.pk, 4])).content.decode()
    metrics = html[html.index('id="metrics"'):html.index("</dl>", html.index('id="metrics"'))]
    for shown in ("0.9861", "1,234,567", "98,765,432", "0.04688", "0.123 ms", "8,123", "fp32", "1.54 MB",
                  "1.23 s", "12.3 s", "4.12 s"):
        assert f"<dd>{shown}</dd>" in metrics or f">{shown}</dd>" in metrics, shown
    assert not re.search(r"\d\.\d{6,}", metrics), "a number printed with six decimals or more"


def test_the_admin_names_weights_in_the_plural_once(client, django_user_model):
    client.force_login(django_user_model.objects.create_superuser("root", password="pw-root-123"))
    html = client.get("/admin/").content.decode()
    assert "Weightss" not in html and ">Weights<" in html


def test_the_list_shows_human_dates_with_the_iso_value_in_a_title(owner_client, search):
    import datetime as dt

    from webapp.searches.models import Search

    Search.objects.filter(pk=search.pk).update(started=dt.datetime(2026, 3, 4, 5, 6, 7, tzinfo=dt.timezone.utc))
    html = owner_client.get(reverse("search-list")).content.decode()
    assert '<time datetime="2026-03-04T05:06:07+00:00" title="2026-03-04T05:06:07+00:00">4 Mar 2026, 05:06 UTC</time>' \
        in html
    cells = html[html.index("<tbody>"):]
    assert "2026-03-04T05:06:07" not in cells.replace('"2026-03-04T05:06:07+00:00"', "")  # only in attributes


def test_a_draft_opens_in_the_form_prefilled_and_saves_its_changes(owner_client, users):
    from webapp.services import lifecycle

    config = {"strategy": {"name": "regularized", "params": {"population": 6, "max_evaluations": 12}},
              "training": {"epochs": 2, "precision": "bf16"}, "space": {"name": "chain", "max_layers": 4}}
    draft = lifecycle.create_search(users["owner"], "try this", config)
    response = owner_client.get(reverse("search-detail", args=[draft.pk]))
    assert response.status_code == 302 and response["Location"] == reverse("search-edit", args=[draft.pk])
    html = owner_client.get(reverse("search-edit", args=[draft.pk])).content.decode()
    assert 'value="try this"' in html and 'name="population" value="6"' in html
    assert 'name="epochs" value="2"' in html and '<option value="bf16" selected>' in html
    form = SearchForm(initial=SearchForm.initial_from(draft.name, draft.config))
    data = {name: value for name, value in form.initial.items() if value is not None}
    saved = owner_client.post(reverse("search-edit", args=[draft.pk]), {**data, "epochs": "1", "draft": "1"})
    assert saved.status_code == 302
    draft.refresh_from_db()
    assert draft.status == "draft" and draft.config["training"]["epochs"] == 1
    assert draft.config["training"]["precision"] == "bf16" and draft.config["space"]["max_layers"] == 4  # kept
    bad = owner_client.post(reverse("search-edit", args=[draft.pk]), {**data, "population": "1"})
    assert bad.status_code == 400 and 'id="error-population"' in bad.content.decode()
    draft.refresh_from_db()
    assert draft.config["strategy"]["params"]["population"] == 6  # nothing changed
    launched = owner_client.post(reverse("search-edit", args=[draft.pk]), {**data, "launch": "1"})
    draft.refresh_from_db()
    assert launched["Location"] == reverse("search-detail", args=[draft.pk]) and draft.status == "running"
    again = owner_client.get(reverse("search-edit", args=[draft.pk]))
    assert again.status_code == 302 and again["Location"] == reverse("search-detail", args=[draft.pk])


def test_a_clone_opens_in_the_form_and_says_whence_it_came(owner_client, search):
    response = owner_client.post(reverse("search-action", args=[search.pk, "clone"]), follow=True)
    html = response.content.decode()
    copy = Search.objects.exclude(pk=search.pk).get()
    assert response.redirect_chain[-1][0] == reverse("search-edit", args=[copy.pk])
    assert "cloned from" in html and f'href="{reverse("search-detail", args=[search.pk])}"' in html
    assert 'id="launch-button"' in html


def test_the_form_carries_what_this_installation_measured(owner_client, users, search):
    """The estimate's inputs: seconds per epoch by space and dataset from recorded trained evaluations, and
    the live slots by pool (the page's script does the arithmetic; the browser test reads the sentence)."""
    import json as json_module

    from webapp.searches.models import Individual
    from webapp.services import estimates

    search.config["evaluation"] = {"mode": "train", "keep_weights": 0}
    search.save()
    Individual.objects.filter(search=search, status="done").update(duration=6.0, metrics={"epochs": 2})
    per_epoch = estimates.seconds_per_epoch()
    assert per_epoch == {"chain/digits": {"seconds": 3.0, "count": 9}}
    html = owner_client.get(reverse("search-create")).content.decode()
    start = html.index('<script id="measured" type="application/json">') + len('<script id="measured" type="application/json">')
    assert json_module.loads(html[start:html.index("</script>", start)])["per_epoch"] == per_epoch
    assert 'id="estimate"' in html
