"""Settings shared by every environment. Every value that differs between machines comes from the environment.

| variable | default | meaning |
| --- | --- | --- |
| ``SECRET_KEY`` | ``local``: random, kept in ``NAS_STATE_DIR/secret_key``; ``production`` requires it | Django's signing key |
| ``NAS_TASK_KEY`` | ``local``: random, kept in ``NAS_STATE_DIR/task_key``; ``production`` requires it | signs evaluation messages |
| ``DEBUG`` | off (``local`` turns it on) | Django's debug pages |
| ``ALLOWED_HOSTS`` | ``127.0.0.1,localhost`` | comma-separated host names the web server answers to |
| ``DATABASE_URL`` | SQLite in ``NAS_STATE_DIR/db.sqlite3`` | any URL dj-database-url reads (``postgres://...``) |
| ``REDIS_URL`` | the embedded server's URL (``NAS_STATE_DIR/redis.url``, else its port in ``redis.port``) | Celery broker, result backend, Channels layer |
| ``NAS_STATE_DIR`` | ``.state`` in the repository | the local database, Redis's AOF files, logs |
| ``NAS_DATA_DIR`` | ``data`` in the repository | datasets (CIFAR-10, Fashion-MNIST) |
| ``NAS_DATASET_ROOTS`` | ``NAS_DATA_DIR`` | folders (``os.pathsep``-separated) a registered data set's path must lie under |
| ``NAS_DATASET_MAX_BYTES`` | 4 GiB | the largest data-set archive an upload may send, and unpack to |
| ``NAS_UPLOAD_CHUNK_BYTES`` | 2 MiB (the most) | bytes per chunk of an upload |
| ``NAS_UPLOAD_TTL_HOURS`` | 24 | an upload that received nothing for this long is removed when the next one starts |
| ``NAS_SERVER_URL`` | ``http://127.0.0.1:8000`` | where a worker fetches a data set it cannot read by path |
| ``NAS_DATA_FETCH`` | ``auto`` | ``auto``: a worker reads a set's path when it can, else fetches it; ``always``: fetches |
| ``NAS_DATA_CACHE`` | ``NAS_DATA_DIR/cache`` | a worker host's fetched data sets, by digest |
"""
from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import dj_database_url

from webapp.settings.env import env_bool, env_int, env_list, env_str, redis_cache, redis_channel_layer, redis_tls

BASE_DIR = Path(__file__).resolve().parent.parent.parent
STATE_DIR = Path(env_str("NAS_STATE_DIR", str(BASE_DIR / ".state"))).resolve()
DATA_DIR = Path(env_str("NAS_DATA_DIR", str(BASE_DIR / "data"))).resolve()
# Registered data sets must lie under one of these folders (os.pathsep-separated; symlinks resolved before the
# check), so nobody registers /etc: by default the data folder.
NAS_DATASET_ROOTS = [str(Path(p).expanduser().resolve())
                     for p in env_str("NAS_DATASET_ROOTS", str(DATA_DIR)).split(os.pathsep) if p]
# Uploads (webapp.services.uploads): an archive larger than this, or one that unpacks to more, is refused.
NAS_DATASET_MAX_BYTES = env_int("NAS_DATASET_MAX_BYTES", 4 << 30)
# Bytes per upload chunk: under DATA_UPLOAD_MAX_MEMORY_SIZE (Django's 2.5 MB), so a chunk is an ordinary body.
NAS_UPLOAD_CHUNK_BYTES = min(env_int("NAS_UPLOAD_CHUNK_BYTES", 2 << 20), 2 << 20)
# An upload that received nothing (no start, chunk or finish) for this many hours is abandoned: the next upload's
# start removes it with its chunks.
NAS_UPLOAD_TTL_HOURS = env_int("NAS_UPLOAD_TTL_HOURS", 24)
# Workers (webapp.worker.data_fetch): the web server they fetch a registered set's archive from, by digest, when
# its path cannot be read on their host (or always, NAS_DATA_FETCH=always), into a per-host cache.
NAS_SERVER_URL = env_str("NAS_SERVER_URL", "http://127.0.0.1:8000")
NAS_DATA_FETCH = env_str("NAS_DATA_FETCH", "auto")
NAS_DATA_CACHE = Path(env_str("NAS_DATA_CACHE", str(DATA_DIR / "cache"))).expanduser().resolve()

# No default written here (anyone could read it): ``local`` makes a key per state folder, ``test`` uses fixed test
# keys, ``production`` refuses to start without one.
SECRET_KEY = env_str("SECRET_KEY", "")
DEBUG = env_bool("DEBUG", False)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost"])

INSTALLED_APPS = [
    "daphne",  # first, so that runserver serves ASGI (websockets) too
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "axes",
    "webapp.stack",
    "webapp.searches",
    "webapp.datasets",
    "webapp.notifications",
    "webapp.dashboard",
]

