"""The search form: one field per choice a user makes, checked field by field (every bad value gets its own
error), then as a whole by the engine's ``check_config`` (its error lands on the field it names).

Every field comes from the definition the engine checks against: the strategies' parameters from their
``describe_params()``, the training budget from ``evaluators.budget``, the datasets from ``evaluators.catalog``,
the evaluation's fields from ``webapp.searches.architecture_config``. A new strategy parameter or budget field appears here
by itself.
"""
from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_http_methods

from evaluators import budget
from evaluators.catalog import DATASETS, unavailable
from evaluators.compression import from_text, to_text
from nas.spaces import SPACES
from nas.pruners import PRUNERS
from nas.strategies import STRATEGIES
from nas.strategies.archive import MAX_SEED
from webapp.searches.architecture_config import LATENCY_FIELDS, SIMULATED_FIELDS, TRAINED_FIELDS
from webapp.searches import starter
from webapp.searches.checks import POOL, POOL_RULE
from webapp.searches.final_config import MOST_TOP
from webapp.dashboard import drafts
from webapp.searches.config import ConfigError, check_config
from webapp.searches.notify_config import WEBHOOK_HELP
from webapp.searches.models import Search
from webapp.services import estimates
from webapp.services.datasets import visible_datasets

TEMPLATE = "dashboard/search_form.html"
#: What a result measures that an objective can name (``latency`` only when the evaluation measures it).
OBJECTIVE_METRICS = ("accuracy", "params", "flops", "latency_ms", "fitness", "latency")
OBJECTIVE_NAMES = "accuracy, params, flops, latency_ms, fitness; latency when measured"
#: The form's initial values: the starter set every way of creating a search shares (``webapp.searches.starter``).
DEFAULTS: dict[str, Any] = {
    "name": starter.NAME, "space": "chain", "strategy": "regularized", **starter.STRATEGY_PARAMS,
    "p_mutation": 0.58, "p_crossover": 0.5, "elitism": 1, "seed": 0, "dataset": "digits", "pool": "eval",
    "evaluation": "train", "sim_duration": SIMULATED_FIELDS["duration"][0],
    "keep_weights": TRAINED_FIELDS["keep_weights"][0],
    **{_name: value for _name, value in {**budget.defaults(), **starter.TRAINING}.items()
       if _name != "seed" and value is not None},
    "training_seed": 0, "pruner": "none",
}


def pruner_params() -> dict[str, dict[str, Any]]:
    """Every pruner parameter a form shows (by name, as ``pruner_<name>``), with the pruners that take it; the
    multi-objective ``known_objectives`` is filled from the strategy's objectives (nsga2, tpe) by the engine, not asked."""
    params: dict[str, dict[str, Any]] = {}
    for name, cls in PRUNERS.items():
        for described in cls.describe_params():
            if described["type"] in ("int", "float"):
                params.setdefault(described["name"], {**described, "pruners": []})["pruners"].append(name)
    return params


def _pruner_field(described: dict[str, Any]) -> forms.Field:
    kind = forms.IntegerField if described["type"] == "int" else forms.FloatField
    return kind(label=described["label"], required=False, min_value=described["low"], max_value=described["high"],
                help_text=f"{described['help']} Blank: the pruner's default ({described['default']}).",
                widget=forms.NumberInput(attrs={"data-pruners": " ".join(described["pruners"]),
                                                "step": "any" if described["type"] == "float" else "1"}))


def strategy_params() -> dict[str, dict[str, Any]]:
    """Every strategy parameter by name (the first strategy's description of it), with the strategies that
    take it."""
    params: dict[str, dict[str, Any]] = {}
    for name, cls in STRATEGIES.items():
        for described in cls.describe_params():
            params.setdefault(described["name"], {**described, "strategies": []})["strategies"].append(name)
    return params


def _param_field(described: dict[str, Any]) -> forms.Field:
    attrs = {"data-strategies": " ".join(described["strategies"])}
    help_text = described["help"] + " Blank: the strategy's default" + (" (no limit)." if described["optional"] else ".")
    if described["type"] == "objectives":
        defaults = "; ".join(f"{name}: {format_objectives(STRATEGIES[name].default_params()['objectives'])}"
                             for name in described["strategies"])
        return forms.CharField(label=described["label"], required=False, help_text='Pairs "name:max" or "name:min", '
                               f"comma separated (metrics: {OBJECTIVE_NAMES}). Blank: the strategy's default "
                               f"({defaults}).",
                               widget=forms.TextInput(attrs=attrs))
    kind = forms.IntegerField if described["type"] == "int" else forms.FloatField
    return kind(label=described["label"], required=False, min_value=described["low"], max_value=described["high"],
                help_text=help_text,
                widget=forms.NumberInput(attrs={**attrs, "step": "any" if described["type"] == "float" else "1"}))


