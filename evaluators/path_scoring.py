"""Scoring paths with a supernet's weights: batch-norm statistics recomputed per path on a few training batches
(Single Path One-Shot's recalibration: the running statistics a supernet gathered mix every path's activations),
then validation accuracy. Many paths per call; the supernet is loaded once per weights digest per process, as
weight searches hold their weights once per digest.
"""
from __future__ import annotations

import collections
import contextlib
import hashlib
import io
import os
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, BinaryIO

import torch

from evaluators.budget import TrainingBudget
from evaluators.builders import as_space
from evaluators.datasets import DatasetSplit, load_dataset
from evaluators.measure import resolve_device
from evaluators.supernet import PathSampling, SuperNet, batch_norms
from evaluators.training import validate
from nas.spaces import canonical_json, space_to_config

#: Training images whose activations give each path its batch-norm statistics (SPOS used 20 batches).
CALIBRATION_IMAGES = 512
CALIBRATION_BATCH = 128
#: Supernets kept per process (by digest, space, dataset and device).
CACHED = 2
_cache: collections.OrderedDict[tuple, SuperNet] = collections.OrderedDict()


def weights_digest(state: dict[str, torch.Tensor]) -> str:
    """A digest of a supernet's weights: their names, shapes, types and bytes, in name order (the same for the
    same weights however they were saved)."""
    sha = hashlib.sha256()
    for name in sorted(state):
        tensor = state[name].detach().cpu().contiguous()
        sha.update(f"{name}:{tuple(tensor.shape)}:{tensor.dtype};".encode())
        sha.update(tensor.numpy().tobytes() if tensor.dtype != torch.bfloat16 else tensor.float().numpy().tobytes())
    return sha.hexdigest()[:16]


def save_supernet(supernet: SuperNet, to: str | os.PathLike | BinaryIO) -> str:
    """Write ``supernet``'s weights (with its space and dataset) to a file; returns their digest."""
    state = {name: value.detach().cpu() for name, value in supernet.state_dict().items()}
    digest = weights_digest(state)
    payload = {"format": 1, "space": space_to_config(supernet.space), "dataset": supernet.dataset,
               "digest": digest, "state": state}
    if isinstance(to, (str, os.PathLike)):
        temporary = Path(f"{to}.tmp")
        torch.save(payload, temporary)
        os.replace(temporary, to)  # a reader never sees half a file
    else:
        torch.save(payload, to)
    return digest


def _read(weights: str | os.PathLike | bytes | dict[str, Any]) -> dict[str, torch.Tensor]:
    if isinstance(weights, dict):
        return weights["state"] if "format" in weights else weights  # a saved payload, or a bare state dict
    source = io.BytesIO(weights) if isinstance(weights, bytes) else weights
    return torch.load(source, map_location="cpu", weights_only=True)["state"]


def load_supernet(space: Any, dataset: str, weights: str | os.PathLike | bytes | dict[str, Any] | None = None,
                  digest: str | None = None, device: str = "cpu") -> tuple[SuperNet, str]:
    """The supernet of ``space`` for ``dataset`` with ``weights`` (a file written by :func:`save_supernet`, its
    bytes, or a state dict), on ``device``, and its digest. Cached per process: with a ``digest`` already loaded
    the weights are not read at all (may be ``None``); otherwise they are read and must have that digest
    (``ValueError`` if not: the weights changed since the digest was taken)."""
    space = as_space(space)
    resolved = str(resolve_device(device))
    key = (digest, canonical_json(space_to_config(space)), dataset, resolved)
    if digest is not None and key in _cache:
        _cache.move_to_end(key)
        return _cache[key], digest
    if weights is None:
        raise ValueError(f"the supernet weights of digest {digest} are not loaded in this process, and none were given")
    state = _read(weights)
    found = weights_digest(state)
    if digest is not None and found != digest:
        raise ValueError(f"the supernet weights given have digest {found}, not the expected {digest}: they changed "
                         f"since the digest was taken")
    supernet = SuperNet(space, dataset)
    supernet.load_state_dict(state)
    supernet.to(resolved).eval()
    _cache[(found, *key[1:])] = supernet
    while len(_cache) > CACHED:
        _cache.popitem(last=False)
    return supernet, found


