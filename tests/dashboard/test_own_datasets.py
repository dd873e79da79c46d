"""Registered data sets (issue 35): by path through the service, the JSON API and ``manage.py dataset``; every
refusal a clear message with nothing registered; owner-scoped like searches; chosen in a search by name; the
list and detail pages and their thumbnails."""
from __future__ import annotations

import json
import subprocess
import sys
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from tests.dashboard.conftest import CONFIG
from tests.evaluators.digit_folders import write_digit_folders, write_digit_npz
from webapp.datasets.models import DataSet
from webapp.searches.config import ConfigError
from webapp.services import datasets, lifecycle

pytestmark = pytest.mark.django_db


@pytest.fixture
def root(tmp_path, settings):
    """The one allowed root, with a set of class folders (10 digits x 9 PNGs, one corrupt) in it."""
    settings.NAS_DATASET_ROOTS = [str(tmp_path / "allowed")]
    write_digit_folders(tmp_path / "allowed" / "digits", per_class=9)
    return tmp_path / "allowed"


def test_register_by_path(root, users):
    found = datasets.register(users["owner"], "mydigits", str(root / "digits"))
    row = datasets.dataset_row(found)
    assert row["classes"] == [f"digit_{k}" for k in range(10)] and row["counts"] == [9] * 10
    assert row["images"] == 90 and row["channels"] == 1 and len(row["corrupt"]) == 1 and row["imbalance"] == 1.0
    assert row["kind"] == "folder" and len(row["digest"]) == 64 and row["sizes"] == {"8x8": 60, "12x12": 30}
    npz = datasets.register(users["owner"], "mynpz", str(write_digit_npz(root / "d.npz", per_class=4)))
    assert npz.kind == "npz" and npz.images == 40


@pytest.mark.parametrize("name, path, message", [
    ("one", "one", "a classifier needs two"),
    ("empty", "empty", "no readable image"),
    ("mixed", "mixed", "mixes grey and colour"),
    ("outside", "/etc", "outside the folders data sets may be registered from"),
    ("link", "link", "outside the folders"),
    ("digits", "digits", "built-in data set's name"),
    ("bad name!", "digits", "A data set's name must be"),
    ("nothing", "absent", "does not exist"),
])
def test_refusals_register_nothing(root, users, name, path, message):
    write_digit_folders(root / "one", classes=(3,), per_class=2)
    write_digit_folders(root / "empty", classes=(1, 2), per_class=2, corrupt=False)
    (root / "empty" / "digit_5").mkdir()
    write_digit_folders(root / "mixed", classes=(1, 2), per_class=2, rgb_class=1)
    (root / "link").symlink_to(root.parent)  # resolves outside the root
    with pytest.raises(datasets.RegisterError, match=message):
        datasets.register(users["owner"], name, path if path.startswith("/") else str(root / path))
    assert not DataSet.objects.exists()


def test_a_name_is_used_once_and_only_staff_share(root, users):
    datasets.register(users["owner"], "mine", str(root / "digits"))
    with pytest.raises(datasets.RegisterError, match="already used"):
        datasets.register(users["other"], "mine", str(root / "digits"))
    with pytest.raises(datasets.RegisterError, match="Only staff"):
        datasets.register(users["owner"], "shared", str(root / "digits"), shared=True)
    datasets.register(users["staff"], "shared", str(root / "digits"), shared=True)
    assert DataSet.objects.count() == 2


