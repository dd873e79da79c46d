"""A trained search on a gang worker of two CPU ranks (``evalworker --device cpu,cpu --gang 2``): kill -9 of one
rank mid-training fails that attempt at once, the worker runs it again, no rank is left behind and the search
finishes."""
from __future__ import annotations

import glob
import os
import signal
from pathlib import Path

import psutil
import pytest

from tests.conftest import ProcessLog, manage
from tests.engine.conftest import finished, launched, wait_until
from webapp.searches.models import Individual, Search

pytestmark = pytest.mark.integration


def ranks() -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter(["cmdline"]):
        if "evaluators.gang_rank" in " ".join(process.info["cmdline"] or []):
            found.append(process)
    return found


def test_kill_9_of_a_rank_is_retried_and_the_search_finishes(stack):
    argv = manage("evalworker", "--device", "cpu,cpu", "--gang", "2", "--node", "gangnode")
    worker = ProcessLog(argv, stack.env())
    stack.processes.append(worker)
    worker.wait_for("ready.", timeout=60)
    stack.control()
    config = {
        "space": {"name": "chain", "max_layers": 4, "modules": 2},
        "strategy": {"name": "random", "seed": 1, "params": {"max_evaluations": 1}},
        "dataset": "digits",
        "training": {"epochs": 10, "batch_size": 64},
        "evaluation": {"mode": "train", "keep_weights": 0},
    }
    search = launched("gang kill -9", config)
    marker = wait_until(lambda: sorted(glob.glob("/tmp/nas-gang-*/training.1")), 180, message="rank 1 training")[0]
    victim = next(p for p in ranks() if Path(marker).parent.as_posix() in " ".join(p.cmdline())
                  and p.cmdline()[-1] == "1")
    os.kill(victim.pid, signal.SIGKILL)
    search = finished(search.pk, timeout=300)
    assert search.status == Search.Status.FINISHED, search.status_reason
    individuals = list(Individual.objects.filter(search=search))
    assert len(individuals) == 1 and individuals[0].status == Individual.Status.DONE
    assert "SIGKILL" in individuals[0].metrics["rank_lost"]  # the first attempt lost a rank; the second finished
    assert all(i.metrics["devices"] == "cpu,cpu" for i in individuals)
    assert not psutil.pid_exists(victim.pid) or victim.status() == psutil.STATUS_ZOMBIE
    wait_until(lambda: not ranks(), 30, message="no rank left")
