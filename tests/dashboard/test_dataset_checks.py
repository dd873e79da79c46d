"""Issue 36, item 6: a dataset whose files are not installed (and may not be downloaded) is refused when a search
is created (form, JSON API, ``search create``) and when a draft is launched, with a message naming ``NAS_DATA_DIR``
and ``NAS_DATA_DOWNLOAD``; installed (small files in torchvision's real on-disk formats) or downloadable, it is
accepted. The check reads no data and imports no torch."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from evaluators.catalog import unavailable
from tests.evaluators.test_datasets import _cifar_files, _fashion_files
from webapp.dashboard.architecture_form import DEFAULTS
from webapp.searches.models import Search
from webapp.services import lifecycle

TRAINED = {"dataset": "cifar10", "evaluation": {"mode": "train"}}


@pytest.fixture
def empty_data(tmp_path, monkeypatch):
    monkeypatch.setenv("NAS_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("NAS_DATA_DOWNLOAD", raising=False)
    return tmp_path


def test_the_check_is_file_presence(empty_data, monkeypatch):
    for name in ("cifar10", "fashion_mnist"):
        message = unavailable(name)
        assert message and str(empty_data) in message and "NAS_DATA_DIR" in message
        assert "NAS_DATA_DOWNLOAD=1" in message
    assert unavailable("digits") is None and unavailable("synthetic") is None
    _cifar_files(empty_data)
    _fashion_files(empty_data, compress=True)
    assert unavailable("cifar10") is None and unavailable("fashion_mnist") is None
    monkeypatch.setenv("NAS_DATA_DIR", str(empty_data / "elsewhere"))
    monkeypatch.setenv("NAS_DATA_DOWNLOAD", "1")
    assert unavailable("cifar10") is None  # the workers will download it


def test_the_check_imports_no_torch():
    code = ("import sys; from evaluators.catalog import unavailable; unavailable('cifar10'); "
            "assert 'torch' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_api_form_and_command_refuse_a_missing_dataset(owner_client, users, empty_data):
    api = owner_client.post(reverse("api-searches"), json.dumps({"name": "c", "config": TRAINED}),
                            content_type="application/json")
    assert api.status_code == 400 and api.json()["field"] == "dataset"
    assert "NAS_DATA_DIR" in api.json()["error"] and "NAS_DATA_DOWNLOAD=1" in api.json()["error"]
    form = owner_client.post(reverse("search-create"), {**DEFAULTS, "name": "c", "dataset": "cifar10"})
    html = form.content.decode()
    assert form.status_code == 400 and 'id="error-dataset"' in html and "NAS_DATA_DOWNLOAD=1" in html
    assert "cifar10 (not installed)" in html
    with pytest.raises(CommandError, match="dataset: The cifar10 dataset is not installed.*NAS_DATA_DIR"):
        call_command("search", "create", "--name", "c", "--owner", "owner", "--set", "dataset=cifar10")
    assert not Search.objects.exists()
    simulated = owner_client.post(reverse("api-searches"), json.dumps(
        {"name": "s", "config": {"dataset": "cifar10", "evaluation": {"mode": "simulated"}}}),
        content_type="application/json")
    assert simulated.status_code == 201  # a simulated evaluation reads no data


def test_installed_files_are_accepted_and_a_launch_checks_again(owner_client, users, empty_data):
    _cifar_files(empty_data)
    created = owner_client.post(reverse("api-searches"), json.dumps({"name": "c", "config": TRAINED}),
                                content_type="application/json")
    assert created.status_code == 201, created.content
    search = Search.objects.get(pk=created.json()["id"])
    for path in (empty_data / "cifar-10-batches-py").iterdir():
        path.unlink()
    refused = owner_client.post(reverse("api-action", args=[search.pk, "launch"]))
    assert refused.status_code == 409 and "NAS_DATA_DIR" in refused.json()["error"]
    search.refresh_from_db()
    assert search.status == "draft"
    with pytest.raises(lifecycle.ActionError, match="Cannot launch: The cifar10 dataset is not installed"):
        lifecycle.launch(search)
