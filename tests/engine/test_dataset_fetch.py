"""A registered set reaches a worker by its digest (issue 35), on the real stack: uploaded through the JSON API
(chunks), then trained on by a worker that does not read the path (``NAS_DATA_FETCH=always``: as a host without
the shared file system) and fetches the archive from the web server, signed, into its host's cache; a worker
that can neither read nor fetch hands each evaluation back for another worker, and when it is the only one the
evaluation fails with a reason naming it (``tests/engine/test_data_reach.py``: a second worker that can)."""
from __future__ import annotations

import subprocess
import sys
import zipfile

import pytest
from django.test import Client

from tests.browser.live_stack import free_port, web  # noqa: F401 (fixture)
from tests.dashboard.uploading import upload
from tests.engine.conftest import finished, launched, owner
from tests.evaluators.digit_folders import archive_folder, folder_search_config, truncate_one, write_digit_folders
from webapp.searches.models import Individual, Search
from webapp.services import datasets, exports

pytestmark = pytest.mark.integration

CONFIG = folder_search_config("uploaded", evaluations=2, population=2)


def uploaded(tmp_path, settings, classes=(0, 1, 2, 3), per_class=40):
    settings.DATA_DIR = tmp_path / "server-data"
    root = write_digit_folders(tmp_path / "src" / "digits", classes=classes, per_class=per_class, corrupt=False)
    truncate_one(root)
    client = Client()
    client.force_login(owner())
    response = upload(client, "uploaded", archive_folder(root, tmp_path / "digits.zip", top="digits"))
    assert response.status_code == 201, response.content
    return response.json()


def test_a_worker_fetches_an_uploaded_set_by_digest(stack, web, tmp_path, settings):
    row = uploaded(tmp_path, settings)
    # The held-out test set: other images of the same classes, registered by path (one corrupt file).
    settings.NAS_DATASET_ROOTS = [str(tmp_path)]
    test_root = write_digit_folders(tmp_path / "held_out", classes=(0, 1, 2, 3), per_class=25, skip=40)
    held = datasets.register(owner(), "held_out", str(test_root))
    cache = tmp_path / "worker-cache"
    worker = stack.evaluator("alpha", OMP_NUM_THREADS="1", NAS_SERVER_URL=web, NAS_DATA_FETCH="always",
                             NAS_DATA_CACHE=str(cache), wait=False)
    stack.control()
    config = {**CONFIG, "data": {**CONFIG["data"], "test": "held_out"}, "evaluation": {"mode": "train", "keep_weights": 1},
              "training": {"epochs": 6, "batch_size": 16, "learning_rate": 0.01}}
    search = finished(launched("uploaded digits", config).pk, timeout=300)
    assert search.status == Search.Status.FINISHED, [i.message for i in Individual.objects.filter(search=search)]
    individuals = list(Individual.objects.filter(search=search))
    assert len(individuals) == 2 and all(i.status == Individual.Status.DONE for i in individuals), \
        [i.message for i in individuals]
    assert (cache / row["digest"]).is_dir() and (cache / held.digest).is_dir() and not list(cache.glob("*.download"))
    assert worker.text.count("fetched in") == 2 and "cached" in worker.text  # once per set and host, then cached
    # The Best zip's README states the held-out accuracy, and its predict.py scores the held-out folder the same.
    with open(tmp_path / "best.zip", "wb") as out:
        exports.best_zip(search, 1, out)
    with zipfile.ZipFile(tmp_path / "best.zip") as archive:
        archive.extractall(tmp_path / "best")
        readme = archive.read("README.txt").decode()
    best = max(individuals, key=lambda i: i.fitness)
    reported = best.metrics["held_out_accuracy"]
    assert best.metrics["held_out_images"] == 100 and f"accuracy {reported:.4f} on 100 images" in readme, readme
    folder = next((tmp_path / "best").glob("rank01_*"))
    run = subprocess.run([sys.executable, "predict.py", str(test_root)], cwd=folder, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.strip().splitlines()
    assert lines[0].startswith("digit_0/0000.png\tdigit_") and "broken.png\tunreadable" in run.stdout, lines[:3]
    scored = float(lines[-1].split()[1])
    assert reported > 0.5  # four classes: chance is 0.25, so the two figures agree on a network that learned
    assert lines[-1].endswith("on 100 images in class folders") and abs(scored - reported) <= 0.005, \
        (lines[-1], reported)
    print(f"held-out: reported {reported:.4f}, predict.py {lines[-1]}")


def test_a_worker_that_can_neither_read_nor_fetch_names_itself(stack, tmp_path, settings):
    uploaded(tmp_path, settings, classes=(1, 2), per_class=10)
    closed = f"http://127.0.0.1:{free_port()}"
    stack.evaluator("alpha", OMP_NUM_THREADS="1", NAS_SERVER_URL=closed, NAS_DATA_FETCH="always",
                    NAS_DATA_CACHE=str(tmp_path / "cache"), wait=False)
    stack.control()
    search = finished(launched("unfetchable", CONFIG).pk, timeout=300)
    individuals = list(Individual.objects.filter(search=search))
    assert individuals and all(i.status == Individual.Status.FAILED for i in individuals)
    for individual in individuals:
        assert individual.failure == "data_unreadable", individual.failure
        # handed back once (or not tried: its node was known not to read the set by then); no other live
        # worker to place it on: failed, naming the node tried and why
        assert individual.attempts <= 1, individual.attempts
        assert individual.message.startswith("no live worker can read the data set; tried 1 node(s): alpha: "
                                             "worker alpha "), individual.message
        assert "'uploaded'" in individual.message, individual.message
        assert f"could not fetch it from {closed}/api/datasets/archives/" in individual.message, individual.message
    assert any(individual.attempts == 1 for individual in individuals)
