"""Reading settings from environment variables, with errors that name the variable."""
from __future__ import annotations

import os

from django.core.exceptions import ImproperlyConfigured


def env_str(name: str, default: str | None = None) -> str:
    value = os.environ.get(name)
    if value is None or value == "":
        if default is None:
            raise ImproperlyConfigured(f"The environment variable {name} must be set.")
        return default
    return value


def require_secrets(*names: str) -> list[str]:
    """The values of the variables ``names``; if any is unset, the process stops with one line naming them all
    (a traceback would bury the one thing to do)."""
    missing = [name for name in names if not os.environ.get(name, "").strip()]
    if missing:
        listed = " and ".join(missing)
        raise SystemExit(
            f"Refusing to start: the production settings need {listed} in the environment (long random strings, "
            "e.g. python3 -c 'import secrets; print(secrets.token_urlsafe(50))'; "
            "NAS_TASK_KEY must be the same on every host of the installation)."
        )
    return [os.environ[name].strip() for name in names]


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    lowered = value.strip().lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name}={value!r} is not a boolean; use 1/0, true/false, yes/no or on/off.")


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={value!r} is not an integer.") from None


def env_list(name: str, default: list[str]) -> list[str]:
    value = os.environ.get(name)
    if value is None or value == "":
        return list(default)
    return [item.strip() for item in value.split(",") if item.strip()]


def redis_tls(url: str, ca_file: str = "") -> dict | None:
    """Celery's TLS options for a ``rediss://`` URL (certificates verified, against ``ca_file`` when given);
    ``None`` for plain ``redis://``. Celery refuses a rediss URL without them."""
    if not url.startswith("rediss://"):
        return None
    import ssl

    options: dict = {"ssl_cert_reqs": ssl.CERT_REQUIRED}
    if ca_file:
        options["ssl_ca_certs"] = ca_file
    return options


def redis_channel_layer(url: str, pool_size: int = 200, pool_timeout: float = 10.0) -> dict:
    """The Channels layer over the Redis at ``url``. redis-py's default 5 s socket timeout equals
    channels_redis's blocking read, so an idle websocket would drop every 5 s: a longer timeout keeps it open.
    Each process opens at most ``pool_size`` connections; a burst beyond them waits up to ``pool_timeout``
    seconds for a free one (``webapp.channel_layer``)."""
    return {"BACKEND": "webapp.channel_layer.PooledRedisChannelLayer",
            "CONFIG": {"hosts": [{"address": url, "socket_timeout": 30, "socket_connect_timeout": 5}],
                       "pool_size": pool_size, "pool_timeout": pool_timeout}}


def redis_cache(url: str, prefix: str, ca_file: str = "") -> dict:
    """A Django cache in the Redis at ``url`` (shared by every process), with short timeouts: a cache that
    does not answer must not hold a request for long."""
    options: dict = {"socket_connect_timeout": 2, "socket_timeout": 2}
    if url.startswith("rediss://") and ca_file:
        options["ssl_ca_certs"] = ca_file
    return {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": url, "KEY_PREFIX": prefix,
            "OPTIONS": options}
