"""A schedule: the stages of a graph in order, each with its strategy and (modelled or measured) cost."""
from __future__ import annotations

import dataclasses
from typing import Any

from nas.schedule.graph import OpGraph

#: The strategies of a stage (seed 002): its operators launched side by side, or merged into one operator.
CONCURRENT, MERGED = "concurrent", "merged"
STRATEGIES = (CONCURRENT, MERGED)


class ScheduleError(ValueError):
    """A schedule that does not run its graph: an operator missing, twice, or before one of its inputs."""


@dataclasses.dataclass(frozen=True)
class Stage:
    """Operators run together: ``concurrent`` (each its own kernel, side by side) or ``merged`` (one kernel)."""

    ops: tuple[str, ...]
    strategy: str = CONCURRENT
    cost: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"ops": list(self.ops), "strategy": self.strategy, "cost": self.cost}


@dataclasses.dataclass(frozen=True)
class Schedule:
    """Stages in execution order; ``cost`` is the sum of the stages' costs (the seed's additive model)."""

    stages: tuple[Stage, ...]

    @property
    def cost(self) -> float:
        return float(sum(stage.cost for stage in self.stages))

    def check(self, graph: OpGraph) -> Schedule:
        """``self`` when it runs ``graph``: every operator exactly once, after each of its inputs' stages, and a
        merged stage only of operators of one merge group; :class:`ScheduleError` saying what is wrong."""
        done: set[str] = set()
        for number, stage in enumerate(self.stages):
            if not stage.ops:
                raise ScheduleError(f"stage {number} is empty")
            if stage.strategy not in STRATEGIES:
                raise ScheduleError(f"stage {number}: strategy {stage.strategy!r} is not one of {STRATEGIES}")
            for name in stage.ops:
                if name not in graph.by_name:
                    raise ScheduleError(f"stage {number}: {name!r} is not an operator of the graph")
                if name in done or stage.ops.count(name) > 1:
                    raise ScheduleError(f"stage {number}: {name!r} is scheduled twice")
                missing = [s for s in graph.by_name[name].inputs if s not in done]
                if missing:
                    raise ScheduleError(f"stage {number}: {name!r} runs before its input {missing[0]!r}")
            if stage.strategy == MERGED:
                groups = {graph.by_name[name].merge_group for name in stage.ops}
                if len(groups) != 1 or "" in groups:
                    raise ScheduleError(f"stage {number} is merged but its operators are not of one merge group")
            done.update(stage.ops)
        left = [op.name for op in graph.ops if op.name not in done]
        if left:
            raise ScheduleError(f"{len(left)} operator(s) never run, e.g. {left[0]!r}")
        return self

    def to_dict(self) -> dict[str, Any]:
        return {"stages": [stage.to_dict() for stage in self.stages], "cost": self.cost}

    @classmethod
    def from_dict(cls, data: Any) -> Schedule:
        """Parse :meth:`to_dict`'s JSON (not checked against a graph: call :meth:`check`)."""
        if not isinstance(data, dict) or not isinstance(data.get("stages"), list):
            raise ScheduleError("a schedule is {'stages': [{'ops': [...], 'strategy': ...}, ...]}")
        stages = []
        for number, item in enumerate(data["stages"]):
            if not isinstance(item, dict) or not isinstance(item.get("ops"), list) or not all(
                    isinstance(name, str) for name in item["ops"]):
                raise ScheduleError(f"stage {number} must be {{'ops': [names], 'strategy': ..., 'cost': ...}}")
            cost = item.get("cost", 0.0)
            if isinstance(cost, bool) or not isinstance(cost, (int, float)):
                raise ScheduleError(f"stage {number}: cost must be a number (got {cost!r})")
            stages.append(Stage(tuple(item["ops"]), str(item.get("strategy", CONCURRENT)), float(cost)))
        return cls(tuple(stages))

    def describe(self) -> str:
        """One line per stage: ``1. concurrent  2.41  a, b``."""
        return "\n".join(f"{n:>3}. {s.strategy:<10} {s.cost:9.4f}  {', '.join(s.ops)}"
                         for n, s in enumerate(self.stages, 1))
