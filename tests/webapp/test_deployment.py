"""The team deployment: compose file, image, .env example and production settings."""
from __future__ import annotations

import re
import secrets
import shutil
import subprocess
import sys

import yaml

from tests.conftest import ROOT

COMPOSE = ROOT / "docker-compose.yml"


def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


def test_compose_has_every_service_with_health_checks_and_the_gpu_reservation():
    services = compose()["services"]
    assert set(services) == {"redis", "postgres", "web", "control", "eval"}
    for name in ("redis", "postgres", "web"):
        assert services[name]["healthcheck"]["test"], name
    assert "ports" not in services["redis"]  # reachable from the compose network only
    assert "--appendonly yes" in " ".join(services["redis"]["command"])
    assert "--requirepass" in " ".join(services["redis"]["command"])
    assert services["postgres"]["volumes"] and "migrate" in " ".join(services["web"]["command"])
    assert "manage.py web --host 0.0.0.0" in " ".join(services["web"]["command"])  # several processes, one port
    assert services["control"]["depends_on"]["web"]["condition"] == "service_healthy"
    devices = services["eval"]["deploy"]["resources"]["reservations"]["devices"]
    assert devices == [{"driver": "nvidia", "count": "all", "capabilities": ["gpu"]}]
    assert "--device all" in " ".join(services["eval"]["command"])
    for name in ("web", "control", "eval"):
        assert services[name]["env_file"][0]["path"] == ".env"
        assert services[name]["environment"]["DJANGO_SETTINGS_MODULE"] == "webapp.settings.production"


def test_no_secret_is_written_in_the_compose_file_or_the_env_example():
    text = COMPOSE.read_text()
    # Every password comes from .env through ${...}; none is a literal.
    for line in text.splitlines():
        if re.search(r"PASSWORD|SECRET_KEY|TASK_KEY", line) and not line.lstrip().startswith("#"):
            assert "${" in line or "$$" in line, line
    for url in re.findall(r"(?:postgres|redis)://[^\s\"]+", text):
        password = url.split("://", 1)[1].split("@")[0]
        assert password.startswith(("${", ":${")), url
    example = dict(line.split("=", 1) for line in (ROOT / ".env.example").read_text().splitlines()
                   if line and not line.startswith("#"))
    assert example["SECRET_KEY"] == example["NAS_TASK_KEY"] == example["POSTGRES_PASSWORD"] == ""
    assert example["REDIS_PASSWORD"] == ""
    ignored = subprocess.run(["git", "check-ignore", "-q", ".env"], cwd=ROOT)
    assert ignored.returncode == 0, ".env must be ignored by git"


def test_docker_compose_validates_the_file_when_a_docker_client_is_present(capsys):
    docker = shutil.which("docker")
    plugin = docker and subprocess.run([docker, "compose", "version"], capture_output=True).returncode == 0
    if not plugin:
        with capsys.disabled():
            print("\n[deployment] `docker compose config` not run: no docker compose client on this machine "
                  "(the YAML is checked by the other tests)")
        assert compose()["services"]  # still parsed and checked
        return
    env = {"POSTGRES_PASSWORD": "x", "REDIS_PASSWORD": "y", "PATH": "/usr/bin:/bin:/usr/local/bin"}
    example = str(ROOT / ".env.example")
    run = subprocess.run([docker, "compose", "-f", str(COMPOSE), "--env-file", example, "config", "--quiet"],
                         cwd=ROOT, env=env,
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


def test_the_image_installs_the_requirements_and_runs_as_a_user():
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "pip install --no-cache-dir -r requirements.txt" in dockerfile
    assert "USER nas" in dockerfile and "NAS_NO_BOOTSTRAP=1" in dockerfile
    assert ".env" in (ROOT / ".dockerignore").read_text().split()


def production(*args: str, **env: str) -> subprocess.CompletedProcess:
    environment = {"PATH": "/usr/bin:/bin", "DJANGO_SETTINGS_MODULE": "webapp.settings.production",
                   "NAS_NO_BOOTSTRAP": "1", "NAS_STATE_DIR": "/tmp/nas-deploy-check", **env}
    return subprocess.run([sys.executable, str(ROOT / "manage.py"), *args], cwd=ROOT, env=environment,
                          capture_output=True, text=True, timeout=120)


def test_check_deploy_passes_with_the_production_settings():
    run = production("check", "--deploy", "--fail-level", "WARNING", SECRET_KEY=secrets.token_urlsafe(50),
                     NAS_TASK_KEY=secrets.token_urlsafe(50), ALLOWED_HOSTS="nas.example.org")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "no issues" in run.stdout


def test_production_refuses_to_start_without_its_keys():
    for env, missing in (({}, "SECRET_KEY and NAS_TASK_KEY"), ({"SECRET_KEY": secrets.token_urlsafe(50)}, "NAS_TASK_KEY")):
        run = production("check", **env)
        assert run.returncode != 0
        assert run.stderr.startswith(f"Refusing to start: the production settings need {missing} in the environment")
        assert "Traceback" not in run.stderr and len(run.stderr.strip().splitlines()) == 1
