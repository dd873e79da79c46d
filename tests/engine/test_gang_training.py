"""A trained search on a gang worker of two CPU ranks (``evalworker --device cpu,cpu --gang 2``): kill -9 of one
rank mid-training fails that attempt at once, the worker runs it again, no rank is left behind and the search
finishes; and a candidate trained on two devices keeps what one device gives (pruning, weights, exports)."""
from __future__ import annotations

import glob
import io
import os
import zipfile
import signal
import tempfile
from pathlib import Path

import psutil
import pytest

from tests.conftest import manage
from tests.engine.conftest import finished, launched, wait_until
from tests.scoring import score_as_the_readme_says
from webapp.searches.models import Individual, Search

pytestmark = pytest.mark.integration


#: Where this test run's gangs keep their folders (``evaluators.data_parallel``: a ``tempfile.mkdtemp`` named on
#: each rank's command line). Only ranks under it are this run's: CI runs another test stage at once, with a
#: temporary folder of its own, whose gang ranks must be neither counted nor killed here.
GANG_FOLDERS = os.path.join(tempfile.gettempdir(), "nas-gang-")


def ranks() -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter(["cmdline"]):
        command = " ".join(process.info["cmdline"] or [])
        if "evaluators.gang_rank" in command and GANG_FOLDERS in command:
            found.append(process)
    return found


def start_gang_of_two(stack) -> None:
    """A gang worker of two CPU ranks (``evalworker --device cpu,cpu --gang 2``), ready, and a control worker."""
    stack.start(manage("evalworker", "--device", "cpu,cpu", "--gang", "2", "--node", "gangnode"), wait=False)
    stack.control()


def training_rank_one() -> psutil.Process | None:
    """A live rank 1 of a gang that has started training: its folder's marker, and the process naming that folder
    (a folder left by an earlier run has a marker but no process)."""
    for marker in glob.glob(f"{GANG_FOLDERS}*/training.1"):
        folder = Path(marker).parent.as_posix()
        for process in ranks():
            try:
                command = process.cmdline()
            except psutil.NoSuchProcess:
                continue
            if folder in " ".join(command) and command[-1] == "1":
                return process
    return None


def test_kill_9_of_a_rank_is_retried_and_the_search_finishes(stack):
    start_gang_of_two(stack)
    config = {
        "space": {"name": "chain", "max_layers": 4, "modules": 2},
        "strategy": {"name": "random", "seed": 1, "params": {"max_evaluations": 1}},
        "dataset": "digits",
        "training": {"epochs": 10, "batch_size": 64},
        "evaluation": {"mode": "train", "keep_weights": 0},
    }
    search = launched("gang kill -9", config)
    victim = wait_until(training_rank_one, 180, message="rank 1 training")
    os.kill(victim.pid, signal.SIGKILL)
    search = finished(search.pk, timeout=300)
    assert search.status == Search.Status.FINISHED, search.status_reason
    individuals = list(Individual.objects.filter(search=search))
    assert len(individuals) == 1 and individuals[0].status == Individual.Status.DONE
    assert "SIGKILL" in individuals[0].metrics["rank_lost"]  # the first attempt lost a rank; the second finished
    assert all(i.metrics["devices"] == "cpu,cpu" for i in individuals)
    assert not psutil.pid_exists(victim.pid) or victim.status() == psutil.STATUS_ZOMBIE
    wait_until(lambda: not ranks(), 30, message="no rank left")


#: Candidates of the pruned gang search: each starts two rank processes (about 12 s of a CI run), so as few as
#: leave the median pruner something to stop once the first has completed (seeded: the same candidates each run).
GANG_CANDIDATES = 4


def test_a_gang_search_prunes_keeps_weights_and_exports_as_one_device_does(stack, tmp_path):
    """Two devices per candidate keep everything one device gives: the pruner's reports and stops, the best's
    weights, model.py and model.onnx, and a zip whose script scores the accuracy the search reported."""
    from webapp.searches import ranking
    from webapp.services.exports import best_zip

    start_gang_of_two(stack)
    config = {
        "space": {"name": "chain", "max_layers": 3, "modules": 2},
        "strategy": {"name": "random", "seed": 2, "params": {"max_evaluations": GANG_CANDIDATES}},
        "dataset": "digits",
        "training": {"epochs": 3, "batch_size": 64, "learning_rate": 0.002},
        "pruner": {"name": "median", "min_completed": 1, "min_steps": 1},
        "evaluation": {"mode": "train", "keep_weights": 2, "devices": 2, "report_every": 10},
    }
    search = finished(launched("gang pruned and kept", config).pk, timeout=600)
    assert search.status == Search.Status.FINISHED, search.status_reason
    individuals = list(Individual.objects.filter(search=search))
    assert len(individuals) == GANG_CANDIDATES and all(i.metrics.get("devices") == "cpu,cpu" for i in individuals)
    pruned = [i for i in individuals if i.status == Individual.Status.PRUNED]
    print(f"gang search: pruned (number, step) {sorted((i.number, i.metrics['steps']) for i in pruned)} "
          f"of {GANG_CANDIDATES}")
    assert pruned, [(i.status, i.message) for i in individuals]
    for individual in pruned:  # stopped at a report of its gang's leader, with the curve it had
        assert individual.curve and individual.curve[-1]["step"] % 10 == 0
        assert individual.metrics["steps"] == individual.curve[-1]["step"]
    best = ranking.best_individuals(search, 1)[0]
    assert best.status == Individual.Status.DONE and best.metrics["latency_ms"] > 0
    archive_bytes = io.BytesIO()
    best_zip(search, 1, archive_bytes)
    archive = zipfile.ZipFile(archive_bytes)
    prefix = f"rank01_n{best.number}"
    assert {f"{prefix}/{name}" for name in ("weights.pt", "model.py", "model.onnx")} <= set(archive.namelist())
    assert score_as_the_readme_says(archive, prefix, tmp_path) == pytest.approx(best.fitness, abs=0.005)


def test_a_compressed_gang_search_records_its_bytes_against_dense(stack):
    """``evaluation.compression`` reaches the gang's ranks through the worker: each individual records the bytes
    its ranks sent (a tenth of each segment, so well under dense) and the CSV has them in its own columns."""
    import csv

    from webapp.services.exports import individuals_csv

    start_gang_of_two(stack)
    config = {
        "space": {"name": "chain", "max_layers": 2, "modules": 2},
        "strategy": {"name": "random", "seed": 3, "params": {"max_evaluations": 2}},
        "dataset": "digits",
        "training": {"epochs": 1, "batch_size": 64},
        "evaluation": {"mode": "train", "keep_weights": 0, "devices": 2,
                       "compression": {"kind": "segment_topk", "ratio": 0.1}},
    }
    search = finished(launched("gang compressed", config).pk, timeout=600)
    assert search.status == Search.Status.FINISHED, search.status_reason
    individuals = list(Individual.objects.filter(search=search))
    assert len(individuals) == 2 and all(i.status == Individual.Status.DONE for i in individuals)
    for individual in individuals:
        metrics = individual.metrics
        assert metrics["compression"] == "segment_topk" and metrics["balance"] == 1.0
        assert 0 < metrics["bytes_sent"] < metrics["bytes_dense"] / 2
    out = io.StringIO()
    individuals_csv(Search.objects.get(pk=search.pk), out)
    rows = list(csv.DictReader(io.StringIO(out.getvalue())))
    assert all(int(row["bytes_sent"]) < int(row["bytes_dense"]) for row in rows)
