"""The default SQLite database under two concurrent writers (the web server and a control loop): WAL and a
busy timeout, so nobody ever sees "database is locked" and no sequence number is lost or repeated."""
from __future__ import annotations

import sqlite3
import subprocess
import sys

import pytest

from tests.conftest import ROOT, manage_env

pytestmark = pytest.mark.integration
SCRIPT = str(ROOT / "tests" / "integration" / "sqlite_writer.py")


def test_two_processes_writing_events_at_once_never_lock_each_other_out(tmp_path, redis_url):
    env = manage_env(redis_url, tmp_path, DJANGO_SETTINGS_MODULE="webapp.settings.local", DATABASE_URL="")
    setup = subprocess.run([sys.executable, SCRIPT, "setup"], env=env, capture_output=True, text=True, timeout=120)
    assert setup.returncode == 0, setup.stderr
    search_id = setup.stdout.strip().splitlines()[-1]
    writers = [subprocess.Popen([sys.executable, SCRIPT, "write", search_id, "300"], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outputs = [writer.communicate(timeout=240) for writer in writers]
    for writer, (out, err) in zip(writers, outputs):
        assert writer.returncode == 0 and "locked" not in err, err
        assert out.strip().endswith("wrote 300")
    database = sqlite3.connect(tmp_path / "db.sqlite3")
    assert database.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    seqs = [row[0] for row in database.execute(
        "SELECT seq FROM searches_event WHERE search_id = ? ORDER BY seq", (int(search_id),))]
    assert seqs == list(range(1, 601))
    assert database.execute("SELECT event_seq FROM searches_search WHERE id = ?", (int(search_id),)).fetchone()[0] == 600
