"""The run command's settings: one machine, debug pages on, SQLite and the embedded Redis by default."""
from webapp.settings.base import *  # noqa: F403
from webapp.settings.env import env_bool

DEBUG = env_bool("DEBUG", True)
