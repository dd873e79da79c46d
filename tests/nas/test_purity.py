"""``nas`` is the framework-free core: importing all of it must load no torch, Django, Celery or Channels."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FORBIDDEN = ("torch", "torchvision", "django", "celery", "channels", "redis", "pytest")

PROBE = """
import importlib, json, pkgutil, sys
import nas
names = ["nas"] + [m.name for m in pkgutil.walk_packages(nas.__path__, "nas.")]
for name in names:
    importlib.import_module(name)
roots = sorted({m.split(".")[0] for m in sys.modules})
print(json.dumps({"modules": names, "roots": roots}))
"""


def test_nas_imports_no_framework():
    out = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, check=True, timeout=120
    ).stdout
    report = json.loads(out.strip().splitlines()[-1])
    for expected in ("nas.spaces", "nas.strategies", "nas.operators.selection", "nas.packet", "nas.testing"):
        assert expected in report["modules"]
    assert not set(FORBIDDEN) & set(report["roots"]), sorted(set(FORBIDDEN) & set(report["roots"]))