def test_owner_scoping_and_search_config(root, users):
    datasets.register(users["owner"], "mine", str(root / "digits"))
    datasets.register(users["staff"], "common", str(root / "digits"), shared=True)
    datasets.register(users["staff"], "private", str(root / "digits"))
    names = lambda user: sorted(datasets.visible_datasets(user).values_list("name", flat=True))  # noqa: E731
    assert names(users["owner"]) == ["common", "mine"] and names(users["other"]) == ["common"]
    assert names(users["staff"]) == ["common", "mine", "private"]
    config = {**CONFIG, "dataset": "mine", "data": {"input_size": 16, "augment": True},
              "evaluation": {"mode": "train"}}
    search = lifecycle.create_search(users["owner"], "on mine", config)
    assert search.config["data"] == {"input_size": 16, "validation_share": 0.2, "augment": True}
    assert search.config["registered"]["path"] == str((root / "digits").resolve())
    lifecycle.create_search(users["other"], "on common", {**config, "dataset": "common"})
    for user, name in ((users["other"], "mine"), (users["owner"], "private"), (users["owner"], "imagenet")):
        with pytest.raises(ConfigError, match=f"dataset: there is no data set '{name}'"):
            lifecycle.create_search(user, "not theirs", {**config, "dataset": name})
    forged = {**config, "registered": {"name": "mine", "kind": "folder", "path": "/etc", "digest": "0",
                                       "classes": ["a", "b"], "channels": 1}}
    clone = lifecycle.create_search(users["owner"], "forged", forged)  # the client's "registered" is ignored
    assert clone.config["registered"]["path"] != "/etc"
    with pytest.raises(ConfigError, match="applies to registered data sets only"):
        lifecycle.create_search(users["owner"], "x", {**config, "dataset": "digits"})


def test_a_held_out_set_must_match_and_be_usable(root, users):
    from evaluators.result import EvaluationResult

    datasets.register(users["owner"], "mine", str(root / "digits"))
    datasets.register(users["owner"], "mine_test", str(root / "digits"))
    datasets.register(users["staff"], "private", str(root / "digits"))
    write_digit_folders(root / "three", classes=(1, 2, 3), per_class=3, corrupt=False)
    datasets.register(users["owner"], "three", str(root / "three"))
    config = {**CONFIG, "dataset": "mine", "data": {"test": "mine_test"}, "evaluation": {"mode": "train"}}
    search = lifecycle.create_search(users["owner"], "held out", config)
    assert search.config["data"]["test"] == "mine_test"
    assert search.config["registered"]["held_out"]["name"] == "mine_test"
    for test, message in (("three", "must have the classes and channels of mine"),
                          ("private", "no registered data set 'private' that you may use"),
                          ("mine", "must be another registered data set's name"), (3, "must be another")):
        with pytest.raises(ConfigError, match=message):
            lifecycle.create_search(users["owner"], "bad", {**config, "data": {"test": test}})
    # Recorded, never an objective: no strategy ranks by the held-out figure.
    result = EvaluationResult("ok", 0.9, metrics={"accuracy": 0.9, "held_out_accuracy": 0.8, "held_out_images": 9})
    assert result.objectives() == {"accuracy": 0.9}


def test_api(root, users, client):
    client.force_login(users["owner"])
    url = reverse("api-datasets")
    made = client.post(url, {"name": "mine", "path": str(root / "digits")}, content_type="application/json")
    assert made.status_code == 201 and made.json()["counts"] == [9] * 10
    again = client.post(url, {"name": "mine", "path": str(root / "digits")}, content_type="application/json")
    assert again.status_code == 400 and "already used" in again.json()["error"]
    outside = client.post(url, {"name": "etc", "path": "/etc"}, content_type="application/json")
    assert outside.status_code == 400 and "outside" in outside.json()["error"]
    assert client.post(url, {"name": "x", "path": 3, "extra": 1}, content_type="application/json").status_code == 400
    assert [d["name"] for d in client.get(url).json()["results"]] == ["mine"]
    assert client.get(reverse("api-dataset", args=["mine"])).json()["images"] == 90
    client.force_login(users["other"])
    assert client.get(reverse("api-dataset", args=["mine"])).status_code == 404
    assert client.get(url).json()["results"] == []


