"""``/static/`` served by the ASGI application itself (``NAS_SERVE_STATIC``: one machine, no reverse proxy)."""
from __future__ import annotations

from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler
from django.core.exceptions import SuspiciousFileOperation
from django.http import Http404


class StaticFilesHandler(ASGIStaticFilesHandler):
    """Django's handler of ``/static/`` (``runserver``'s), where a path that leads out of the static folders
    (``/static/..%2f..%2fmanage.py``) is a 404 like any file that is not there. Django's own lets the
    ``SuspiciousFileOperation`` of its path check through: a 500."""

    def serve(self, request):
        try:
            return super().serve(request)
        except SuspiciousFileOperation:
            raise Http404("No such static file.") from None
