"""The page a stale form gets: signed out and in again in another tab, a form loaded before carries a CSRF token
that no longer matches the session's. Instead of Django's 403 page, a 403 that says what happened, changes nothing,
and gives the submitted values back in a form with a fresh token, to check and submit again.

The values come back only when the browser said the post came from this site (an ``Origin`` header that Django's
CSRF check accepted): a cross-site post, the attack the check is for, gets the message alone, so no other site
can make this page fill a form for it. Passwords never come back.
"""
from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.middleware.csrf import REASON_BAD_ORIGIN
from django.shortcuts import render

MESSAGE = ("Your session changed since this page was loaded (signed out and in again, perhaps in another tab), so "
           "its form is no longer valid. Nothing was saved.")
#: Fields never echoed: the form's old token (a fresh one is rendered) and secrets.
HIDDEN = ("csrfmiddlewaretoken",)


def _same_site(request: HttpRequest, reason: str) -> bool:
    """Django checks a present ``Origin`` before the token, so a token failure with one means it was ours."""
    return "HTTP_ORIGIN" in request.META and not reason.startswith(REASON_BAD_ORIGIN.split("%")[0])


def submitted(request: HttpRequest, reason: str) -> list[tuple[str, str]]:
    """The posted fields to give back (name, value), in order; none for a post from another site."""
    if request.method != "POST" or not _same_site(request, reason):
        return []
    return [(name, value) for name, values in request.POST.lists() for value in values
            if name not in HIDDEN and "password" not in name.lower()]


def stale_form_page(request: HttpRequest, reason: str) -> HttpResponse:
    values = submitted(request, reason)
    return render(request, "dashboard/csrf_failure.html",
                  {"message": MESSAGE, "values": values, "action": request.get_full_path()}, status=403)
