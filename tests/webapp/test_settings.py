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
    clean = {k: v for k, v in os.environ.items() if k not in {"SECRET_KEY", "DATABASE_URL", "REDIS_URL", "DEBUG"}}
    clean.update(env, DJANGO_SETTINGS_MODULE=module)
    code = f"import django; from django.conf import settings; django.setup(); print({expression})"
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=clean, capture_output=True, text=True)


def test_production_refuses_to_start_without_a_secret_key():
    run = _settings_value("webapp.settings.production", "settings.DEBUG")
    assert run.returncode != 0
    assert "The environment variable SECRET_KEY must be set." in run.stderr


def test_production_reads_its_settings_from_the_environment():
    run = _settings_value(
        "webapp.settings.production",
        "settings.DEBUG, settings.ALLOWED_HOSTS, settings.DATABASES['default']['ENGINE'], settings.CELERY_BROKER_URL",
        SECRET_KEY="x" * 50, ALLOWED_HOSTS="nas.example.org", DATABASE_URL="postgres://u:p@db:5432/nas",
        REDIS_URL="redis://:pw@redis:6379/1",
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == (
        "False ['nas.example.org'] django.db.backends.postgresql redis://:pw@redis:6379/1"
    )


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
