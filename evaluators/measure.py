"""Measurements around an evaluation: the device, inference latency, peak memory. Per process and per device
only: several evaluation slots may share one GPU, each in its own process, so nothing here is global."""
from __future__ import annotations

import statistics
import time

import torch
from torch import nn

from evaluators.training import autocast, prepare_input, synchronize


def resolve_device(device: str) -> torch.device:
    """``torch.device(device)``, checked to exist here; ``ValueError`` with the reason otherwise."""
    resolved = torch.device(device)
    if resolved.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(f"device {device!r} was asked for, but CUDA is not available in this process")
        index = resolved.index if resolved.index is not None else torch.cuda.current_device()
        if index >= torch.cuda.device_count():
            raise ValueError(f"device {device!r} does not exist ({torch.cuda.device_count()} CUDA devices)")
        return torch.device("cuda", index)
    if resolved.type != "cpu":
        raise ValueError(f"device {device!r} is not supported (cpu, cuda, cuda:N)")
    return resolved


def start_memory(device: torch.device) -> None:
    """Start counting this process's peak memory on ``device`` (CUDA only)."""
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)


def peak_memory(device: torch.device) -> int | None:
    """This process's peak allocated bytes on ``device`` since :func:`start_memory` (``None`` on the CPU, where
    a per-evaluation peak is not measurable)."""
    if device.type == "cuda":
        return int(torch.cuda.max_memory_allocated(device))
    return None


def free_memory(device: torch.device) -> None:
    """Hand cached blocks back after a failure, so the next evaluation in this process starts clean."""
    if device.type == "cuda" and torch.cuda.is_available():
        torch.cuda.synchronize(device)
        torch.cuda.empty_cache()


@torch.no_grad()
def latency_ms(model: nn.Module, shape: tuple[int, ...], device: torch.device, precision: str,
               repeats: int = 10, warmup: int = 3) -> float:
    """Median wall time of one inference on one image, in milliseconds (eval mode, the search's precision)."""
    model.eval()
    x = prepare_input(torch.zeros((1, *shape), device=device), precision)
    times = []
    for i in range(warmup + repeats):
        synchronize(device)
        started = time.perf_counter()
        with autocast(device, precision):
            model(x)
        synchronize(device)
        if i >= warmup:
            times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)
