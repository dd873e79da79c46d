"""``manage.py search ...``: bad input is one clear line and changes nothing; a real search is watched to its end."""
from __future__ import annotations

import csv
import json
import subprocess
import zipfile

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError

from tests.conftest import manage
from tests.engine.conftest import assert_each_recorded_once, owner, simulated_config
from webapp.searches.models import Search
from webapp.services.progress_line import bar, progress_line


def test_progress_line_shows_bar_best_nodes_and_speedup():
    summary = {"nodes": [{"node": "alpha", "count": 7}, {"node": "beta", "count": 5}], "ideal": 2,
               "held": 2.0, "speedup": 1.84, "efficiency": 0.92, "failed": 1}
    line = progress_line("running", 12, 30, 0.95123, summary)
    assert line.startswith("running  [" + "#" * 10 + "." * 14 + "] 12/30 best 0.9512")
    assert "alpha 7 beta 5" in line and "speedup 1.84/2 (92%)" in line and "failed 1" in line
    assert progress_line("draft", 0, 0, None, {}) == "draft    [" + "." * 24 + "] 0/? best -"
    assert bar(40, 30) == "[" + "#" * 24 + "]"


@pytest.mark.django_db
def test_create_reports_the_bad_field_and_saves_nothing(tmp_path):
    owner()
    config = tmp_path / "search.json"
    config.write_text(json.dumps(simulated_config()))
    with pytest.raises(CommandError, match=r"strategy\.params\.population"):
        call_command("search", "create", "--name", "bad", "--config", str(config), "--owner", "tester",
                     "--set", "strategy.params.population=-3")
    with pytest.raises(CommandError, match="not JSON"):
        config.write_text("{nope")
        call_command("search", "create", "--name", "bad", "--config", str(config), "--owner", "tester")
    with pytest.raises(CommandError, match="--set takes FIELD=VALUE"):
        call_command("search", "create", "--name", "bad", "--set", "population")
    with pytest.raises(CommandError, match="no user 'nobody'"):
        call_command("search", "create", "--name", "bad", "--owner", "nobody")
    assert not Search.objects.exists()


@pytest.mark.django_db
def test_create_applies_overrides_and_actions_check_the_state(tmp_path, capsys):
    get_user_model().objects.create_superuser("boss", password="x")
    config = tmp_path / "search.json"
    config.write_text(json.dumps(simulated_config()))
    call_command("search", "create", "--name", "tuned", "--config", str(config),
                 "--set", "strategy.params.max_evaluations=12", "--set", "dataset=synthetic")
    search = Search.objects.get()
    assert search.owner.username == "boss" and search.evaluations_total == 12
    assert search.config["dataset"] == "synthetic" and search.status == Search.Status.DRAFT
    with pytest.raises(CommandError, match="Only a running search can be stopped"):
        call_command("search", "stop", str(search.pk))
    with pytest.raises(CommandError, match="no search 999"):
        call_command("search", "watch", "999")
    call_command("search", "clone", str(search.pk), "--name", "again")
    call_command("search", "list")
    out = capsys.readouterr().out
    assert f"created search {search.pk} (tuned): 12 evaluations planned" in out
    assert "again" in out and "draft" in out


@pytest.mark.django_db
def test_the_explorers_are_created_from_the_terminal_and_reinforce_refuses_two_objectives(tmp_path):
    owner()
    config = tmp_path / "search.json"
    config.write_text(json.dumps(simulated_config()))
    call_command("search", "create", "--name", "bo", "--config", str(config), "--owner", "tester",
                 "--set", 'strategy={"name": "tpe", "params": {"max_evaluations": 60}}',
                 "--set", 'strategy.params.objectives=[["accuracy", "max"], ["params", "min"]]')
    params = Search.objects.get().config["strategy"]["params"]
    assert params["objectives"] == [["accuracy", "max"], ["params", "min"]] and params["max_evaluations"] == 60
    with pytest.raises(CommandError, match=r"strategy\.params\.objectives.*one reward.*nsga2 or tpe"):
        call_command("search", "create", "--name", "rl", "--config", str(config), "--owner", "tester",
                     "--set", 'strategy={"name": "reinforce"}',
                     "--set", 'strategy.params.objectives=[["accuracy", "max"], ["params", "min"]]')
    assert Search.objects.count() == 1


@pytest.mark.django_db
def test_a_draft_is_edited_from_the_terminal_until_it_is_launched(capsys, redis_url, settings):
    from webapp.messaging import transport

    settings.REDIS_URL = redis_url  # launching flags the search in the session's real Redis
    transport.reset_clients()
    get_user_model().objects.create_superuser("boss", password="x")
    call_command("search", "create", "--name", "draft", "--set", "training.epochs=2")
    search = Search.objects.get()
    call_command("search", "edit", str(search.pk), "--set", "training.epochs=1", "--name", "one epoch")
    search.refresh_from_db()
    assert search.name == "one epoch" and search.config["training"]["epochs"] == 1
    with pytest.raises(CommandError, match="training.epochs"):
        call_command("search", "edit", str(search.pk), "--set", "training.epochs=0")
    search.refresh_from_db()
    assert search.config["training"]["epochs"] == 1  # a bad edit changes nothing
    call_command("search", "launch", str(search.pk))
    with pytest.raises(CommandError, match="Only a draft can be edited"):
        call_command("search", "edit", str(search.pk), "--set", "training.epochs=3")
    assert f"edited draft {search.pk} (one epoch)" in capsys.readouterr().out
    transport.reset_clients()


@pytest.mark.integration
def test_a_search_created_launched_and_watched_from_the_terminal(stack, tmp_path):
    stack.evaluator("alpha", slots=2, wait=False)
    stack.control()
    owner()
    config = tmp_path / "search.json"
    config.write_text(json.dumps(simulated_config(evaluations=10, duration=0.2)))
    run = subprocess.run(
        manage("search", "create", "--name", "from the terminal", "--config", str(config), "--owner", "tester",
               "--watch"),
        env=stack.env(), capture_output=True, text=True, timeout=120,
    )
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0].startswith("created search") and lines[1].startswith("launched search")
    progress = [line for line in lines if line.startswith(("running", "finished"))]
    assert len(progress) >= 2 and "10/10" in progress[-1] and "alpha 10" in progress[-1]
    assert lines[-1].endswith("finished")
    search = Search.objects.get(name="from the terminal")
    assert_each_recorded_once(search, 10)

    out = tmp_path / "export"
    export = subprocess.run(manage("search", "export", str(search.pk), "--out", str(out), "--best", "1"),
                            env=stack.env(), capture_output=True, text=True, timeout=180)
    assert export.returncode == 0, export.stderr
    rows = list(csv.DictReader((out / "individuals.csv").open()))
    assert sorted(int(row["number"]) for row in rows) == list(range(10))
    events = [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    names = zipfile.ZipFile(out / "best.zip").namelist()
    assert any(name.endswith("model.py") for name in names) and any(name.endswith("genome.json") for name in names)
