"""A Content-Security-Policy on every response: the browser runs only scripts served from this site, so an
injected ``<script>`` or ``onclick=`` does nothing even where escaping was forgotten.

Every page keeps its scripts in ``static/js`` and hands data to them through ``json_script``; plotly.js is
served from our own URL (``webapp.dashboard.assets``). What each source list allows, and why:

- scripts: this site only; no inline script, and no ``eval`` except on the pages that draw WebGL charts
  (:func:`allow_eval`);
- ``<style>`` elements: this site's stylesheets, plus the two plotly.js creates, by hash
  (``assets.inline_style_sources``);
- images: this site, ``data:`` (the empty favicon) and ``blob:`` (a chart saved as PNG);
- connections: this site, its websocket included (``'self'`` matches ``ws:``/``wss:`` of the same host);
- no plugins, no ``<base>`` elsewhere, forms post only here, and no other site may frame a page.
"""
from __future__ import annotations

import functools
from typing import Callable

from django.http import HttpRequest, HttpResponse
from django.utils.deprecation import MiddlewareMixin

HEADER = "Content-Security-Policy"


def policy(allow_eval: bool = False) -> dict[str, tuple[str, ...]]:
    """Each directive with its sources."""
    from webapp.dashboard.assets import inline_style_sources

    return {
        "default-src": ("'self'",),
        "script-src": ("'self'", "'unsafe-eval'") if allow_eval else ("'self'",),
        "style-src": ("'self'", *inline_style_sources()),
        "img-src": ("'self'", "data:", "blob:"),
        "connect-src": ("'self'",),
        "object-src": ("'none'",),
        "base-uri": ("'self'",),
        "form-action": ("'self'",),
        "frame-ancestors": ("'none'",),
    }


@functools.cache
def header_value(allow_eval: bool = False) -> str:
    """The header's value: ``directive source source; ...``."""
    return "; ".join(f"{directive} {' '.join(sources)}" for directive, sources in policy(allow_eval).items())


def allow_eval(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """For a page that draws WebGL charts (``scattergl``): plotly.js's WebGL library (regl) builds the code of
    a drawing command with ``Function`` whenever its bundle holds no precompiled copy of it, which happens for
    some of the live page's charts (they then say "WebGL is not supported"). Only that page gets
    ``'unsafe-eval'``; inline scripts stay forbidden there too, and no script of ours evaluates text."""

    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        response = view(request, *args, **kwargs)
        response.headers[HEADER] = header_value(allow_eval=True)
        return response

    return wrapper


class ContentSecurityPolicyMiddleware(MiddlewareMixin):
    """Adds the policy to every response that does not set its own."""

    def process_response(self, request: HttpRequest, response: HttpResponse) -> HttpResponse:
        response.headers.setdefault(HEADER, header_value())
        return response
