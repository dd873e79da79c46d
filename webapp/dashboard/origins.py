"""The websocket's origin check: a handshake is accepted only from a page of the site itself, the same scheme,
host and port, as Django's CSRF check accepts a form (``Origin`` equal to the served site's origin, or one of
``CSRF_TRUSTED_ORIGINS``), and only for a host in ``ALLOWED_HOSTS``.

Channels' ``AllowedHostsOriginValidator`` compares the host name alone, so a page at ``http://127.0.0.1:9999``
(another program on the same machine) could open the dashboard's socket with the user's cookie.
"""
from __future__ import annotations

from urllib.parse import urlsplit

from channels.security.websocket import WebsocketDenier
from django.conf import settings
from django.http.request import split_domain_port, validate_host

DEFAULT_PORTS = {"http": 80, "https": 443}
Origin = tuple[str, str, int]


def parse_origin(text: str) -> Origin | None:
    """``(scheme, host, port)`` of an origin such as ``https://example.org:8443``; ``None`` if it is not one."""
    try:
        parts = urlsplit(text.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS or not parts.hostname or parts.path not in ("", "/") or parts.query:
        return None
    return scheme, parts.hostname.lower(), port or DEFAULT_PORTS[scheme]


def _header(scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return value.decode("latin-1")
    return None


def _secure(scope) -> bool:
    """Whether the browser reached the site over TLS: a ``wss`` scope, or the proxy's header saying so
    (``SECURE_PROXY_SSL_HEADER``, as Django's ``request.is_secure()`` reads it)."""
    if scope.get("scheme") == "wss":
        return True
    proxy = getattr(settings, "SECURE_PROXY_SSL_HEADER", None)
    if proxy:
        name, expected = proxy
        value = _header(scope, name.removeprefix("HTTP_").lower().replace("_", "-").encode())
        return value is not None and value.split(",")[0].strip() == expected
    return False


def _allowed_hosts() -> list[str]:
    hosts = list(settings.ALLOWED_HOSTS)
    if settings.DEBUG and not hosts:  # Django's own default under DEBUG
        hosts = [".localhost", "127.0.0.1", "[::1]"]
    return hosts


def _trusted(origin: Origin) -> bool:
    for entry in getattr(settings, "CSRF_TRUSTED_ORIGINS", []):
        wildcard = "://*." in entry
        trusted = parse_origin(entry.replace("://*.", "://", 1))
        if trusted is None:
            continue
        scheme, host, port = trusted
        if origin == trusted or (wildcard and origin[0] == scheme and origin[2] == port
                                 and origin[1].endswith("." + host)):
            return True
    return False


def origin_allowed(scope) -> bool:
    """Whether the handshake in ``scope`` comes from a page of this site."""
    origin = parse_origin(_header(scope, b"origin") or "")
    host = _header(scope, b"host")
    if origin is None or not host:
        return False
    domain, _ = split_domain_port(host)
    if not domain or not validate_host(domain, _allowed_hosts()):
        return False
    served = parse_origin(f"{'https' if _secure(scope) else 'http'}://{host}")
    return origin == served or _trusted(origin)


class SameOriginValidator:
    """ASGI middleware: websocket handshakes from any other origin are refused (HTTP 403)."""

    def __init__(self, application) -> None:
        self.application = application

    async def __call__(self, scope, receive, send):
        if scope["type"] == "websocket" and not origin_allowed(scope):
            return await WebsocketDenier()(scope, receive, send)
        return await self.application(scope, receive, send)
