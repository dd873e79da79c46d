"""The browser form of a new weight search (seed 001): its fields build the configuration, and the engine's
``check_config`` checks it as a whole (its error lands on the field it names), as for architecture searches."""
from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from evaluators.catalog import DATASETS
from nas.neuroevolution import ALGORITHMS, METHODS
from webapp.searches.config import ConfigError, check_config
from webapp.searches.weights_config import FITNESS, NUMBERS, OPTIMIZERS
from webapp.services import lifecycle

#: The configuration's field -> the form's field that shows its error.
FIELD_OF = {"network.layers": "layers", "network.search": "source_search", "network.kind": "network",
            "network.genome": "source_search", "dataset": "dataset", "pool": "pool"}


def _choices(values: tuple[str, ...] | list[str]) -> list[tuple[str, str]]:
    return [(value, value) for value in values]


class WeightSearchForm(forms.Form):
    name = forms.CharField(max_length=200)
    network = forms.ChoiceField(choices=[("mlp", "an MLP (layer sizes)"), ("best_of", "the best architecture of a "
                                                                                    "search")], initial="mlp")
    layers = forms.CharField(required=False, initial="64,32,10", help_text="MLP: input size, hidden sizes, classes")
    source_search = forms.IntegerField(required=False, help_text="best architecture of this search (its number)")
    dataset = forms.ChoiceField(choices=_choices([d for d in DATASETS if d != "synthetic"]), initial="digits")
    algorithm = forms.ChoiceField(choices=_choices(ALGORITHMS), initial="openai_es")
    method = forms.ChoiceField(choices=_choices(METHODS), initial="cu",
                               help_text="cu: fitness values and gradient slices travel; su: partial gradients; "
                                         "scalars: fitness values only")
    population = forms.IntegerField(initial=NUMBERS["population"][0])
    sigma = forms.FloatField(initial=NUMBERS["sigma"][0])
    learning_rate = forms.FloatField(initial=NUMBERS["learning_rate"][0])
    optimizer = forms.ChoiceField(choices=_choices(OPTIMIZERS), initial="adam")
    fitness = forms.ChoiceField(choices=_choices(FITNESS), initial="loss")
    batch_size = forms.IntegerField(initial=NUMBERS["batch_size"][0])
    generations = forms.IntegerField(initial=NUMBERS["generations"][0])
    mirrored = forms.BooleanField(required=False, initial=True)
    seed = forms.IntegerField(initial=0)
    pool = forms.CharField(initial="eval")

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if self.errors:
            return data
        if data["network"] == "mlp":
            try:
                layers = [int(part) for part in data["layers"].replace(" ", "").split(",") if part]
            except ValueError:
                self.add_error("layers", "Layer sizes are integers separated by commas, e.g. 64,32,10.")
                return data
            network: dict[str, Any] = {"kind": "mlp", "layers": layers}
        else:
            if data.get("source_search") is None:
                self.add_error("source_search", "Name the search whose best architecture to fine-tune.")
                return data
            network = {"kind": "best_of", "search": data["source_search"]}
        weights = {key: data[key] for key in ("algorithm", "method", "population", "sigma", "learning_rate",
                                              "optimizer", "fitness", "batch_size", "generations", "mirrored",
                                              "seed")}
        try:
            self.config = check_config({"kind": "weights", "network": network, "dataset": data["dataset"],
                                        "weights": weights, "pool": data["pool"]})
        except ConfigError as error:
            field = FIELD_OF.get(error.field, error.field.removeprefix("weights."))
            self.add_error(field if field in self.fields else None, str(error))
        return data


@login_required
@require_http_methods(["GET", "POST"])
def create(request: HttpRequest) -> HttpResponse:
    form = WeightSearchForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            search = lifecycle.create_search(request.user, form.cleaned_data["name"], form.config)
        except (lifecycle.ActionError, ConfigError) as error:
            form.add_error("name", str(error))
        else:
            if "launch" in request.POST:
                lifecycle.launch(search)
            return redirect("search-detail", search_id=search.pk)
    return render(request, "dashboard/weights_form.html", {"form": form}, status=400 if form.errors else 200)
