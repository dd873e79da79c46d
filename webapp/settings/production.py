"""Settings for a shared deployment (docker-compose, a team's server): ``SECRET_KEY`` and ``NAS_TASK_KEY`` must
come from the environment (without them it refuses to start, in one line), debug is off, cookies are secure and HTTPS is assumed (behind a reverse proxy that sets
``X-Forwarded-Proto``). ``python manage.py check --deploy`` passes with the defaults (a test asserts it).
For plain http on a private network set ``SECURE_COOKIES=false`` and ``SECURE_SSL_REDIRECT=false``."""
from webapp.settings.base import *  # noqa: F403
from webapp.settings.env import env_bool, env_int, env_list, require_secrets

# No defaults: refusing to start beats signing sessions or evaluation messages with a known key.
SECRET_KEY, NAS_TASK_KEY = require_secrets("SECRET_KEY", "NAS_TASK_KEY")
DEBUG = False
SESSION_COOKIE_SECURE = env_bool("SECURE_COOKIES", True)
CSRF_COOKIE_SECURE = env_bool("SECURE_COOKIES", True)
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
# A year, subdomains included: browsers then refuse plain http for the host. Set 0 while trying HTTPS out.
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31536000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", True)
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
# The origins a browser posts forms from, when they differ from the host (e.g. https://nas.example.org).
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])
# No development conveniences here: static files are served by the ASGI server unless a proxy takes them.
NAS_SERVE_STATIC = env_bool("NAS_SERVE_STATIC", True)