MIDDLEWARE = [
    # Outermost: every error under /api/ leaves as JSON, whichever layer below made it.
    "webapp.dashboard.api_errors.ApiErrorMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "webapp.dashboard.csp.ContentSecurityPolicyMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Last, as axes asks: turns a refused sign-in into the lockout page (webapp.dashboard.lockout).
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "webapp.urls"
# A CSRF failure under /api/ answers JSON with the reason; a page gets its values back in a fresh form (csrf_page).
CSRF_FAILURE_VIEW = "webapp.dashboard.api_errors.csrf_failure"
ASGI_APPLICATION = "webapp.asgi.application"
WSGI_APPLICATION = "webapp.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]


def _database(url: str | None) -> dict:
    if url:
        return dj_database_url.parse(url, conn_max_age=60)
    return {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": STATE_DIR / "db.sqlite3",
        "OPTIONS": {
            # The web server and the control loops write at once: wait for the lock instead of failing,
            # take it at BEGIN (no deadlock upgrading a read to a write), and let readers run beside a
            # writer (WAL).
            "timeout": 20,
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        },
    }


DATABASES = {"default": _database(env_str("DATABASE_URL", "") or None)}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
# Sign-in throttling by django-axes: failed sign-ins are counted per account and per address in Redis (the
# "login" cache below, shared by every web process); past either limit, sign-ins are locked until
# NAS_LOGIN_LOCKOUT seconds pass without an attempt. What axes leaves to us is in webapp.dashboard.lockout.
# axes's backend first: it refuses a locked sign-in before ModelBackend checks the password, in every login
# view (the admin's too).
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "django.contrib.auth.backends.ModelBackend"]
NAS_LOGIN_FAILURES = env_int("NAS_LOGIN_FAILURES", 5)
NAS_LOGIN_ADDRESS_FAILURES = env_int("NAS_LOGIN_ADDRESS_FAILURES", 20)
NAS_LOGIN_LOCKOUT = env_int("NAS_LOGIN_LOCKOUT", 900)
# The counts live in Redis, not in the database (axes's tables stay empty, so neither are they in the admin).
AXES_HANDLER = "webapp.dashboard.lockout.LoginCacheHandler"
AXES_CACHE = "login"
AXES_ENABLE_ADMIN = False
# Two separate counts, not one per pair: either reaching its limit locks (the limits: lockout.failure_limits).
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]
# axes's own check compares the larger count with one limit; the handler checks each count against its own.
AXES_LOCK_OUT_AT_FAILURE = False
AXES_FAILURE_LIMIT = NAS_LOGIN_FAILURES  # only in axes's log lines
# Each failed or refused sign-in keeps its counts for this long again, so a lock ends this long after the last
# attempt and Retry-After can say exactly when (lockout.lockout_response relies on it).
AXES_COOLOFF_TIME = timedelta(seconds=NAS_LOGIN_LOCKOUT)
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = True
# The success of one's own account resets that account's count only (the handler does it, not axes).
AXES_RESET_ON_SUCCESS = False
# The sign-in page with when to try again, 429 and Retry-After (axes's own answer is a bare 429).
AXES_LOCKOUT_CALLABLE = "webapp.dashboard.lockout.lockout_response"
# The address is REMOTE_ADDR, which the ASGI server sets (from X-Forwarded-For only with --proxy-headers): a
# header the client sends is never trusted here. (axes reads REMOTE_ADDR anyway while django-ipware is not
# installed; this keeps it so if it ever is.)
AXES_IPWARE_META_PRECEDENCE_ORDER = ("REMOTE_ADDR",)
# No "AXES: BEGIN ..." INFO line at every start: each management command's output stays its own (the one-line
# errors of evalworker, the quiet search export).
AXES_VERBOSE = False
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "home"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = STATE_DIR / "static"
# The local stack has no reverse proxy in front: its ASGI server serves the static files itself.
NAS_SERVE_STATIC = env_bool("NAS_SERVE_STATIC", True)


def _redis_url() -> str:
    """``REDIS_URL``, else the URL the run command wrote for its embedded Redis, else the port that Redis keeps
    for this state folder (``up`` is not running yet: a worker started first waits for it there), else the
    usual local port."""
    explicit = env_str("REDIS_URL", "")
    if explicit:
        return explicit
    written = STATE_DIR / "redis.url"
    if written.exists():
        return written.read_text().strip()
    try:
        return f"redis://127.0.0.1:{int((STATE_DIR / 'redis.port').read_text())}/0"
    except (OSError, ValueError):
        return "redis://127.0.0.1:6379/0"


REDIS_URL = _redis_url()

