"""Errors under ``/api/`` are JSON, ``{"error": MESSAGE}``, whoever raised them: a view, Django's CSRF check,
the URL resolver (an unknown URL), a method decorator, or an uncaught exception. A script reads the message
instead of an HTML page. Pages outside ``/api/`` keep Django's HTML errors."""
from __future__ import annotations

from http import HTTPStatus
from typing import Callable

from django.http import HttpRequest, HttpResponse, JsonResponse

from webapp.dashboard.csrf_page import stale_form_page

API_PREFIX = "/api/"


def is_api(request: HttpRequest) -> bool:
    return request.path_info.startswith(API_PREFIX)


def json_error(message: str, status: int = 400, **extra) -> JsonResponse:
    """The one shape of every API error."""
    return JsonResponse({"error": message, **extra}, status=status)


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """``CSRF_FAILURE_VIEW``: a 403 either way; JSON with the reason under ``/api/``, elsewhere a page that says the
    session changed and gives the form's values back (``csrf_page``), never Django's debug page."""
    if not is_api(request):
        return stale_form_page(request, reason)
    return json_error(f"CSRF check failed: {reason} Your session may have changed (signed out and in again): read "
                      "the csrftoken cookie again and send its value in the X-CSRFToken header (and the session "
                      "cookie) with every POST.", 403, reason=reason)


def _message(request: HttpRequest, response: HttpResponse) -> str:
    status = response.status_code
    if status == 404:
        return f"Not found: {request.path}"
    if status == 405:
        return f"Method {request.method} is not allowed here; allowed: {response.get('Allow', 'none')}."
    if status == 401:
        return "Sign in first (session cookie required)."
    if status >= 500:
        # The traceback is in the server's log; a client learns nothing from it and must not see it.
        return "Server error: the request failed on the server (details are in its log)."
    try:
        return f"{HTTPStatus(status).phrase}."
    except ValueError:
        return f"HTTP {status}."


def _is_json(response: HttpResponse) -> bool:
    return response.get("Content-Type", "").split(";")[0].strip() == "application/json"


class ApiErrorMiddleware:
    """Turns every non-JSON error response under ``/api/`` into ``{"error": ...}`` with the same status.

    It sits outermost, so it also sees the responses Django makes from exceptions (404 from the resolver, 400
    from an oversized body, 500 and DEBUG's technical pages) and those the CSRF middleware returns."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if response.status_code < 400 or not is_api(request) or _is_json(response):
            return response
        replacement = json_error(_message(request, response), response.status_code)
        for header in ("Allow", "Retry-After"):
            if header in response:
                replacement[header] = response[header]
        return replacement

