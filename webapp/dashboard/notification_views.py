"""A user's notification settings: the page (``/settings/notifications/``) and the JSON API
(``GET``/``POST /api/notifications/``). Thin: ``webapp.notifications.user_hooks`` decides. A refused address is a
400 (the page shows it beside the field) and nothing is saved."""
from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_http_methods

from webapp.dashboard.access import api_login_required
from webapp.dashboard.api import BodyError, json_body
from webapp.dashboard.api_errors import json_error
from webapp.notifications import user_hooks

#: The fields of a POST: the webhook (``""`` clears it) and the secret (``"new"`` makes one, shown this once).
FIELDS = ("webhook", "secret")


def _apply(user, body: dict) -> tuple[dict, str | None]:
    """Check every field first, then save: a bad one changes nothing. Returns the settings and a secret made now."""
    if "webhook" in body and body["webhook"] not in ("", None):
        user_hooks.check_webhook_url(body["webhook"])  # WebhookURLError before anything is written
    secret = body.get("secret")
    if secret not in (None, "new"):
        user_hooks.check_secret(secret)
    if "webhook" in body:
        user_hooks.set_webhook(user, body["webhook"])
    made = None
    if secret == "new":
        made = user_hooks.new_secret(user)
    elif secret is not None:
        user_hooks.set_secret(user, secret)
    return user_hooks.settings_of(user), made


@login_required
@require_http_methods(["GET", "POST"])
def settings_page(request: HttpRequest) -> HttpResponse:
    context: dict = {}
    status = 200
    if request.method == "POST":
        body = {"webhook": request.POST.get("webhook", "")} if "save" in request.POST else {}
        if "new_secret" in request.POST:
            body["secret"] = "new"
        try:
            _, context["made"] = _apply(request.user, body)
            context["saved"] = True
        except ValueError as error:  # WebhookURLError: the page says why, the stored value stays
            context["error"], context["sent"] = str(error), request.POST.get("webhook", "")
            status = 400
    return render(request, "dashboard/notifications.html",
                  {**context, "hook": user_hooks.settings_of(request.user)}, status=status)


@api_login_required
@require_http_methods(["GET", "POST"])
def api_settings(request: HttpRequest) -> JsonResponse:
    if request.method == "GET":
        return JsonResponse(user_hooks.settings_of(request.user))
    try:
        body = json_body(request)
    except BodyError as error:
        return json_error(str(error))
    if not isinstance(body, dict) or set(body) - set(FIELDS):
        return json_error(f'The body must be a JSON object with the fields {", ".join(FIELDS)} '
                          '(e.g. {"webhook": "https://...", "secret": "new"}).')
    try:
        shown, made = _apply(request.user, body)
    except user_hooks.WebhookURLError as error:
        return json_error(f"webhook: {error}", field="webhook")
    except ValueError as error:
        return json_error(f"secret: {error}", field="secret")
    return JsonResponse({**shown, **({"new_secret": made} if made else {})})
