"""The browser form of a one-shot search (seed 003), new or a draft to edit: a name and the configuration as
JSON (prefilled with a small search on digits), checked whole by the engine's ``check_config`` like the JSON
API's and ``search create``'s; its error is shown on the configuration, naming the field."""
from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_http_methods

from webapp.dashboard import drafts
from webapp.searches.config import ConfigError, check_config
from webapp.searches.models import Search

TEMPLATE = "dashboard/oneshot_form.html"
#: What a new form shows: every section a user is likely to change, small enough for minutes on a CPU.
STARTER: dict[str, Any] = {
    "kind": "oneshot", "space": {"name": "cell"}, "dataset": "digits", "training": {"epochs": 3},
    "oneshot": {"supernet": {"epochs": 20},
                "strategy": {"name": "regularized", "seed": 0,
                             "params": {"population": 16, "sample_size": 4, "max_evaluations": 100}},
                "check_ranking": 10},
    "final": {"top": 1, "epochs": 10},
}


class OneShotForm(forms.Form):
    name = forms.CharField(max_length=200, initial="one-shot search")
    config = forms.CharField(label="Configuration (JSON)", widget=forms.Textarea(attrs={"rows": 22, "cols": 80}),
                             initial=json.dumps(STARTER, indent=2),
                             help_text='The one-shot search\'s configuration: see the README\'s "One-shot search".')

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if self.errors:
            return data
        try:
            parsed = json.loads(data["config"])
        except json.JSONDecodeError as error:
            self.add_error("config", f"not JSON: {error}")
            return data
        if isinstance(parsed, dict):
            parsed = {"kind": "oneshot", **parsed}
        try:
            self.config = check_config(parsed)
        except ConfigError as error:
            self.add_config_error(error)
            return data
        if self.config.get("kind") != "oneshot":
            self.add_error("config", "kind: this form makes one-shot searches (\"kind\": \"oneshot\")")
        return data

    def add_config_error(self, error: ConfigError) -> None:
        self.add_error("name" if error.field == "name" else "config", str(error))


@login_required
@require_http_methods(["GET", "POST"])
def create(request: HttpRequest) -> HttpResponse:
    form = OneShotForm(request.POST or None)
    return drafts.form_page(request, form, TEMPLATE, {}, lambda: drafts.create_draft(request, form))


def edit(request: HttpRequest, search: Search) -> HttpResponse:
    """A one-shot draft in the form, prefilled with its configuration. ``pages.search_edit`` has checked that
    the search is the user's and still a draft."""
    form = OneShotForm(request.POST or None, initial={"name": search.name,
                                                      "config": json.dumps(search.config, indent=2)})
    return drafts.form_page(request, form, TEMPLATE, {"search": search},
                            lambda: drafts.save_draft(request, search, form, saved_to="search-detail"))