# Each web process opens at most this many connections to Redis for its websockets; a burst of viewers beyond
# them waits (up to the timeout) for a free one instead of failing its handshake. Redis allows 10,000 clients.
NAS_CHANNEL_POOL_SIZE = env_int("NAS_CHANNEL_POOL_SIZE", 200)
NAS_CHANNEL_POOL_TIMEOUT = env_int("NAS_CHANNEL_POOL_TIMEOUT", 10)
# The live page's snapshot is built once per search and event and kept in Redis for every web process; one
# built less than this many seconds ago is served though events came since (the page catches up from its
# sequence number), so a busy search is drawn at most once per this time (webapp.dashboard.snapshots).
NAS_SNAPSHOT_MAX_AGE = float(env_str("NAS_SNAPSHOT_MAX_AGE", "2"))
CHANNEL_LAYERS = {"default": redis_channel_layer(REDIS_URL, NAS_CHANNEL_POOL_SIZE, NAS_CHANNEL_POOL_TIMEOUT)}
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    "login": redis_cache(REDIS_URL, "nas-login", env_str("NAS_REDIS_CA", "")),
}

# ---------------------------------------------------------------------------------------------------------
# Celery. The database is the truth and queues are only transport: these settings make the transport deliver
# each task at least once and never run pickled content; the engine makes a second delivery harmless.
# ---------------------------------------------------------------------------------------------------------
CELERY_BROKER_URL = REDIS_URL
CELERY_RESULT_BACKEND = REDIS_URL
# JSON only, both ways: a pickle from the network is remote code execution, and genomes are JSON anyway.
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_RESULT_ACCEPT_CONTENT = ["json"]
# Evaluations ack after they finish, so a worker killed mid-evaluation leaves its message to be redelivered.
# (The long-lived control task overrides this and acks early: it must never sit unacked past the visibility
# timeout, or Redis would hand the same search loop to a second worker.)
CELERY_TASK_ACKS_LATE = True
# A worker process killed by a signal or OOM: reject (requeue) instead of acking the message as done.
CELERY_TASK_REJECT_ON_WORKER_LOST = True
# One message per free slot: a slot pulls the next task only when it is free, so fast devices take more work
# (seed 000's pull model) and a slow device never hoards a queue of evaluations another could run.
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Redis redelivers an unacked message after this many seconds. Every task must finish well before it,
# or a healthy but slow evaluation would run twice.
NAS_VISIBILITY_TIMEOUT = env_int("NAS_VISIBILITY_TIMEOUT", 4 * 3600)
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": NAS_VISIBILITY_TIMEOUT,
    # Route broadcast messages by prefix so several projects can share one Redis without crosstalk.
    "fanout_prefix": True,
    "fanout_patterns": True,
}
CELERY_RESULT_BACKEND_TRANSPORT_OPTIONS = {"retry_policy": {"timeout": 5.0}}
# Remote workers over the internet: a rediss:// URL (TLS, certificates verified; NAS_REDIS_CA names a CA file).
NAS_REDIS_CA = env_str("NAS_REDIS_CA", "")
CELERY_BROKER_USE_SSL = redis_tls(REDIS_URL, NAS_REDIS_CA)
CELERY_REDIS_BACKEND_USE_SSL = CELERY_BROKER_USE_SSL
# The hard limit sits below the visibility timeout, so a stuck task is killed before it can be duplicated.
CELERY_TASK_TIME_LIMIT = env_int("NAS_TASK_TIME_LIMIT", NAS_VISIBILITY_TIMEOUT - 600)
CELERY_TASK_SOFT_TIME_LIMIT = max(CELERY_TASK_TIME_LIMIT - 60, CELERY_TASK_TIME_LIMIT * 0.9)
# Keep reconnecting for ever when Redis restarts: workers must ride out a broker restart, not exit.
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
# Sending a task while Redis restarts: retry for about half a minute instead of failing the search loop.
CELERY_TASK_PUBLISH_RETRY_POLICY = {"max_retries": 60, "interval_start": 0.1, "interval_step": 0.2, "interval_max": 1.0}
# Ctrl-C or SIGTERM: let running tasks finish for a few seconds, then stop and leave the unacked messages to
# be redelivered (a multi-minute evaluation must not hold a shutdown; the engine's reaper re-sends it anyway).
CELERY_WORKER_SOFT_SHUTDOWN_TIMEOUT = float(env_int("NAS_SOFT_SHUTDOWN_SECONDS", 10))
# Results are read by the control loop by task id; keep them long enough to survive a control-loop restart.
CELERY_RESULT_EXPIRES = 7 * 24 * 3600
CELERY_RESULT_EXTENDED = True
CELERY_TASK_TRACK_STARTED = True
# Two queues: the long-lived search loops, and the evaluations every device-pinned worker pulls from.
CELERY_TASK_DEFAULT_QUEUE = "control"
CELERY_TASK_ROUTES = {
    "webapp.stack.tasks.ping": {"queue": "eval"},
    "webapp.control.tasks.run_search": {"queue": "control"},
    "webapp.worker.tasks.evaluate_batch": {"queue": "eval"},  # the loop names the search's pool queue
    "webapp.notifications.tasks.send_webhook": {"queue": "notify"},  # the control worker serves it too
}
# A message on our queues that Celery cannot route or read is refused once and removed, never a dead worker
# (webapp.messaging.guard); the engine's tasks check their envelopes the same way (their Request class).
CELERY_WORKER_CONSUMER = "webapp.messaging.guard:GuardedConsumer"
# kombu's Redis transport, except that a queue item that is not a message at all is refused, not fatal.
CELERY_BROKER_TRANSPORT = "webapp.messaging.broker:Transport"
# Our own heartbeats in Redis replace Celery's worker events (which cost a core with many workers).
CELERY_WORKER_SEND_TASK_EVENTS = False
# A new pool process (after a kill -9 of an evaluation, or at start) must say it is up within this many seconds
# or Celery kills it and tries again. Its default, 4 s, is less than importing torch takes on a busy 2-core
# machine: the worker then looped on "Timed out waiting for UP message" and the killed evaluation never re-ran.
CELERY_WORKER_PROC_ALIVE_TIMEOUT = float(env_int("NAS_PROC_ALIVE_SECONDS", 60))
CELERY_WORKER_HIJACK_ROOT_LOGGER = False

