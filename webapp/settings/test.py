"""Settings for the test suite: fast password hashing; the test database is a file that the real worker
processes of the integration tests share with the test process."""
import os

from webapp.settings.base import *  # noqa: F403
from webapp.settings.base import DATABASES, STATE_DIR
from webapp.settings.env import env_str

# Fixed keys, public and fit for tests only: the test session and every worker it starts (each with a state
# folder of its own) must sign and check evaluation messages alike.
SECRET_KEY = env_str("SECRET_KEY", "test-only-secret-key-of-the-test-suite-never-used-elsewhere")
NAS_TASK_KEY = env_str("NAS_TASK_KEY", "test-only-task-key-of-the-test-suite")

# Hashing passwords at full strength costs ~0.3 s per login; tests log in many times.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

_default = DATABASES["default"]
if _default["ENGINE"].endswith("sqlite3"):
    # A file, not pytest-django's in-memory database: control and evaluation workers are other processes.
    # On a clean checkout the state folder does not exist yet and SQLite will not create it.
    STATE_DIR.mkdir(parents=True, exist_ok=True)
    _default["TEST"] = {"NAME": str(STATE_DIR / "test-db.sqlite3")}
if os.environ.get("NAS_USE_TEST_DB") == "1":
    # A worker process started by a test: use the test session's database.
    _default["NAME"] = _default.get("TEST", {}).get("NAME") or f"test_{_default['NAME']}"