def form_name(budget_field: str) -> str:
    """The form field of a training-budget field (the budget's ``seed`` would clash with the strategy's)."""
    return "training_seed" if budget_field == "seed" else budget_field


def _budget_field(name: str, rule: budget.FieldRule) -> forms.Field:
    if rule.choices:
        return forms.ChoiceField(label=rule.label, help_text=rule.help, choices=[(c, c) for c in rule.choices])
    kind = forms.IntegerField if rule.kind is int else forms.FloatField
    return kind(label=rule.label, help_text=rule.help, required=not rule.optional, min_value=rule.low,
                max_value=rule.high, widget=forms.NumberInput(attrs={"step": "1" if rule.kind is int else "any"}))


def format_objectives(pairs) -> str:
    return ", ".join(f"{name}:{direction}" for name, direction in pairs)


def parse_objectives(text: str) -> list[list[str]]:
    pairs = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, _, direction = part.partition(":")
        pairs.append([name.strip(), (direction.strip() or "max").lower()])
    return pairs


def dataset_choices() -> list[tuple[str, str]]:
    """Every dataset, those whose files are missing here (and not downloadable) marked so (``catalog.unavailable``;
    choosing one is refused, naming ``NAS_DATA_DIR`` and ``NAS_DATA_DOWNLOAD``)."""
    return [(name, name if unavailable(name) is None else f"{name} (not installed)") for name in DATASETS]


