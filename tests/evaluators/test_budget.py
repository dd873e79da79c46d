from __future__ import annotations

import dataclasses

import pytest

from evaluators.budget import TrainingBudget
from evaluators.training import TrainingBudget as Reexported
from webapp.searches.architecture_config import check_training


def test_defaults_match_the_search_configuration():
    assert TrainingBudget.from_dict(check_training({})) == TrainingBudget()
    assert Reexported is TrainingBudget


def test_round_trip_and_frozen():
    budget = TrainingBudget.from_dict({"epochs": 2.0, "learning_rate": 1, "max_seconds": 30, "optimizer": "sgd",
                                       "precision": "bf16", "seed": 7})
    assert budget.epochs == 2 and isinstance(budget.learning_rate, float) and budget.max_seconds == 30.0
    assert TrainingBudget.from_dict(budget.to_dict()) == budget
    with pytest.raises(dataclasses.FrozenInstanceError):
        budget.epochs = 3  # type: ignore[misc]


@pytest.mark.parametrize("data, match", [
    ({"epochs": 0}, "`epochs` must be an integer >= 1"),
    ({"batch_size": 1.5}, "`batch_size`"),
    ({"learning_rate": float("nan")}, "`learning_rate` must be a finite number"),
    ({"optimizer": "lion"}, "`optimizer` must be one of adam, adamw, sgd"),
    ({"precision": "fp16"}, "`precision` must be one of fp32, bf16"),
    ({"momentum": 0.9}, "Unknown training field.*'momentum'"),
])
def test_bad_budgets_name_the_field(data, match):
    with pytest.raises(ValueError, match=match):
        TrainingBudget.from_dict(data)
