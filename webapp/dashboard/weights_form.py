"""The browser form of a weight search (seed 001), new or a draft to edit: its fields build the configuration,
and the engine's ``check_config`` checks it as a whole (its error lands on the field it names), as for
architecture searches."""
from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_http_methods

from evaluators.catalog import DATASETS
from nas.neuroevolution import ALGORITHMS, METHODS
from webapp.dashboard import drafts
from webapp.searches.config import ConfigError, check_config
from webapp.searches.models import Search
from webapp.searches.notify_config import WEBHOOK_HELP
from webapp.searches.weights_config import FIELDS, FINE_TUNING, FITNESS, NUMBERS, OPTIMIZERS

#: The configuration's field -> the form's field that shows its error.
TEMPLATE = "dashboard/weights_form.html"
FIELD_OF = {"network.layers": "layers", "network.search": "source_search", "network.kind": "network",
            "network.genome": "source_search", "dataset": "dataset", "pool": "pool", "notify.webhook": "webhook"}
#: The network choice of a draft whose genome was given whole (``search create --set``): kept as it is.
STORED = "stored"


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
    sigma = forms.FloatField(required=False, help_text=f"Blank: {NUMBERS['sigma'][0]}, or "
                                                       f"{FINE_TUNING['sigma']} when it starts from kept trained weights")
    learning_rate = forms.FloatField(required=False, help_text=f"Blank: {NUMBERS['learning_rate'][0]}, or "
                                                               f"{FINE_TUNING['learning_rate']} when it starts from "
                                                               "kept trained weights")
    optimizer = forms.ChoiceField(choices=_choices(OPTIMIZERS), initial="adam")
    fitness = forms.ChoiceField(choices=_choices(FITNESS), initial="loss")
    batch_size = forms.IntegerField(initial=NUMBERS["batch_size"][0])
    generations = forms.IntegerField(initial=NUMBERS["generations"][0])
    mirrored = forms.BooleanField(required=False, initial=True)
    seed = forms.IntegerField(initial=0)
    pool = forms.CharField(initial="eval")
    webhook = forms.CharField(label="Webhook when it ends", required=False, max_length=2000, help_text=WEBHOOK_HELP)

    def __init__(self, *args: Any, base: dict[str, Any] | None = None, **kwargs: Any) -> None:
        """``base``: the stored configuration of the draft being edited (its network is kept while the form's
        network fields still say the same: a best architecture found at creation is not looked up again)."""
        super().__init__(*args, **kwargs)
        self.base_network = (base or {}).get("network")
        if self.base_network and self.base_network.get("kind") == "genome" and "source_search" not in self.base_network:
            self.fields["network"].choices = [*self.fields["network"].choices,
                                              (STORED, "its genome, as stored (change it with search edit --set)")]

    @classmethod
    def initial_from(cls, name: str, config: dict[str, Any]) -> dict[str, Any]:
        """The form's values for a stored configuration (a draft to edit)."""
        network = config["network"]
        initial = {"name": name, "dataset": config["dataset"], "pool": config["pool"],
                   **{key: config["weights"][key] for key in FIELDS},
                   "webhook": (config.get("notify") or {}).get("webhook", "")}
        if network["kind"] == "mlp":
            initial.update(network="mlp", layers=",".join(str(size) for size in network["layers"]))
        elif "source_search" in network:
            initial.update(network="best_of", source_search=network["source_search"])
        else:
            initial["network"] = STORED
        return initial

    def _network(self, data: dict[str, Any]) -> dict[str, Any] | None:
        """The configuration's network from the form's fields (None after adding a field error)."""
        base = self.base_network or {}
        if data["network"] == STORED:
            return base
        if data["network"] == "mlp":
            try:
                layers = [int(part) for part in data["layers"].replace(" ", "").split(",") if part]
            except ValueError:
                self.add_error("layers", "Layer sizes are integers separated by commas, e.g. 64,32,10.")
                return None
            return {"kind": "mlp", "layers": layers}
        if data.get("source_search") is None:
            self.add_error("source_search", "Name the search whose best architecture to fine-tune.")
            return None
        if base.get("source_search") == data["source_search"]:
            return base  # the architecture chosen at creation, not the source search's best of today
        return {"kind": "best_of", "search": data["source_search"]}

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if self.errors:
            return data
        network = self._network(data)
        if network is None:
            return data
        # Every field of the "weights" section has its form field; a blank one takes the configuration's default.
        weights = {key: data[key] for key in FIELDS if data.get(key) is not None}
        try:
            notify = {"notify": {"webhook": data["webhook"]}} if data.get("webhook") else {}
            self.config = check_config({"kind": "weights", "network": network, "dataset": data["dataset"],
                                        "weights": weights, "pool": data["pool"], **notify})
        except ConfigError as error:
            self.add_config_error(error)
        return data

    def add_config_error(self, error: ConfigError) -> None:
        """The configuration's error on the form's field it names (else above the form)."""
        field = FIELD_OF.get(error.field, error.field.removeprefix("weights."))
        self.add_error(field if field in self.fields else None, str(error))


@login_required
@require_http_methods(["GET", "POST"])
def create(request: HttpRequest) -> HttpResponse:
    form = WeightSearchForm(request.POST or None)
    return drafts.form_page(request, form, TEMPLATE, {}, lambda: drafts.create_draft(request, form))


def edit(request: HttpRequest, search: Search) -> HttpResponse:
    """A weight-search draft in the form, prefilled; saved (and launched) when valid, unchanged when not.
    ``pages.search_edit`` has checked that the search is the user's and still a draft."""
    form = WeightSearchForm(request.POST or None, initial=WeightSearchForm.initial_from(search.name, search.config),
                            base=search.config)
    return drafts.form_page(request, form, TEMPLATE, {"search": search},
                            lambda: drafts.save_draft(request, search, form, saved_to="search-detail"))
