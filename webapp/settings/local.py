"""The run command's settings: one machine, debug pages on, SQLite and the embedded Redis by default.

Keys: ``SECRET_KEY`` and ``NAS_TASK_KEY`` from the environment, else the state folder's own random ones
(``secret_key`` and ``task_key``, made on first use, mode 0600): never a key written in the source.
"""
from webapp.settings.base import *  # noqa: F403
from webapp.settings.base import STATE_DIR
from webapp.settings.env import env_bool, env_str
from webapp.settings.keys import SECRET_KEY_FILE, TASK_KEY_FILE, state_secret

DEBUG = env_bool("DEBUG", True)
SECRET_KEY = env_str("SECRET_KEY", "") or state_secret(STATE_DIR, SECRET_KEY_FILE)
NAS_TASK_KEY = env_str("NAS_TASK_KEY", "") or state_secret(STATE_DIR, TASK_KEY_FILE)
