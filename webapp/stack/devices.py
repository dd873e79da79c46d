"""Which devices this machine can evaluate on: every CUDA device, else the CPU."""
from __future__ import annotations

import os


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
