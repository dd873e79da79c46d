"""Settings come from the environment, and bad values are named in the error."""
import os
import subprocess
import sys

import pytest
from django.core.exceptions import ImproperlyConfigured

from webapp.settings.env import env_bool, env_int, env_list, env_str
from webapp.stack.redis_server import redact

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _settings_value(module: str, expression: str, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items()
             if k not in {"SECRET_KEY", "NAS_TASK_KEY", "DATABASE_URL", "REDIS_URL", "DEBUG"}}
    clean.update(env, DJANGO_SETTINGS_MODULE=module)
    code = f"import django; from django.conf import settings; django.setup(); print({expression})"
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=clean, capture_output=True, text=True)


def test_production_refuses_to_start_without_its_keys_in_one_line():
    for env, missing in (({}, "SECRET_KEY and NAS_TASK_KEY"), ({"SECRET_KEY": "x" * 50}, "NAS_TASK_KEY"),
                         ({"NAS_TASK_KEY": "y" * 50}, "SECRET_KEY")):
        run = _settings_value("webapp.settings.production", "settings.DEBUG", **env)
        assert run.returncode != 0
        assert run.stderr.strip().splitlines() == [
            f"Refusing to start: the production settings need {missing} in the environment (long random strings, "
            "e.g. python3 -c 'import secrets; print(secrets.token_urlsafe(50))'; NAS_TASK_KEY must be the same on "
            "every host of the installation)."
        ]


def test_production_reads_its_settings_from_the_environment():
    run = _settings_value(
        "webapp.settings.production",
        "settings.DEBUG, settings.ALLOWED_HOSTS, settings.DATABASES['default']['ENGINE'], settings.CELERY_BROKER_URL",
        SECRET_KEY="x" * 50, NAS_TASK_KEY="y" * 50, ALLOWED_HOSTS="nas.example.org", DATABASE_URL="postgres://u:p@db:5432/nas",
        REDIS_URL="redis://:pw@redis:6379/1",
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == (
        "False ['nas.example.org'] django.db.backends.postgresql redis://:pw@redis:6379/1"
    )


def test_local_keys_are_random_per_state_folder_kept_private_and_stable(tmp_path):
    import stat

    expression = "settings.SECRET_KEY, settings.NAS_TASK_KEY"
    first = _settings_value("webapp.settings.local", expression, NAS_STATE_DIR=str(tmp_path / "a"))
    again = _settings_value("webapp.settings.local", expression, NAS_STATE_DIR=str(tmp_path / "a"))
    other = _settings_value("webapp.settings.local", expression, NAS_STATE_DIR=str(tmp_path / "b"))
    assert first.returncode == again.returncode == other.returncode == 0, first.stderr + other.stderr
    assert first.stdout == again.stdout != other.stdout
    secret, task = first.stdout.split()
    assert "insecure" not in first.stdout and secret != task and len(task) >= 40
    for name, value in (("secret_key", secret), ("task_key", task)):
        path = tmp_path / "a" / name
        assert path.read_text().strip() == value
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    chosen = _settings_value("webapp.settings.local", expression, NAS_STATE_DIR=str(tmp_path / "a"),
                             SECRET_KEY="s" * 50, NAS_TASK_KEY="t" * 50)
    assert chosen.stdout.split() == ["s" * 50, "t" * 50]  # the environment wins


def test_two_processes_making_the_first_key_at_once_agree(tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    expression = "settings.NAS_TASK_KEY"
    with ThreadPoolExecutor(4) as pool:
        runs = list(pool.map(lambda _: _settings_value("webapp.settings.local", expression,
                                                        NAS_STATE_DIR=str(tmp_path)), range(4)))
    assert all(run.returncode == 0 for run in runs), [run.stderr for run in runs]
    assert len({run.stdout for run in runs}) == 1
    assert sorted(p.name for p in tmp_path.iterdir() if "key" in p.name) == ["secret_key", "task_key"]


def test_without_up_running_commands_look_for_redis_on_the_state_folders_port(tmp_path):
    (tmp_path / "redis.port").write_text("6391\n")  # what `up` remembers; redis.url exists only while it runs
    run = _settings_value("webapp.settings.local", "settings.REDIS_URL", NAS_STATE_DIR=str(tmp_path))
    assert run.stdout.strip() == "redis://127.0.0.1:6391/0", run.stderr
    (tmp_path / "redis.url").write_text("redis://127.0.0.1:6392/0\n")
    run = _settings_value("webapp.settings.local", "settings.REDIS_URL", NAS_STATE_DIR=str(tmp_path))
    assert run.stdout.strip() == "redis://127.0.0.1:6392/0", run.stderr


def test_local_defaults_to_sqlite_in_the_state_folder_with_debug_on(tmp_path):
    run = _settings_value("webapp.settings.local", "settings.DEBUG, settings.DATABASES['default']['NAME']",
                          NAS_STATE_DIR=str(tmp_path))
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == f"True {tmp_path / 'db.sqlite3'}"


def test_celery_accepts_json_only_and_never_loses_an_evaluation(settings):
    assert settings.CELERY_ACCEPT_CONTENT == ["json"]
    assert settings.CELERY_TASK_SERIALIZER == settings.CELERY_RESULT_SERIALIZER == "json"
    assert settings.CELERY_TASK_ACKS_LATE and settings.CELERY_TASK_REJECT_ON_WORKER_LOST
    assert settings.CELERY_WORKER_PREFETCH_MULTIPLIER == 1
    assert settings.CELERY_TASK_TIME_LIMIT < settings.CELERY_BROKER_TRANSPORT_OPTIONS["visibility_timeout"]


def test_env_helpers_name_the_variable(monkeypatch):
    monkeypatch.setenv("NAS_X", "maybe")
    with pytest.raises(ImproperlyConfigured, match="NAS_X='maybe' is not a boolean"):
        env_bool("NAS_X", False)
    monkeypatch.setenv("NAS_X", "ten")
    with pytest.raises(ImproperlyConfigured, match="NAS_X='ten' is not an integer"):
        env_int("NAS_X", 1)
    monkeypatch.setenv("NAS_X", " a, b ,,c ")
    assert env_list("NAS_X", []) == ["a", "b", "c"]
    monkeypatch.delenv("NAS_X")
    assert env_str("NAS_X", "default") == "default"
    assert env_bool("NAS_X", True) is True


def test_redact_hides_the_password_only():
    assert redact("redis://:s3cret@host:6379/0") == "redis://:***@host:6379/0"
    assert redact("rediss://user:s3cret@host:6380/2") == "rediss://user:***@host:6380/2"
    assert redact("redis://127.0.0.1:6379/0") == "redis://127.0.0.1:6379/0"
