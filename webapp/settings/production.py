"""Settings for a shared deployment: the secret key must come from the environment, debug is off."""
from webapp.settings.base import *  # noqa: F403
from webapp.settings.env import env_bool, env_int, env_str

SECRET_KEY = env_str("SECRET_KEY")  # no default: refusing to start beats signing with a known key
DEBUG = False
SESSION_COOKIE_SECURE = env_bool("SECURE_COOKIES", True)
CSRF_COOKIE_SECURE = env_bool("SECURE_COOKIES", True)
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", False)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0)
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