def test_pages_and_thumbnails(root, users, client):
    datasets.register(users["owner"], "mine", str(root / "digits"))
    client.force_login(users["owner"])
    listing = client.get(reverse("dataset-list")).content.decode()
    assert 'href="/datasets/mine/"' in listing
    page = client.get(reverse("dataset-detail", args=["mine"])).content.decode()
    assert "digit_9" in page and "broken.png" in page and "imbalance" in page.lower()
    thumbnail = client.get(reverse("dataset-sample", args=["mine", 3, 0]))
    assert thumbnail.status_code == 200 and thumbnail["Content-Type"] == "image/png"
    assert client.get(reverse("dataset-sample", args=["mine", 3, 99])).status_code == 404
    client.force_login(users["other"])
    assert client.get(reverse("dataset-detail", args=["mine"])).status_code == 404
    assert client.get(reverse("dataset-sample", args=["mine", 3, 0])).status_code == 404


def test_command(root, users):
    users["staff"].is_superuser = True
    users["staff"].save()
    out = StringIO()
    call_command("dataset", "add", "cmd", str(root / "digits"), "--owner", "owner", stdout=out)
    assert "registered cmd: 90 images in 10 classes" in out.getvalue() and "skipped digit_0/broken.png" in out.getvalue()
    with pytest.raises(CommandError, match="outside"):
        call_command("dataset", "add", "etc", "/etc", stdout=StringIO())
    out = StringIO()
    call_command("dataset", "list", stdout=out)
    assert "cmd" in out.getvalue() and "owner" in out.getvalue()
    out = StringIO()
    call_command("dataset", "show", "cmd", stdout=out)
    assert json.loads(out.getvalue())["images"] == 90


def test_the_web_side_imports_no_torch():
    code = ("import os, sys; os.environ['DJANGO_SETTINGS_MODULE'] = 'webapp.settings.test'; import django; "
            "django.setup(); import webapp.services.datasets, webapp.dashboard.dataset_views, evaluators.data_files; "
            "assert 'torch' not in sys.modules, 'torch imported'")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_best_zip_files_for_a_registered_set():
    from webapp.services.predict_script import prediction_files

    assert prediction_files({"dataset": "digits"}) == {}
    files = prediction_files({"dataset": "parts", "data": {"input_size": 24},
                              "registered": {"name": "parts", "channels": 3, "classes": ["ok", "scratch"]}})
    assert json.loads(files["classes.json"]) == ["ok", "scratch"]
    source = files["predict.py"].decode()
    compile(source, "predict.py", "exec")
    assert "SIZE, MODE = 24, 'RGB'" in source


def test_the_form_offers_the_users_sets(root, users, client):
    from webapp.dashboard.architecture_form import DEFAULTS
    from webapp.searches.models import Search

    datasets.register(users["owner"], "mine", str(root / "digits"))
    client.force_login(users["owner"])
    assert "mine (registered)" in client.get(reverse("search-create")).content.decode()
    response = client.post(reverse("search-create"), {**DEFAULTS, "name": "on mine", "dataset": "mine"})
    assert response.status_code == 302, response.content.decode()[:2000]
    search = Search.objects.get(name="on mine")
    assert search.config["registered"]["name"] == "mine" and search.config["data"]["input_size"] == 32
    client.force_login(users["other"])
    assert "mine (registered)" not in client.get(reverse("search-create")).content.decode()
    refused = client.post(reverse("search-create"), {**DEFAULTS, "name": "theirs", "dataset": "mine"})
    assert refused.status_code == 400 and not Search.objects.filter(name="theirs").exists()


def test_a_set_moved_away_is_refused_at_launch(root, users):
    import shutil

    datasets.register(users["owner"], "mine", str(root / "digits"))
    search = lifecycle.create_search(users["owner"], "on mine", {**CONFIG, "dataset": "mine",
                                                                 "evaluation": {"mode": "train"}})
    shutil.rmtree(root / "digits")
    with pytest.raises(lifecycle.ActionError, match="not readable here: .*digits does not exist"):
        lifecycle.launch(search)