class SearchForm(forms.Form):
    name = forms.CharField(max_length=200)
    space = forms.ChoiceField(label="Search space", choices=[(n, n) for n in SPACES])
    strategy = forms.ChoiceField(choices=[(n, n) for n in STRATEGIES])
    seed = forms.IntegerField(min_value=0, max_value=MAX_SEED, help_text="Same seed, same candidates.")
    dataset = forms.ChoiceField(choices=dataset_choices)
    pool = forms.RegexField(label="Worker pool", regex=POOL, max_length=100,
                            help_text="The queue its evaluation workers pull from (eval by default).",
                            error_messages={"invalid": f"Must be {POOL_RULE}."})
    webhook = forms.CharField(label="Webhook when it ends", required=False, max_length=2000,
                              help_text=WEBHOOK_HELP)
    evaluation = forms.ChoiceField(choices=[("train", "train (real PyTorch training)"),
                                            ("simulated", "simulated (no training; for trials)")])
    keep_weights = forms.IntegerField(
        label="Keep the trained weights of the best", min_value=TRAINED_FIELDS["keep_weights"][2],
        max_value=TRAINED_FIELDS["keep_weights"][3], required=False,
        help_text="How many of the best individuals keep their trained weights and ONNX (in the downloads); "
                  "0: none. Trained evaluations only.", widget=forms.NumberInput(attrs={"step": "1"}))
    latency_batch = forms.IntegerField(
        label="Measure inference latency at batch size", min_value=LATENCY_FIELDS["batch"][2],
        max_value=LATENCY_FIELDS["batch"][3], required=False,
        help_text="Blank: off. Each trained network's optimal inference schedule is measured on its worker's "
                  "device: the objective latency (ms) and the schedule on its page.",
        widget=forms.NumberInput(attrs={"step": "1"}))
    compression = forms.CharField(
        label="Gradient compression (gangs)", required=False, max_length=100,
        help_text="How the ranks of a gang (evaluation.devices above 1) exchange gradients: none (dense), "
                  "segment_topk:RATIO (seed 003: that share of each segment's largest gradients, e.g. 0.01), "
                  "powersgd:RANK or fp16. Trained evaluations only.")
    pruner = forms.ChoiceField(label="Early stopping", choices=[(n, n) for n in PRUNERS], required=False,
                               help_text="none: every candidate trains its full budget; median, asha, curve: stop "
                                         "unpromising ones early (see the README).")
    report_every = forms.IntegerField(label="Report every (steps)", required=False, min_value=1,
                                      help_text="Training steps between two reports of the learning curve. Blank: "
                                                "once per epoch.", widget=forms.NumberInput(attrs={"step": "1"}))
    final_top = forms.IntegerField(
        label="Final training: retrain the best", required=False, min_value=1, max_value=MOST_TOP,
        help_text="Once the search ends, retrain its best this many genomes from scratch; the best of them is the "
                  "search's result (in the Best zip). Blank: no final training.",
        widget=forms.NumberInput(attrs={"step": "1"}))
    final_epochs = forms.IntegerField(
        label="Final training: epochs", required=False, min_value=1,
        help_text="Epochs of each final run (the other training fields are the search's).",
        widget=forms.NumberInput(attrs={"step": "1"}))
    sim_duration = forms.FloatField(label="Simulated seconds per evaluation", required=False,
                                    min_value=SIMULATED_FIELDS["duration"][2], max_value=SIMULATED_FIELDS["duration"][3],
                                    widget=forms.NumberInput(attrs={"step": "any"}))

    def __init__(self, *args, base: dict[str, Any] | None = None, user=None, **kwargs) -> None:
        """``base``: the configuration being edited (a draft's), whose settings the form does not show are kept;
        ``user``: whose registered data sets are offered beside the built-in ones."""
        kwargs.setdefault("initial", DEFAULTS)
        super().__init__(*args, **kwargs)
        self.base = base
        if user is not None:
            self.fields["dataset"].choices = dataset_choices() + [
                (name, f"{name} (registered)") for name in visible_datasets(user).values_list("name", flat=True)]
        self.params = strategy_params()
        for name, described in self.params.items():
            self.fields[name] = _param_field(described)
        self.budget_fields = [form_name(name) for name in budget.rules()]
        for name, rule in budget.rules().items():
            self.fields[form_name(name)] = _budget_field(name, rule)
        self.pruner_params = pruner_params()
        for name, described in self.pruner_params.items():
            self.fields[f"pruner_{name}"] = _pruner_field(described)
        self.order_fields(["name", "space", "strategy", *self.params, "seed", "dataset", *self.budget_fields,
                           "pool", "evaluation", "keep_weights", "latency_batch", "compression", "sim_duration",
                           "pruner",
                           *(f"pruner_{name}" for name in self.pruner_params), "report_every",
                           "final_top", "final_epochs"])
        self.config: dict[str, Any] | None = None

    @classmethod
    def initial_from(cls, name: str, config: dict[str, Any]) -> dict[str, Any]:
        """The form's values for a stored configuration (a draft to edit): what :meth:`build_config` reads."""
        strategy, evaluation = config["strategy"], config["evaluation"]
        params = dict(strategy["params"])
        if "objectives" in params:
            params["objectives"] = format_objectives(params["objectives"])
        initial = {**DEFAULTS, **{k: v for k, v in params.items()}, "name": name, "space": config["space"]["name"],
                   "strategy": strategy["name"], "seed": strategy["seed"], "dataset": config["dataset"],
                   "pool": config["pool"], "evaluation": evaluation["mode"],
                   **{form_name(k): v for k, v in config["training"].items()}}
        pruner = dict(config.get("pruner") or {"name": "none"})
        initial["pruner"] = pruner.pop("name")
        initial.update({f"pruner_{k}": v for k, v in pruner.items() if not isinstance(v, (list, type(None)))})
        initial["report_every"] = evaluation.get("report_every")
        if evaluation["mode"] == "train":
            initial["keep_weights"] = evaluation.get("keep_weights")
            initial["compression"] = to_text(evaluation.get("compression"))
        else:
            initial["sim_duration"] = evaluation.get("duration")
        initial["latency_batch"] = (evaluation.get("latency") or {}).get("batch")
        initial["webhook"] = (config.get("notify") or {}).get("webhook", "")
        final = config.get("final") or {}
        initial["final_top"], initial["final_epochs"] = final.get("top"), final.get("epochs")
        return initial

    def clean_objectives(self) -> list[list[str]] | None:
        text = self.cleaned_data.get("objectives") or ""
        pairs = parse_objectives(text)
        for name, direction in pairs:
            if name not in OBJECTIVE_METRICS or direction not in ("max", "min"):
                raise forms.ValidationError(
                    f'"{name}:{direction}" is not an objective: write metric:max or metric:min, the metric one of '
                    f'{OBJECTIVE_NAMES} (e.g. "accuracy:max, params:min").')
        return pairs or None

    def clean_compression(self) -> str | dict[str, Any]:
        try:
            return from_text(self.cleaned_data.get("compression") or "")
        except ValueError as error:
            raise forms.ValidationError(str(error)) from None

    def build_config(self, base: dict[str, Any] | None = None) -> dict[str, Any]:
        """The configuration the form describes; ``base`` (a draft's) keeps what the form does not show, such as
        a space's own parameters."""
        data = self.cleaned_data
        strategy = data["strategy"]
        accepted = {p.name for p in STRATEGIES[strategy].PARAMS}
        optional = {p.name for p in STRATEGIES[strategy].PARAMS if p.optional}
        params = {}
        for name in self.params:
            if name in accepted and data.get(name) is not None:
                params[name] = data[name]
            elif name in optional and name in self.data and name != "objectives":
                params[name] = None  # a blank optional field means "no limit", not the default
        evaluation: dict[str, Any] = {"mode": "train"}
        if data.get("keep_weights") is not None:  # blank: check_config's default
            evaluation["keep_weights"] = data["keep_weights"]
        if data.get("compression") not in (None, "", "none"):  # dropped below for a simulated one: it exchanges nothing
            evaluation["compression"] = data["compression"]
        if data["evaluation"] == "simulated":
            base_evaluation = (base or {}).get("evaluation", {})
            evaluation = {**(base_evaluation if base_evaluation.get("mode") == "simulated" else {}),
                          "mode": "simulated", "duration": data.get("sim_duration") or DEFAULTS["sim_duration"]}
        evaluation.pop("latency", None)  # blank: off, whatever the draft had
        if data.get("latency_batch"):
            evaluation["latency"] = {**((base or {}).get("evaluation", {}).get("latency") or {}),
                                     "batch": data["latency_batch"]}
        if data.get("report_every") is not None:
            evaluation["report_every"] = data["report_every"]
        space = {"name": data["space"]}
        if base and base["space"]["name"] == data["space"]:
            space = base["space"]
        config = {
            "space": space,
            "strategy": {"name": strategy, "seed": data["seed"], "params": params},
            "dataset": data["dataset"],
            "training": {name: data[form_name(name)] for name in budget.rules()},
            "evaluation": evaluation,
            "pool": data["pool"],
        }
        if base and base.get("dataset") == data["dataset"] and "data" in base:
            config["data"] = base["data"]  # a registered set's input size, split and augmentation, kept
        if data.get("webhook"):
            config["notify"] = {"webhook": data["webhook"]}
        if data.get("pruner") and data["pruner"] != "none":
            taken = {p.name for p in PRUNERS[data["pruner"]].PARAMS}
            config["pruner"] = {"name": data["pruner"], **{name: data[f"pruner_{name}"] for name in self.pruner_params
                                                            if name in taken and data.get(f"pruner_{name}") is not None}}
        final = {name: data[f"final_{name}"] for name in ("top", "epochs") if data.get(f"final_{name}") is not None}
        if final:  # one without the other: check_config says which is missing
            config["final"] = final
        return config

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        if self.errors:
            return cleaned
        try:
            self.config = check_config(self.build_config(self.base))
        except ConfigError as error:
            self.add_config_error(error)
        return cleaned

    def add_config_error(self, error: ConfigError) -> None:
        """The configuration's error on the form's field it names (else above the form)."""
        self.add_error(field_for(error.field, self.fields), str(error).split(": ", 1)[-1])


