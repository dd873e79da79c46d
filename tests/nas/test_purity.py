"""``nas`` is the framework-free core: importing all of it loads the standard library and numpy, nothing else.

One module uses a library of its own, and only when it runs: ``nas.strategies.tpe`` drives Optuna's
``TPESampler`` (a maintained library, wrapped rather than rewritten: DESIGN.md's "Explorers") and imports it
inside the functions that ask, tell and read its densities, never at import time. So the rule holds for every
import of ``nas`` (the web process and plain scripts build, check and load a tpe strategy without Optuna), and
the static check below keeps that exception to that module, that library, and function bodies.
"""
from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FORBIDDEN = ("torch", "torchvision", "django", "celery", "channels", "redis", "pytest")
#: What ``nas`` may import at all, besides the standard library.
ALLOWED = {"nas", "numpy"}
#: The one exception, by file: libraries imported inside functions only.
LAZY = {"nas/strategies/tpe.py": {"optuna"}}

PROBE = """
import importlib, json, pkgutil, sys
before = {m.split(".")[0] for m in sys.modules}
import nas
names = ["nas"] + [m.name for m in pkgutil.walk_packages(nas.__path__, "nas.")]
for name in names:
    importlib.import_module(name)
roots = sorted({m.split(".")[0] for m in sys.modules} - before)
print(json.dumps({"modules": names, "roots": roots}))
"""


def test_nas_imports_only_the_standard_library_and_numpy():
    out = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, check=True, timeout=120
    ).stdout
    report = json.loads(out.strip().splitlines()[-1])
    for expected in ("nas.spaces", "nas.strategies", "nas.strategies.tpe", "nas.packet", "nas.testing"):
        assert expected in report["modules"]
    assert not set(FORBIDDEN) & set(report["roots"]), sorted(set(FORBIDDEN) & set(report["roots"]))
    others = {root for root in report["roots"] if root not in sys.stdlib_module_names} - ALLOWED
    assert not others, f"importing nas loaded {sorted(others)}"


def _imports(tree: ast.AST) -> list[tuple[str, bool]]:
    """Every absolute import's top-level module, and whether it stands inside a function."""
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            inside.update(id(child) for child in ast.walk(node) if child is not node)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name.split(".")[0], id(node) in inside) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.append((node.module.split(".")[0], id(node) in inside))
    return found


def test_only_tpe_imports_a_library_of_its_own_and_only_inside_functions():
    seen = set()
    for path in sorted((ROOT / "nas").rglob("*.py")):
        name = path.relative_to(ROOT).as_posix()
        for root, lazy in _imports(ast.parse(path.read_text(), name)):
            if root in ALLOWED or root in sys.stdlib_module_names or root == "__future__":
                continue
            assert root in LAZY.get(name, ()) and lazy, f"{name} imports {root}" + (" at import time" * (not lazy))
            seen.add((name, root))
    assert seen == {(name, root) for name, roots in LAZY.items() for root in roots}, "the exception is stale"
