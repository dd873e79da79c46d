"""``evaluators`` never imports Django; its budget, catalog, builders, summary and export modules import no torch
either (the web server uses them)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import importlib, json, pkgutil, sys
light = {light!r}
for name in light:
    importlib.import_module(name)
light_roots = sorted({{m.split(".")[0] for m in sys.modules}})
import evaluators
for info in pkgutil.iter_modules(evaluators.__path__, "evaluators."):
    importlib.import_module(info.name)
print(json.dumps({{"light": light_roots, "all": sorted({{m.split(".")[0] for m in sys.modules}})}}))
"""
LIGHT = ["evaluators.budget", "evaluators.catalog", "evaluators.weights_network", "evaluators.builders", "evaluators.summary", "evaluators.model_source", "evaluators.model_files",
         "evaluators.compression"]


def test_imports():
    out = subprocess.run([sys.executable, "-c", PROBE.format(light=LIGHT)], cwd=ROOT, capture_output=True,
                         text=True, check=True, timeout=120).stdout
    report = json.loads(out.strip().splitlines()[-1])
    assert "torch" not in report["light"] and "django" not in report["light"]
    code = "from evaluators.model_source import describe, standalone_source; import sys; " \
           "standalone_source({'layers': [{'kernel': 3, 'filters': 16}]}, {'name': 'chain'}, 'digits'); " \
           "print('torch' in sys.modules)"
    used = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True, timeout=120)
    assert used.stdout.strip() == "False"
    assert "torch" in report["all"]
    assert not {"django", "celery", "channels", "webapp"} & set(report["all"])