def field_for(dotted: str, fields) -> str | None:
    """The form field a ``ConfigError``'s dotted field names (``strategy.params.population`` -> population)."""
    special = {"strategy.name": "strategy", "strategy.seed": "seed", "evaluation.duration": "sim_duration",
               "evaluation.mode": "evaluation", "evaluation.keep_weights": "keep_weights",
               "training.seed": "training_seed", "pruner.name": "pruner", "evaluation.report_every": "report_every",
               "final.top": "final_top", "final.epochs": "final_epochs"}
    if dotted in special:
        return special[dotted]
    if dotted.startswith("pruner.") and f"pruner_{dotted[7:]}" in fields:
        return f"pruner_{dotted[7:]}"
    last = dotted.rsplit(".", 1)[-1]
    if last in fields:
        return last
    head = dotted.split(".", 1)[0]
    return head if head in fields else None


@login_required
@require_http_methods(["GET", "POST"])
def create(request: HttpRequest) -> HttpResponse:
    form = SearchForm(request.POST or None, user=request.user)
    return drafts.form_page(request, form, TEMPLATE, {"measured": estimates.measured()},
                            lambda: drafts.create_draft(request, form))


def edit(request: HttpRequest, search: Search) -> HttpResponse:
    """An architecture search's draft in the form, prefilled; saved (and launched) when valid, unchanged when
    not. ``pages.search_edit`` has checked that the search is the user's and still a draft."""
    form = SearchForm(request.POST or None, initial=SearchForm.initial_from(search.name, search.config),
                      base=search.config, user=search.owner)
    return drafts.form_page(request, form, TEMPLATE, {"search": search, "measured": estimates.measured()},
                            lambda: drafts.save_draft(request, search, form, saved_to="search-edit"))
