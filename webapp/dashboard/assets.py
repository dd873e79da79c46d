"""plotly.js straight from the installed plotly package (no CDN, no copy in the repository), cached by the
browser for a day and keyed by the package's version."""
from __future__ import annotations

import functools
import hashlib

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET


@functools.cache
def _plotly_js() -> tuple[bytes, str]:
    from plotly.offline import get_plotlyjs

    content = get_plotlyjs().encode()
    return content, hashlib.sha256(content).hexdigest()[:16]


@require_GET
def plotly_js(request: HttpRequest) -> HttpResponse:
    content, etag = _plotly_js()
    if request.headers.get("If-None-Match") == f'"{etag}"':
        return HttpResponse(status=304)
    response = HttpResponse(content, content_type="text/javascript; charset=utf-8")
    response["ETag"] = f'"{etag}"'
    response["Cache-Control"] = "private, max-age=86400"
    return response
