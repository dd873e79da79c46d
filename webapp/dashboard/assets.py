"""plotly.js straight from the installed plotly package (no CDN, no copy in the repository), cached by the
browser for a day and keyed by the package's version; and what its inline ``<style>`` elements need from the
Content-Security-Policy (``webapp.dashboard.csp``)."""
from __future__ import annotations

import base64
import functools
import hashlib
import re

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

#: A stylesheet plotly.js writes into a ``<style>`` element it creates: ``createElement("style")`` and, a few
#: statements on, ``textContent='...'`` (maplibre's rules, added whenever the bundle loads).
_STYLE_TEXT = re.compile(r"""createElement\("style"\)[^']{0,300}?\.textContent='((?:[^'\\]|\\.)*)'""")


@functools.cache
def _plotly_js() -> tuple[bytes, str]:
    from plotly.offline import get_plotlyjs

    content = get_plotlyjs().encode()
    return content, hashlib.sha256(content).hexdigest()[:16]


def _csp_hash(text: str) -> str:
    return "'sha256-%s'" % base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()


@functools.cache
def inline_style_sources() -> tuple[str, ...]:
    """The hashes of the ``<style>`` elements plotly.js adds, for ``style-src-elem``: the empty one it fills
    with its own rules through the CSSOM (which no policy restricts), and each stylesheet it writes as text.
    Nothing else inline is allowed, so a ``<style>`` an attacker slipped into a page is not applied."""
    script = _plotly_js()[0].decode()
    texts = [match.group(1).replace("\\'", "'").replace("\\\\", "\\") for match in _STYLE_TEXT.finditer(script)]
    return tuple(dict.fromkeys(_csp_hash(text) for text in ["", *texts]))


@require_GET
def plotly_js(request: HttpRequest) -> HttpResponse:
    content, etag = _plotly_js()
    if request.headers.get("If-None-Match") == f'"{etag}"':
        return HttpResponse(status=304)
    response = HttpResponse(content, content_type="text/javascript; charset=utf-8")
    response["ETag"] = f'"{etag}"'
    response["Cache-Control"] = "private, max-age=86400"
    return response
