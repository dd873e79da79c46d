"""A Content-Security-Policy on every response: the browser runs only scripts served from this site, so an
injected ``<script>`` or ``onclick=`` does nothing even where escaping was forgotten.

Every page keeps its scripts in ``static/js`` and hands data to them through ``json_script``; plotly.js is
served from our own URL (``webapp.dashboard.assets``). What each source list allows, and why:

- scripts: this site only; no inline script, no ``eval`` (plotly.js compiles its WebGL shaders ahead of time,
  so even ``scattergl`` needs no ``'unsafe-eval'``);
- ``<style>`` elements: this site's stylesheets, plus the two plotly.js creates, by hash
  (``assets.inline_style_sources``);
- images: this site, ``data:`` (the empty favicon) and ``blob:`` (a chart saved as PNG);
- connections: this site, its websocket included (``'self'`` matches ``ws:``/``wss:`` of the same host);
- no plugins, no ``<base>`` elsewhere, forms post only here, and no other site may frame a page.
"""
from __future__ import annotations

import functools

from django.http import HttpRequest, HttpResponse
from django.utils.deprecation import MiddlewareMixin

HEADER = "Content-Security-Policy"


def policy() -> dict[str, tuple[str, ...]]:
    """Each directive with its sources."""
    from webapp.dashboard.assets import inline_style_sources

    return {
        "default-src": ("'self'",),
        "script-src": ("'self'",),
        "style-src": ("'self'", *inline_style_sources()),
        "img-src": ("'self'", "data:", "blob:"),
        "connect-src": ("'self'",),
        "object-src": ("'none'",),
        "base-uri": ("'self'",),
        "form-action": ("'self'",),
        "frame-ancestors": ("'none'",),
    }


@functools.cache
def header_value() -> str:
    """The header's value: ``directive source source; ...``."""
    return "; ".join(f"{directive} {' '.join(sources)}" for directive, sources in policy().items())


class ContentSecurityPolicyMiddleware(MiddlewareMixin):
    """Adds the policy to every response that does not set its own."""

    def process_response(self, request: HttpRequest, response: HttpResponse) -> HttpResponse:
        response.headers.setdefault(HEADER, header_value())
        return response
