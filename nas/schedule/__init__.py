"""Inter-operator scheduling of a multi-branch network (seed 002, DOS/IOS): which operators run together.

A network is an :class:`OpGraph` (a DAG of operators); a :class:`Schedule` runs it stage by stage, each stage a
set of operators launched together, either concurrently or merged into one wider operator. The scheduler picks
the stages by dynamic programming over the sets of operators not yet scheduled (:func:`optimal_schedule`),
with a pluggable :class:`CostModel` (measured stage latencies, or a model); :func:`sequential_schedule` and
:func:`greedy_schedule` are the baselines and :func:`brute_force_schedule` the check on small graphs.
Standard library only (numpy for the modelled costs).
"""
from nas.schedule.cost import CostModel, FunctionCost, ModelledCost, RandomCost
from nas.schedule.graph import GraphError, Op, OpGraph
from nas.schedule.plan import CONCURRENT, MERGED, Schedule, ScheduleError, Stage
from nas.schedule.search import (
    SearchStats,
    brute_force_schedule,
    greedy_schedule,
    optimal_schedule,
    random_schedule,
    sequential_schedule,
)

__all__ = [
    "CONCURRENT", "MERGED", "CostModel", "FunctionCost", "GraphError", "ModelledCost", "Op", "OpGraph",
    "RandomCost", "Schedule", "ScheduleError", "SearchStats", "Stage", "brute_force_schedule", "greedy_schedule",
    "optimal_schedule", "random_schedule", "sequential_schedule",
]
