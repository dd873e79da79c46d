"""The create-search form: one field per choice a user makes, checked field by field (every bad value gets its
own error), then as a whole by the engine's ``check_config`` (its error lands on the field it names)."""
from __future__ import annotations

from typing import Any

from django import forms

from nas.spaces import SPACES
from nas.strategies import STRATEGIES
from webapp.searches.config import (DATASETS, OPTIMIZERS, POOL, TRAINED_FIELDS, TRAINING_FIELDS, ConfigError,
                                    check_config)

#: Defaults that finish a search in about two minutes on a laptop CPU with ``digits``.
DEFAULTS: dict[str, Any] = {
    "name": "digits search", "space": "chain", "strategy": "regularized", "population": 8, "sample_size": 3,
    "generations": 3, "max_evaluations": 24, "p_mutation": 0.58, "p_crossover": 0.5, "elitism": 1,
    "objectives": "accuracy:max, params:min", "seed": 0, "dataset": "digits", "epochs": 3, "batch_size": 64,
    "learning_rate": 0.001, "optimizer": "adam", "pool": "eval", "evaluation": "train", "sim_duration": 1.0,
    "keep_weights": TRAINED_FIELDS["keep_weights"][0],
}
#: The strategy parameters the form offers, with their labels.
STRATEGY_PARAMS = {
    "population": "Population", "sample_size": "Tournament size", "generations": "Generations",
    "max_evaluations": "Evaluation budget", "p_mutation": "Mutation rate", "p_crossover": "Crossover rate",
    "elitism": "Elitism", "objectives": "Objectives",
}


def strategies_with(param: str) -> list[str]:
    return [name for name, cls in STRATEGIES.items() if any(p.name == param for p in cls.PARAMS)]


def _param_field(name: str, label: str) -> forms.Field:
    params = [p for cls in STRATEGIES.values() for p in cls.PARAMS if p.name == name]
    first = params[0]
    attrs = {"data-strategies": " ".join(strategies_with(name))}
    help_text = first.help + " Blank: the strategy's default" + (" (no limit)." if first.optional else ".")
    if name == "objectives":
        return forms.CharField(label=label, required=False, help_text='Pairs "name:max" or "name:min", comma '
                               "separated (metrics: accuracy, params, flops, latency_ms, fitness).",
                               widget=forms.TextInput(attrs=attrs))
    kind = forms.IntegerField if first.type == "int" else forms.FloatField
    return kind(label=label, required=False, min_value=first.low, max_value=first.high, help_text=help_text,
                widget=forms.NumberInput(attrs={**attrs, "step": "any" if first.type == "float" else "1"}))


def _training_field(name: str, label: str) -> forms.Field:
    default, kind, low, high = TRAINING_FIELDS[name]
    field = forms.IntegerField if kind is int else forms.FloatField
    return field(label=label, min_value=low, max_value=high,
                 widget=forms.NumberInput(attrs={"step": "1" if kind is int else "any"}))


def parse_objectives(text: str) -> list[list[str]]:
    pairs = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, _, direction = part.partition(":")
        pairs.append([name.strip(), (direction.strip() or "max").lower()])
    return pairs


