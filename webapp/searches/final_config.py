"""``final``: the final training at the end of an architecture search (any kind whose individuals are trained
architectures: ``architecture`` now, ``oneshot`` next).

```
"final": {"top": 2, "epochs": 20}    # retrain the 2 best genomes from scratch for 20 epochs once the search ends
```
Absent (or ``null``): no final training. ``top`` is at least 1 and at most what the search can produce (its
planned evaluations, when it plans a number); ``epochs`` is at least 1 and at most the training budget's bound.
The other training fields (batch size, learning rate ...) are the search's. No torch here.
"""
from __future__ import annotations

from typing import Any

from evaluators import budget
from webapp.searches.checks import ConfigError, number, section

#: The most final runs a search may ask for, whatever it plans (each is a full training).
MOST_TOP = 20


def check_final(data: Any, most: int | None) -> dict[str, int] | None:
    """``{"top", "epochs"}`` checked, or ``None`` when absent; ``most``: the distinct genomes the search can
    produce (its planned evaluations), ``None`` or 0 when it plans no number."""
    if data is None:
        return None
    data = section("final", data, ["top", "epochs"])
    for name in ("top", "epochs"):
        if name not in data:
            raise ConfigError(f"final.{name}", "a value is required (e.g. {\"top\": 2, \"epochs\": 20})")
    limit = min(most, MOST_TOP) if most else MOST_TOP
    top = number("final.top", data["top"], int, 1, MOST_TOP)
    if top > limit:
        raise ConfigError("final.top", f"must be at most {limit}, the most genomes this search can produce "
                                       f"(got {top})")
    rule = budget.rules()["epochs"]
    return {"top": top, "epochs": number("final.epochs", data["epochs"], int, 1, rule.high)}
