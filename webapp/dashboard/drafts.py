"""Creating and saving a draft from its form, for both kinds of search: the one place that says what a create,
a save, a save and launch, or a draft launched meanwhile (another tab) answers."""
from __future__ import annotations

from django import forms
from django.contrib import messages
from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from webapp.searches.config import ConfigError
from webapp.searches.models import Search
from webapp.services import lifecycle


def create_draft(request: HttpRequest, form: forms.Form) -> HttpResponse | None:
    """Create a search from a valid posted form (and launch it if the post asks); the redirect to answer, or None
    when the form gained an error (nothing created then)."""
    try:
        search = lifecycle.create_search(request.user, form.cleaned_data["name"], form.config)
    except lifecycle.ActionError as error:
        form.add_error("name", str(error))
        return None
    except ConfigError as error:  # e.g. a source search the user may not see: on the field it names
        form.add_config_error(error)
        return None
    if "launch" in request.POST:
        lifecycle.launch(search)
    return redirect("search-detail", search_id=search.pk)


def save_draft(request: HttpRequest, search: Search, form: forms.Form, saved_to: str) -> HttpResponse | None:
    """Store a valid posted form's ``name`` and ``config`` in the draft (then launch it if the post asks); the
    redirect to answer, or None when the form gained an error (nothing stored then). ``saved_to``: the URL
    name to show after a plain save."""
    try:
        lifecycle.update_draft(search, form.cleaned_data["name"], form.config)
        if "launch" in request.POST:
            lifecycle.launch(search)
            return redirect("search-detail", search_id=search.pk)
    except lifecycle.InvalidName as error:
        form.add_error("name", str(error))
        return None
    except ConfigError as error:  # e.g. a source search the owner may not see: on the field it names
        form.add_config_error(error)
        return None
    except lifecycle.ActionError as error:  # launched meanwhile (another tab)
        messages.error(request, str(error))
        return redirect("search-detail", search_id=search.pk)
    messages.success(request, f"Draft #{search.pk} saved.")
    return redirect(saved_to, search_id=search.pk)


def form_page(request: HttpRequest, form: forms.Form, template: str, context: dict[str, Any],
              save: Callable[[], HttpResponse | None]) -> HttpResponse:
    """A kind's create or edit page: a valid post is saved by ``save`` (its redirect answers); otherwise the
    form, with its errors (400) or as first shown (200)."""
    if request.method == "POST" and form.is_valid():
        answer = save()
        if answer is not None:
            return answer
    return render(request, template, {"form": form, **context}, status=400 if form.errors else 200)