# ---------------------------------------------------------------------------------------------------------
# The engine (webapp.control, webapp.worker): heartbeats, leases and attempts. The tests shorten these through the environment.
# ---------------------------------------------------------------------------------------------------------
# A running evaluation refreshes its heartbeat this often; a heartbeat older than the TTL means its worker died.
NAS_HEARTBEAT_SECONDS = float(env_str("NAS_HEARTBEAT_SECONDS", "5"))
NAS_HEARTBEAT_TTL = float(env_str("NAS_HEARTBEAT_TTL", "30"))
# A search loop renews its lease every third of this; a loop silent for longer is taken as dead.
NAS_LEASE_SECONDS = float(env_str("NAS_LEASE_SECONDS", "30"))
# How often each control worker's reaper looks for searches without a live loop.
NAS_REAP_SECONDS = float(env_str("NAS_REAP_SECONDS", "10"))
# A queued evaluation that no idle slot started within this time was lost in transport: sent again.
NAS_QUEUE_GRACE = float(env_str("NAS_QUEUE_GRACE", "120"))
# A genome whose worker died this many times fails with `worker_lost` (it would kill every worker).
NAS_MAX_ATTEMPTS = env_int("NAS_MAX_ATTEMPTS", 3)
# Evaluation messages are signed with this key (HMAC-SHA256); workers run no other. Every host of one
# installation must share it. Set by each environment's module (``local``: the state folder's ``task_key``).
NAS_TASK_KEY = env_str("NAS_TASK_KEY", "")
# The longest the loop blocks waiting for a result before it checks leases, staleness and stop requests.
NAS_LOOP_WAIT = float(env_str("NAS_LOOP_WAIT", "1"))

# ---------------------------------------------------------------------------------------------------------
# Told when a search ends (webapp.notifications): webhooks, sent by a Celery task on the queue "notify".
# ---------------------------------------------------------------------------------------------------------
# Each call gives up after this many seconds (connect and answer each): a slow receiver never holds a worker.
NAS_WEBHOOK_TIMEOUT = float(env_str("NAS_WEBHOOK_TIMEOUT", "5"))
# A call that fails (no answer, or not 2xx) is retried this many times, after about 2, 4, 8... seconds (Celery's
# retry_backoff, with jitter), each wait at most NAS_WEBHOOK_BACKOFF_MAX seconds. The tests shorten the waits.
NAS_WEBHOOK_RETRIES = env_int("NAS_WEBHOOK_RETRIES", 6)
NAS_WEBHOOK_BACKOFF = env_int("NAS_WEBHOOK_BACKOFF", 2)
NAS_WEBHOOK_BACKOFF_MAX = env_int("NAS_WEBHOOK_BACKOFF_MAX", 600)
# Signs the calls for the searches of a user who has no secret of their own (one is made when first needed
# when this is empty too).
NAS_WEBHOOK_SECRET = env_str("NAS_WEBHOOK_SECRET", "")
# The dashboard's address as its users reach it: the payload's link to the search's page.
NAS_PUBLIC_URL = env_str("NAS_PUBLIC_URL", "http://127.0.0.1:8000").rstrip("/")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {"django.channels.server": {"level": "WARNING"}},
}
