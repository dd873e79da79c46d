"""Issue 36, item 8: one set of small defaults, the same from the form, the JSON API and ``search create``, and the
same as the README's example."""
from __future__ import annotations

import json
import re
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.urls import reverse

from webapp.dashboard.architecture_form import DEFAULTS
from webapp.searches import starter
from webapp.searches.config import check_config, planned_evaluations
from webapp.searches.models import Search

README = Path(__file__).resolve().parents[2] / "README.md"


def test_form_api_and_command_make_the_same_small_search(owner_client, users):
    form = owner_client.post(reverse("search-create"), {**DEFAULTS, "name": "from the form"})
    assert form.status_code == 302
    api = owner_client.post(reverse("api-searches"), json.dumps({"name": "from the api"}),
                            content_type="application/json")
    assert api.status_code == 201, api.content
    get_user_model().objects.filter(pk=users["owner"].pk).update(is_superuser=True)
    call_command("search", "create", "--name", "from the command")
    configs = [Search.objects.get(name=name).config for name in ("from the form", "from the api", "from the command")]
    assert configs[0] == configs[1] == configs[2]
    config = configs[0]
    assert config["strategy"]["params"] == {"population": 8, "sample_size": 3, "max_evaluations": 24}
    assert config["space"]["max_layers"] == 6 and config["training"]["epochs"] == 3
    assert planned_evaluations(config) == 24


def test_the_readme_example_is_the_default_configuration():
    text = README.read_text()
    block = re.search(r"every field left out takes its default.*?```json\n(.*?)```", text, re.S).group(1)
    example = json.loads(block)
    assert check_config(example) == check_config({})


def test_each_strategy_gets_the_starter_values_it_takes():
    for name, planned in (("regularized", 24), ("random", 24), ("generational", 24), ("nsga2", 24), ("tpe", 24),
                          ("reinforce", 24)):
        config = check_config({"strategy": {"name": name}})
        assert planned_evaluations(config) == planned, name
    assert "max_evaluations" not in starter.strategy_params("generational")
    explicit = check_config({"strategy": {"params": {"population": 50, "max_evaluations": 400}}})
    assert explicit["strategy"]["params"]["population"] == 50 and planned_evaluations(explicit) == 400
