"""The control worker forks its pool beside the reaper thread: a pool process must never inherit a SQLite
connection (it would read a frozen database and its lease updates would match nothing: a search nobody resumes)."""
from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import ROOT, manage_env

pytestmark = pytest.mark.integration


def test_a_process_forked_beside_the_reaper_sees_what_others_write(redis_url, tmp_path):
    env = manage_env(redis_url, tmp_path)
    env.pop("DATABASE_URL", None)  # the hazard is SQLite's (the default database)
    probe = subprocess.run([sys.executable, "-m", "tests.engine.reaper_fork_probe"], env=env,
                           cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert probe.returncode == 0, f"the forked process read a stale database (exit {probe.returncode}):\n" \
                                  f"{probe.stdout}{probe.stderr}"
