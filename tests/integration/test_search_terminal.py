"""``manage.py search`` in a terminal, run as a user runs it (a subprocess on the test database): quiet by default,
``-v`` for the libraries' INFO lines, and a reader that closes the pipe early (``| head``) ends it without a
traceback, whichever action it runs."""
from __future__ import annotations

import os
import subprocess

import pytest
from django.conf import settings as django_settings
from django.contrib.auth import get_user_model

from tests.conftest import manage, manage_env
from tests.dashboard.conftest import CONFIG, fill
from webapp.services import lifecycle
from webapp.searches.models import Search

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

#: What Python prints when a closed pipe surfaces as an exception (in a traceback, or at exit's flush).
NOISE = ("Traceback", "BrokenPipeError", "Exception ignored")


@pytest.fixture
def owner(settings, redis_url, celery_app):
    """A superuser; this process publishes to the session's real Redis channel layer (no viewer is connected)."""
    from webapp.messaging import transport
    from webapp.settings.env import redis_channel_layer

    settings.CHANNEL_LAYERS = {"default": redis_channel_layer(redis_url)}
    settings.REDIS_URL = redis_url
    transport.reset_clients()
    yield get_user_model().objects.create_superuser("boss", password="pw-boss-123")
    transport.reset_clients()


def command_env(redis_url: str, state_dir=None) -> dict[str, str]:
    """The command runs against this test session's database, as a separate process; ``state_dir`` gives it a
    state folder (and so an export cache) of its own."""
    from django.db import connection

    env = manage_env(redis_url, state_dir or django_settings.STATE_DIR, NAS_USE_TEST_DB="1")
    if state_dir is not None and connection.vendor == "sqlite":  # the test database file, named outright
        env["DATABASE_URL"] = f"sqlite:///{connection.settings_dict['NAME']}"
        del env["NAS_USE_TEST_DB"]
    return env


def run_into_closed_pipe(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    """Run ``argv`` with a stdout whose reader has already gone: its first write meets a closed pipe."""
    read, write = os.pipe()
    process = subprocess.Popen(argv, env=env, stdout=write, stderr=subprocess.PIPE, text=True)
    os.close(write)
    os.close(read)
    _, stderr = process.communicate(timeout=180)
    return subprocess.CompletedProcess(argv, process.returncode, "", stderr)


@pytest.mark.parametrize(("action", "buffered"), [("list", False), ("create", False), ("clone", False),
                                                  ("watch", False), ("list", True), ("create", True)])
def test_every_action_ends_quietly_when_the_reader_is_gone(owner, redis_url, action, buffered):
    search = lifecycle.create_search(owner, "piped", CONFIG)
    argv = {
        "list": ["search", "list"],
        "create": ["search", "create", "--name", "made", "--owner", "boss"],
        "clone": ["search", "clone", str(search.pk)],
        "watch": ["search", "watch", str(search.pk), "--timeout", "30"],
    }[action]
    env = command_env(redis_url)
    if buffered:  # as in a terminal's pipe: the output reaches the pipe when Python flushes it, at the end
        del env["PYTHONUNBUFFERED"]
    run = run_into_closed_pipe(manage(*argv), env)
    assert not any(noise in run.stderr for noise in NOISE), run.stderr
    assert run.returncode == 1  # as Python's own advice for EPIPE: a failure, but a quiet one


def test_list_piped_into_head_ends_quietly(owner, redis_url):
    first = lifecycle.create_search(owner, "first", CONFIG)
    # Far more than a pipe holds (64 KiB): the command is still writing when the reader leaves.
    Search.objects.bulk_create(Search(owner=owner, name=f"{i:04d} " + "x" * 190, config=first.config)
                               for i in range(700))
    process = subprocess.Popen(manage("search", "list"), env=command_env(redis_url), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    header = process.stdout.readline()
    process.stdout.close()  # `| head -1`
    stderr = process.stderr.read()
    process.wait(timeout=120)
    assert header.split() == ["id", "status", "done", "best", "owner", "name"]
    assert not any(noise in stderr for noise in NOISE), stderr


def test_export_prints_no_info_lines_unless_verbose(owner, redis_url, tmp_path):
    search = fill(lifecycle.create_search(owner, "exported", CONFIG), 6)
    # Each run has its own state folder (nothing of one run can serve the other).
    quiet = subprocess.run(manage("search", "export", str(search.pk), "--out", str(tmp_path / "a"), "--best", "1"),
                           env=command_env(redis_url, tmp_path / "state-a"), capture_output=True, text=True,
                           timeout=300)
    assert quiet.returncode == 0, quiet.stderr
    assert " INFO " not in quiet.stdout + quiet.stderr, quiet.stderr
    assert quiet.stdout.splitlines()[-1].startswith(f"wrote {tmp_path / 'a' / 'best.zip'} (")
    assert not (tmp_path / "state-a" / "exports").exists()  # it zipped stored bytes: nothing was exported here
    verbose = subprocess.run(manage("search", "export", str(search.pk), "--out", str(tmp_path / "b"), "--best", "1",
                                    "-v"), env=command_env(redis_url, tmp_path / "state-b"), capture_output=True,
                             text=True, timeout=300)
    assert verbose.returncode == 0, verbose.stderr
    assert " INFO " in verbose.stderr
