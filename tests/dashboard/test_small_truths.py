"""Issue 36, item 10: the small things the API, the form, the command line and the README said that were not
quite true. (The ``not sent`` state after a resume is in ``test_rows``, the prompt ``stopped`` in
``tests/engine/test_loop.py``, the form's estimate in ``tests/browser/test_form_estimate.py``.)"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from django.urls import reverse

from webapp.dashboard.architecture_form import DEFAULTS, SearchForm
from webapp.searches.models import Individual
from webapp.stack import privileges

ROOT = Path(__file__).resolve().parents[2]


def create(client, config):
    return client.post(reverse("api-searches"), json.dumps({"name": "x", "config": config}),
                       content_type="application/json")


def test_errors_spell_values_as_json(owner_client):
    response = create(owner_client, {"training": {"epochs": True}})
    assert response.status_code == 400
    assert response.json()["error"] == "training.epochs: must be a number (got true)"
    assert "(got false)" in create(owner_client, {"training": {"learning_rate": False}}).json()["error"]
    assert '(got "ten")' in create(owner_client, {"training": {"epochs": "ten"}}).json()["error"]


@pytest.mark.parametrize("field", ["learning_rate", "max_seconds"])
def test_a_zero_step_or_time_cap_is_refused(owner_client, field):
    response = create(owner_client, {"training": {field: 0}})
    assert response.status_code == 400 and response.json()["field"] == f"training.{field}"
    assert "must be greater than 0" in response.json()["error"]
    form = SearchForm(data={**DEFAULTS, field: "0"})
    assert not form.is_valid() and "greater than 0" in str(form.errors[field])


def test_an_objective_that_is_not_one_names_the_metrics():
    for text in ("foo:bar", "accuracy:up", "foo:max"):
        form = SearchForm(data={**DEFAULTS, "strategy": "nsga2", "objectives": text})
        assert not form.is_valid()
        message = str(form.errors["objectives"])
        assert "is not an objective" in message and "accuracy, params, flops, latency_ms, fitness" in message
        assert "not a pair" not in message
    good = SearchForm(data={**DEFAULTS, "strategy": "nsga2", "objectives": "accuracy:max, params:min"})
    assert good.is_valid(), good.errors


def test_the_individuals_page_has_results_and_whole_messages(owner_client, search):
    long = "RuntimeError: " + "x" * 600
    Individual.objects.filter(search=search, number=3).update(message=long)
    page = owner_client.get(reverse("api-individuals", args=[search.pk]), {"per_page": 100}).json()
    assert page["results"] == page["rows"] and page["count"] == page["total"] == len(page["results"])
    assert next(row for row in page["results"] if row["number"] == 3)["message"] == long


def test_help_is_answered_without_installing_the_venv(tmp_path):
    env = {**os.environ, "NAS_VENV": str(tmp_path / "venv")}
    env.pop("NAS_NO_BOOTSTRAP", None)
    for flag in ("--help", "-h", "help"):
        done = subprocess.run([sys.executable, str(ROOT / "manage.py"), flag], env=env, capture_output=True,
                              text=True, timeout=60)
        assert done.returncode == 0 and "manage.py COMMAND" in done.stdout
        assert all(command in done.stdout for command in ("up", "search", "evalworker", "controlworker", "test"))
        assert "--port" in done.stdout
    assert not (tmp_path / "venv").exists()  # nothing was created, nothing installed


def test_the_quick_start_shows_the_port():
    quick = ROOT.joinpath("README.md").read_text().split("## Quick start", 1)[1].split("## ", 1)[0]
    assert "up --port" in quick


def test_workers_started_as_root_by_up_drop_celerys_superuser_warning(monkeypatch):
    from celery.platforms import check_privileges

    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert privileges.root_env() == {}
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(os, "getuid", lambda: 0)
    assert privileges.root_env() == {"C_FORCE_ROOT": "1"}
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        monkeypatch.delenv("C_FORCE_ROOT", raising=False)
        privileges.quiet_root_warning()  # not acknowledged: the warning stays
        check_privileges({"json"})
        assert any("superuser" in str(w.message) for w in seen)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        monkeypatch.setenv("C_FORCE_ROOT", "1")
        privileges.quiet_root_warning()
        check_privileges({"json"})
        assert not any("superuser" in str(w.message) for w in seen)
