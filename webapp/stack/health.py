"""What the home page shows about the running system: is Redis there, which settings are in force."""
from __future__ import annotations

import dataclasses

import redis
from django.conf import settings

from webapp.stack.redis_server import redact


@dataclasses.dataclass(frozen=True)
class SystemStatus:
    redis_url: str  #: with any password replaced by ***
    redis_ok: bool
    redis_error: str
    database: str


def system_status() -> SystemStatus:
    error = ""
    try:
        redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=0.5, socket_timeout=0.5).ping()
    except redis.RedisError as exc:
        error = str(exc)
    engine = settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1]
    return SystemStatus(redact(settings.REDIS_URL), not error, error, engine)
