"""Settings for the test suite: fast password hashing; SQLite tests run on pytest-django's test database."""
from webapp.settings.base import *  # noqa: F403

# Hashing passwords at full strength costs ~0.3 s per login; tests log in many times.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
