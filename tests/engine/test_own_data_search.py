"""A real search on a registered data set (issue 35): the digits written as PNG class folders (some resized, one
corrupt), registered by path, and a search that names it trained by one CPU evaluation worker, which reads the
folder, checks its digest and fits the images to the search's input size."""
from __future__ import annotations

import subprocess
import sys
import zipfile

import pytest

from tests.engine.conftest import assert_each_recorded_once, finished, launched, owner
from tests.evaluators.digit_folders import folder_search_config, write_digit_folders
from webapp.searches.models import Individual, Search
from webapp.services import datasets, exports

pytestmark = pytest.mark.integration

CONFIG = folder_search_config("png_digits", evaluations=4, max_layers=3, keep_weights=1)


def test_a_search_trains_on_a_folder_registered_by_path(stack, tmp_path, settings):
    settings.NAS_DATASET_ROOTS = [str(tmp_path)]
    # the first 15 images of each class are left out of the set: new images for predict.py below
    registered = datasets.register(owner(), "png_digits", str(write_digit_folders(tmp_path / "digits", skip=15)))
    assert registered.images == 1797 - 150 and len(registered.corrupt) == 1
    stack.evaluator("alpha", OMP_NUM_THREADS="1", wait=False)
    stack.control()
    search = finished(launched("png digits", CONFIG).pk, timeout=300)
    assert search.status == Search.Status.FINISHED, search.status_reason
    individuals = assert_each_recorded_once(search, 4)
    assert all(i.status == Individual.Status.DONE for i in individuals), [i.message for i in individuals]
    assert max(i.fitness for i in individuals) > 0.5  # ten classes: chance is 0.1
    print(f"registered png digits: accuracies {[round(i.fitness, 3) for i in individuals]}")
    # The best zip's predict.py prints each new image's class name (images the search never saw), and scores
    # class folders.
    with open(tmp_path / "best.zip", "wb") as out:
        names = exports.best_zip(search, 1, out)
    assert any(name.endswith("/predict.py") for name in names) and any(n.endswith("/classes.json") for n in names)
    with zipfile.ZipFile(tmp_path / "best.zip") as archive:
        archive.extractall(tmp_path / "best")
    folder = next((tmp_path / "best").glob("rank01_*"))
    new = write_digit_folders(tmp_path / "new", per_class=15, corrupt=False)
    run = subprocess.run([sys.executable, "predict.py", str(new)], cwd=folder, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.strip().splitlines()
    assert len(lines) == 151 and lines[0].startswith("digit_0/0000.png\tdigit_"), lines[:3]
    accuracy = float(lines[-1].split()[1])
    assert lines[-1].endswith("on 150 images in class folders") and accuracy > 0.5, lines[-1]
    print(f"predict.py on 150 held-out PNGs: {lines[-1]}")


def test_a_changed_folder_fails_each_individual_naming_worker_and_path(stack, tmp_path, settings):
    settings.NAS_DATASET_ROOTS = [str(tmp_path)]
    root = write_digit_folders(tmp_path / "digits", classes=(1, 2), per_class=20)
    datasets.register(owner(), "png_digits", str(root))
    (root / "digit_1" / "0003.png").unlink()  # changed after registration
    stack.evaluator("alpha", OMP_NUM_THREADS="1", wait=False)
    stack.control()
    search = finished(launched("changed", {**CONFIG, "strategy": {**CONFIG["strategy"], "params": {
        "population": 2, "sample_size": 2, "max_evaluations": 2}}}).pk, timeout=300)
    messages = [i.message for i in Individual.objects.filter(search=search)]
    assert messages and all("worker" in m and str(root) in m and "not the one registered" in m for m in messages), \
        messages