def calibration_batches(data: DatasetSplit, images: int = CALIBRATION_IMAGES, batch: int = CALIBRATION_BATCH,
                        seed: int = 0) -> list[torch.Tensor]:
    """The training images every path's batch-norm statistics are computed on: the same for every path (drawn
    from ``seed``), in batches of ``batch``."""
    count = min(images, len(data.train_x))
    order = torch.randperm(len(data.train_x), generator=torch.Generator().manual_seed(seed))[:count]
    chosen = data.train_x.index_select(0, order.to(data.train_x.device))
    return list(chosen.split(batch))


@contextlib.contextmanager
def kept_statistics(model: torch.nn.Module) -> Iterator[None]:
    """Restores ``model``'s batch-norm statistics and momenta on exit (probes during training recalibrate)."""
    norms = batch_norms(model)
    saved = [(bn.momentum, {k: v.clone() for k, v in bn.named_buffers()}) for bn in norms]
    try:
        yield
    finally:
        for bn, (momentum, buffers) in zip(norms, saved):
            bn.momentum = momentum
            for name, value in buffers.items():
                getattr(bn, name).copy_(value)


@torch.no_grad()
def recalibrate(supernet: SuperNet, path: dict[str, Any], batches: Sequence[torch.Tensor]) -> None:
    """Recompute the batch-norm statistics ``path`` sees, from ``batches`` (an exact average over them)."""
    for bn in batch_norms(supernet):
        bn.reset_running_stats()
        bn.momentum = None  # a cumulative average over the batches, not an exponential one
    supernet.train()
    for inputs in batches:
        supernet(inputs, path)
    supernet.eval()


def score_on_supernet(supernet: SuperNet, paths: Sequence[dict[str, Any]], data: DatasetSplit,
                      batches: Sequence[torch.Tensor], precision: str = "fp32") -> list[dict[str, Any]]:
    """Each path's validation accuracy and loss on ``supernet`` after :func:`recalibrate` on ``batches``, with
    its timings (``calibrate``, ``validate``, and ``overhead``: the rest of the path's time, checking the path
    and restoring state); a path not in the space is ``{"status": "invalid", "reason": ...}``. The supernet's
    own statistics are left as they were."""
    budget = TrainingBudget(batch_size=256, precision=precision)
    bound = PathSampling(supernet, seed=0)
    results = []
    with kept_statistics(supernet):
        for path in paths:
            started = time.perf_counter()
            try:
                supernet.space.validate(path)
            except (ValueError, TypeError, KeyError) as error:
                results.append({"status": "invalid", "reason": str(error), "accuracy": None})
                continue
            mark = time.perf_counter()
            recalibrate(supernet, path, batches)
            calibrated = time.perf_counter()
            bound.eval_path = path
            loss, accuracy = validate(bound, data.val_x, data.val_y, budget)
            done = time.perf_counter()
            results.append({"status": "ok", "key": supernet.space.key(path), "accuracy": accuracy, "val_loss": loss,
                            "timings": {"calibrate": calibrated - mark, "validate": done - calibrated,
                                        "overhead": (mark - started)}})
    return results


def score_paths(paths: Sequence[dict[str, Any]], space: Any, dataset: str, *,
                weights: str | os.PathLike | bytes | dict[str, Any] | None = None, digest: str | None = None,
                device: str = "cpu", calibration_images: int = CALIBRATION_IMAGES, seed: int = 0,
                precision: str = "fp32") -> dict[str, Any]:
    """Score ``paths`` (genomes of ``space``) with the supernet of ``digest`` (loaded from ``weights`` unless this
    process holds it already): one result per path, in order (:func:`score_on_supernet`), the digest, and the
    call's timings (``load``: data and weights, nothing when cached; ``score``: every path; ``total``).
    ``seed`` fixes the validation split (as a training's seed does) and the calibration images."""
    started = time.perf_counter()
    supernet, found = load_supernet(space, dataset, weights, digest, device)
    data = load_dataset(dataset, str(resolve_device(device)), seed)
    batches = calibration_batches(data, calibration_images, seed=seed)
    loaded = time.perf_counter()
    results = score_on_supernet(supernet, paths, data, batches, precision)
    done = time.perf_counter()
    return {"digest": found, "results": results,
            "timings": {"load": loaded - started, "score": done - loaded, "total": done - started}}
