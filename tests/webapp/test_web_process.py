"""The web process loads only its own room: importing the URL configuration and the ASGI application, then
serving every page, download and API call, imports no torch and none of the control loop's or the evaluation
worker's code (a fresh process, a real database file and the session's real Redis)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.integration

PROBE = r"""
import json, sys
import django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
import numpy as np
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse
import webapp.asgi  # the websocket routing and consumers too
from nas.spaces import get_space
from webapp.searches.models import Individual, Weights
from webapp.services import lifecycle

user = get_user_model().objects.create_user("probe", password="a-long-password-1")
search = lifecycle.create_search(user, "probe", {"evaluation": {"mode": "train", "keep_weights": 1}})
space = get_space("chain")
genome = space.sample(np.random.default_rng(0))
individual = Individual.objects.create(
    search=search, number=0, genome=genome, key=space.key(genome), description=space.describe(genome),
    status="done", fitness=0.9, metrics={"accuracy": 0.9, "params": 1000, "normalization": {"mean": [8.0], "std": [4.0]}},
    curve=[{"epoch": 1, "val_accuracy": 0.9}], node="n", device="cpu", slot="n/cpu/0")
Weights.objects.create(individual=individual, data=b"w", nbytes=1, sha256="0" * 64, source="# model", onnx=b"o")
type(search).objects.filter(pk=search.pk).update(status="finished")  # a draft's page is its form (below)
draft = lifecycle.create_search(user, "draft", {})
client = Client()
client.force_login(user)
gets = [reverse(name, args=args) for name, args in [
    ("home", []), ("search-list", []), ("search-create", []), ("search-detail", [search.pk]), ("search-edit", [draft.pk]),
    ("search-table", [search.pk]), ("individual-detail", [search.pk, 0]), ("download-csv", [search.pk]),
    ("download-events", [search.pk]), ("download-best", [search.pk]), ("download-genome", [search.pk, 0]),
    ("download-individual", [search.pk, 0]), ("nodes", []), ("api-searches", []), ("api-search", [search.pk]),
    ("api-snapshot", [search.pk]), ("api-events", [search.pk]), ("api-individuals", [search.pk]),
]] + ["/admin/", "/admin/searches/weights/", "/admin/searches/individual/"]
user.is_staff = user.is_superuser = True
user.save()
statuses = {url: client.get(url).status_code for url in gets}
created = client.post(reverse("api-searches"), data=json.dumps({"name": "second", "config": {}}),
                      content_type="application/json").status_code
print(json.dumps({"statuses": statuses, "created": created,
                  "loaded": sorted(m for m in sys.modules if m.split(".")[0] == "torch"
                                   or m.startswith(("webapp.control", "webapp.worker")))}))
"""


def test_serving_every_page_imports_no_torch_and_no_other_process_code(redis_url, tmp_path):
    env = {"DJANGO_SETTINGS_MODULE": "webapp.settings.test", "NAS_STATE_DIR": str(tmp_path), "REDIS_URL": redis_url,
           "ALLOWED_HOSTS": "testserver", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert all(status == 200 for status in report["statuses"].values()), report["statuses"]
    assert report["created"] == 201
    assert report["loaded"] == [], report["loaded"]
