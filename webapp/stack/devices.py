"""Which devices this machine can evaluate on: every CUDA device, else the CPU."""
from __future__ import annotations

import os
import subprocess
import sys


def detect_devices() -> list[str]:
    """``NAS_DEVICES`` (comma-separated, e.g. ``cuda:0,cuda:1``) when set, else every CUDA device, else ``cpu``."""
    forced = os.environ.get("NAS_DEVICES", "").strip()
    if forced:
        return [device.strip() for device in forced.split(",") if device.strip()]
    try:
        import torch  # a few seconds: only the launcher and the workers pay it
    except ImportError:
        return ["cpu"]
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    return [f"cuda:{index}" for index in range(count)] or ["cpu"]


def cuda_device_count() -> int:
    """How many CUDA devices torch sees, asked in a subprocess: initialising CUDA in a worker's main process
    would break the CUDA of every pool process forked from it."""
    probe = "import torch; print(torch.cuda.device_count() if torch.cuda.is_available() else 0)"
    try:
        done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
        return int(done.stdout.strip().splitlines()[-1])
    except (subprocess.SubprocessError, ValueError, IndexError):
        return 0


def device_error(device: str) -> str | None:
    """Why ``device`` cannot evaluate here (``None`` when it can): ``cpu`` always can, ``cuda:N`` if it exists."""
    if device == "cpu":
        return None
    index = int(device.split(":")[1])
    count = cuda_device_count()
    if index < count:
        return None
    if not count:
        return f"--device {device}: no CUDA device is visible to PyTorch here; use --device cpu"
    return f"--device {device} does not exist here ({count} CUDA device(s)); use cpu or cuda:0..cuda:{count - 1}"