class SearchForm(forms.Form):
    name = forms.CharField(max_length=200)
    space = forms.ChoiceField(label="Search space", choices=[(n, n) for n in SPACES])
    strategy = forms.ChoiceField(choices=[(n, n) for n in STRATEGIES])
    seed = forms.IntegerField(min_value=0, help_text="Same seed, same candidates.")
    dataset = forms.ChoiceField(choices=[(n, n) for n in DATASETS])
    epochs = _training_field("epochs", "Epochs")
    batch_size = _training_field("batch_size", "Batch size")
    learning_rate = _training_field("learning_rate", "Learning rate")
    optimizer = forms.ChoiceField(choices=[(n, n) for n in OPTIMIZERS])
    pool = forms.RegexField(label="Worker pool", regex=POOL, max_length=100,
                            help_text="The queue its evaluation workers pull from (eval by default).",
                            error_messages={"invalid": "Letters, digits, '.', '_' or '-' only."})
    evaluation = forms.ChoiceField(choices=[("train", "train (real PyTorch training)"),
                                            ("simulated", "simulated (no training; for trials)")])
    keep_weights = forms.IntegerField(
        label="Keep the trained weights of the best", min_value=TRAINED_FIELDS["keep_weights"][2],
        max_value=TRAINED_FIELDS["keep_weights"][3], required=False,
        help_text="How many of the best individuals keep their trained weights (in the downloads); 0: none. "
                  "Trained evaluations only.", widget=forms.NumberInput(attrs={"step": "1"}))
    sim_duration = forms.FloatField(label="Simulated seconds per evaluation", required=False, min_value=0,
                                    max_value=86400, widget=forms.NumberInput(attrs={"step": "any"}))

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("initial", DEFAULTS)
        super().__init__(*args, **kwargs)
        for name, label in STRATEGY_PARAMS.items():
            self.fields[name] = _param_field(name, label)
        order = ["name", "space", "strategy", *STRATEGY_PARAMS, "seed", "dataset", "epochs", "batch_size",
                 "learning_rate", "optimizer", "pool", "evaluation", "keep_weights", "sim_duration"]
        self.order_fields(order)
        self.config: dict[str, Any] | None = None

    def clean_learning_rate(self) -> float:
        value = self.cleaned_data["learning_rate"]
        if value is not None and value <= 0:
            raise forms.ValidationError("Must be greater than 0.")
        return value

    def clean_objectives(self) -> list[list[str]] | None:
        text = self.cleaned_data.get("objectives") or ""
        pairs = parse_objectives(text)
        for name, direction in pairs:
            if not name or direction not in ("max", "min"):
                raise forms.ValidationError(f'"{name}:{direction}" is not a pair like "accuracy:max".')
        return pairs or None

    def build_config(self) -> dict[str, Any]:
        data = self.cleaned_data
        strategy = data["strategy"]
        accepted = {p.name for p in STRATEGIES[strategy].PARAMS}
        params = {}
        for name in STRATEGY_PARAMS:
            if name in accepted and data.get(name) is not None:
                params[name] = data[name]
        optional = {p.name for p in STRATEGIES[strategy].PARAMS if p.optional}
        for name in optional & accepted:  # a blank optional field means "no limit", not the default
            if data.get(name) is None and name in self.data and name != "objectives":
                params[name] = None
        evaluation = {"mode": "train"}
        if data.get("keep_weights") is not None:  # blank: check_config's default
            evaluation["keep_weights"] = data["keep_weights"]
        if data["evaluation"] == "simulated":
            evaluation = {"mode": "simulated", "duration": data.get("sim_duration") or DEFAULTS["sim_duration"]}
        return {
            "space": {"name": data["space"]},
            "strategy": {"name": strategy, "seed": data["seed"], "params": params},
            "dataset": data["dataset"],
            "training": {"epochs": data["epochs"], "batch_size": data["batch_size"],
                         "learning_rate": data["learning_rate"], "optimizer": data["optimizer"]},
            "evaluation": evaluation,
            "pool": data["pool"],
        }

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        if self.errors:
            return cleaned
        try:
            self.config = check_config(self.build_config())
        except ConfigError as error:
            self.add_error(field_for(error.field, self.fields), str(error).split(": ", 1)[-1])
        return cleaned


def field_for(dotted: str, fields) -> str | None:
    """The form field a ``ConfigError``'s dotted field names (``strategy.params.population`` -> population)."""
    special = {"strategy.name": "strategy", "strategy.seed": "seed", "evaluation.duration": "sim_duration",
               "evaluation.mode": "evaluation", "evaluation.keep_weights": "keep_weights"}
    if dotted in special:
        return special[dotted]
    last = dotted.rsplit(".", 1)[-1]
    if last in fields:
        return last
    head = dotted.split(".", 1)[0]
    return head if head in fields else None
