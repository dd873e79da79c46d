"""What one evaluation gives back: :class:`EvaluationResult`.

It is built in exactly three places: the trainer (``evaluators.evaluate``), the simulated evaluator
(``evaluators.simulated``) and the evaluation worker's own failure paths (a genome that killed its worker too
often, an evaluator that raised). It crosses Redis as JSON inside the worker's ``result`` message and is parsed
once, by the control loop's recording (:meth:`EvaluationResult.from_dict`). No torch here: the control loop reads
it without loading PyTorch.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any, ClassVar

#: ``status`` values: a finished evaluation, one a pruner stopped early (a partial curve; its fitness is the
#: last value observed), or one that failed with a reason.
OK, FAILED, PRUNED = "ok", "failed", "pruned"
STATUSES = (OK, FAILED, PRUNED)
#: The failure reasons the engine itself gives (evaluators may give others: they are kept as they are).
FAILURES = {
    "oom": "out of memory on the evaluating device",
    "diverged": "the loss became NaN or infinite",
    "timeout": "the training budget's max_seconds ran out",
    "invalid": "the genome, budget, dataset or device cannot be evaluated as given",
    "error": "the evaluator raised an unexpected error (the message has it)",
    "worker_lost": "the worker died during every attempt",
    "malformed": "the worker sent a result the loop could not read",
    "data_unreadable": "the worker can neither read the registered data set's path nor fetch it from the server",
}


#: Metrics on a held-out test set (``held_out_accuracy``, ``held_out_images``): recorded and reported, never an
#: objective, so no strategy ranks by them.
HELD_OUT = "held_out_"


class MalformedResult(ValueError):
    """A result whose JSON is not an :class:`EvaluationResult` (the loop fails the individual with it)."""


def _finite_or_none(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


@dataclasses.dataclass(frozen=True)
class EvaluationResult:
    """One evaluation's outcome: a fitness (higher is better) with its metrics, or a failure with its reason.

    Attributes:
        status: ``ok``, ``pruned`` (stopped early on the loop's request: partial curve, fitness observed at the
            stop, weights as they were) or ``failed``.
        fitness: the value the strategy ranks by (validation accuracy when trained); ``None`` when failed.
        failure: the reason when failed (see :data:`FAILURES`).
        message: the failure in words (a traceback's last lines for ``error``).
        metrics: named values: ``accuracy``, ``params``, ``flops``, ``latency_ms``, ``epochs``, ... Numbers are
            objectives a multi-objective strategy may use; strings (such as ``weights_error``) are notes.
        curve: one point per epoch: ``epoch``, ``train_loss``, ``val_loss``, ``val_accuracy``.
        timings: seconds per phase (``data``, ``build``, ``train``, ``validate``, ``total``, ...); a gang's ``train``
            splits into ``communicate`` (its gradient exchange) and ``compute``, and its metrics hold
            ``bytes_sent`` and ``bytes_dense`` (all ranks, whole evaluation), ``kept``, ``balance``, ``compression``
            and ``ranks`` (``evaluators.ranks.Gang.traffic``).
        device: where it ran (``cpu``, ``cuda:0``, ``simulated``).
        peak_memory_bytes: the device's peak allocation during the evaluation, when measured.
        normalization: per-channel ``mean`` and ``std`` that turn the dataset's raw images (as its usual loader
            gives them) into what the network was trained on; exported models apply them themselves.
        artifacts: files the worker left in Redis beside this result, name -> bytes (``weights.pt``,
            ``model.py``, ``model.onnx``); the loop keeps those of the best individuals.
    """

    status: str
    fitness: float | None = None
    failure: str | None = None
    message: str = ""
    metrics: dict[str, Any] = dataclasses.field(default_factory=dict)
    curve: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    timings: dict[str, float] = dataclasses.field(default_factory=dict)
    device: str = ""
    peak_memory_bytes: int | None = None
    normalization: dict[str, list[float]] | None = None
    artifacts: dict[str, int] = dataclasses.field(default_factory=dict)

    VERSION: ClassVar[int] = 1

    @property
    def ok(self) -> bool:
        return self.status == OK and self.fitness is not None and math.isfinite(self.fitness)

    @property
    def pruned(self) -> bool:
        """Stopped early by the loop's pruner, with a fitness observed before the stop."""
        return self.status == PRUNED and self.fitness is not None and math.isfinite(self.fitness)

    @classmethod
    def failed(cls, reason: str, message: str, **fields: Any) -> EvaluationResult:
        """A failure with ``reason`` (see :data:`FAILURES`) and its explanation."""
        return cls(status=FAILED, fitness=None, failure=reason, message=message, **fields)

    def with_fields(self, **changes: Any) -> EvaluationResult:
        return dataclasses.replace(self, **changes)

    def objectives(self) -> dict[str, float]:
        """The finite numeric metrics: what a multi-objective strategy may rank by."""
        return {name: float(value) for name, value in self.metrics.items()
                if _finite_or_none(value) is not None and not name.startswith(HELD_OUT)}

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (strict JSON: non-finite floats become ``None``), with the format's ``version``."""
        data = dataclasses.asdict(self)
        data["fitness"] = _finite_or_none(self.fitness)
        data["metrics"] = {k: (_finite_or_none(v) if isinstance(v, float) else v) for k, v in self.metrics.items()}
        data["version"] = self.VERSION
        return data

    @classmethod
    def from_dict(cls, data: Any) -> EvaluationResult:
        """Parse and check what :meth:`to_dict` wrote; :class:`MalformedResult` says what is wrong otherwise."""
        if not isinstance(data, dict):
            raise MalformedResult(f"a result must be a JSON object (got {type(data).__name__})")
        version = data.get("version", cls.VERSION)  # results of workers older than the field are version 1
        if version != cls.VERSION:
            raise MalformedResult(f"result version {version!r} is not {cls.VERSION}: is the worker up to date?")
        names = {field.name for field in dataclasses.fields(cls)}
        unknown = sorted(set(data) - names - {"version"})
        if unknown:
            raise MalformedResult(f"unknown result field(s) {', '.join(unknown)}")
        status = data.get("status")
        if status not in STATUSES:
            raise MalformedResult(f"status must be one of {', '.join(STATUSES)} (got {status!r})")
        checks = {"metrics": dict, "curve": list, "timings": dict, "artifacts": dict, "message": str, "device": str}
        for name, kind in checks.items():
            if name in data and not isinstance(data[name], kind):
                raise MalformedResult(f"`{name}` must be a JSON {kind.__name__} (got {type(data[name]).__name__})")
        fitness = data.get("fitness")
        if fitness is not None and _finite_or_none(fitness) is None:
            raise MalformedResult(f"fitness must be a finite number or null (got {fitness!r})")
        if status in (OK, PRUNED) and fitness is None:
            raise MalformedResult("an ok result needs a fitness" if status == OK else "a pruned result needs a fitness")
        normalization = data.get("normalization")
        if normalization is not None and not _is_normalization(normalization):
            raise MalformedResult(f"normalization must be {{'mean': [...], 'std': [...]}} (got {normalization!r})")
        fields = {name: data[name] for name in names if name in data}
        if status == FAILED:
            fields["fitness"] = None
            fields["failure"] = str(data.get("failure") or "error")[:32]
        return cls(**fields)


def _is_normalization(value: Any) -> bool:
    if not isinstance(value, dict) or set(value) != {"mean", "std"}:
        return False
    mean, std = value["mean"], value["std"]
    return (isinstance(mean, list) and isinstance(std, list) and len(mean) == len(std) > 0
            and all(_finite_or_none(v) is not None for v in mean)
            and all(_finite_or_none(v) is not None and v > 0 for v in std))
