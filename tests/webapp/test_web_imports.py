"""No module the web process can reach imports torch, not even inside a function.

Serving every page imports no torch (``test_web_process.py`` runs it); this test reads the code instead, so that
a page nobody opened in that run, or a branch of a view that only some searches take, cannot load PyTorch
either. From the web process's entry points (its settings, URL configuration, ASGI application, middleware,
installed apps and the web parts the search-kind registry names), every import statement of the project's
modules is followed, at any depth of the file (inside functions too); none of the modules reached may import
torch or torchvision anywhere."""
from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

from django.conf import settings

from webapp.searches.kinds import kinds

ROOT = Path(__file__).resolve().parents[2]
PROJECT = ("nas", "evaluators", "webapp")
FORBIDDEN = ("torch", "torchvision")


def _path(module: str, root: Path) -> Path | None:
    """The source file of a project module (``None`` for a name that is not one)."""
    parts = module.split(".")
    for candidate in (root.joinpath(*parts).with_suffix(".py"), root.joinpath(*parts, "__init__.py")):
        if candidate.exists():
            return candidate
    return None


def _imports(module: str, path: Path) -> set[str]:
    """Every module ``path`` names in an import statement, wherever it stands in the file."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = importlib.util.resolve_name("." * node.level + (node.module or ""), package) if node.level \
                else node.module or ""
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)  # ``from pkg import module``
    return found


def _parents(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def reachable(roots: list[str], root: Path = ROOT) -> dict[str, set[str]]:
    """Each project module reachable from ``roots`` (their packages' ``__init__`` too) -> what it imports."""
    seen: dict[str, set[str]] = {}
    todo = list(roots)
    while todo:
        module = todo.pop()
        if module in seen or not module.startswith(PROJECT):
            continue
        path = _path(module, root)
        if path is None:
            continue
        seen[module] = _imports(module, path)
        todo.extend(_parents(module))
        todo.extend(name for name in seen[module] if name.split(".")[0] in PROJECT)
    return seen


def web_roots() -> list[str]:
    views = [getattr(kind, part).rpartition(".")[0] for kind in kinds().values() for part in ("page", "form", "log")]
    middleware = [path.rpartition(".")[0] for path in settings.MIDDLEWARE]
    backends = [path.rpartition(".")[0] for path in settings.AUTHENTICATION_BACKENDS]
    apps = [f"{app}.{part}" for app in settings.INSTALLED_APPS for part in ("apps", "models", "admin")]
    return ["webapp.settings.base", "webapp.settings.production", "webapp.stack.web_server", settings.ROOT_URLCONF,
            settings.ASGI_APPLICATION.rpartition(".")[0], *views, *middleware, *backends, *apps]


def test_the_roots_are_real_modules():
    """The walk starts where the web process starts (a renamed module must not empty it silently)."""
    found = reachable(web_roots())
    assert {"webapp.urls", "webapp.asgi", "webapp.stack.web_server", "webapp.dashboard.pages",
            "webapp.dashboard.consumers", "webapp.services.exports", "webapp.searches.config"} <= set(found)


def test_no_module_reachable_from_the_web_process_imports_torch_anywhere():
    found = reachable(web_roots())
    offenders = {module: sorted(name for name in imports if name.split(".")[0] in FORBIDDEN)
                 for module, imports in found.items()}
    assert not {module: names for module, names in offenders.items() if names}


def test_the_walk_sees_an_import_inside_a_function(tmp_path):
    """The check itself: a function-level ``import torch`` two imports away is found."""
    (tmp_path / "webapp").mkdir()
    (tmp_path / "webapp" / "__init__.py").write_text("")
    (tmp_path / "webapp" / "a.py").write_text("from webapp import b\n")
    (tmp_path / "webapp" / "b.py").write_text("def f():\n    from .c import g\n    import torch.nn\n")
    (tmp_path / "webapp" / "c.py").write_text("def g():\n    from torchvision import io\n")
    found = reachable(["webapp.a"], tmp_path)
    assert "torch.nn" in found["webapp.b"] and "torchvision" in found["webapp.c"]
