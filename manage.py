#!/usr/bin/env python3
"""Django's command-line utility, which first brings up the project's virtual environment.

    python3 manage.py up      # start the whole system locally
    python3 manage.py test    # run the whole test suite
"""
import os
import sys


def _bootstrap():
    """Load webapp/bootstrap.py by path: importing the ``webapp`` package would import Celery too early."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parent / "webapp" / "bootstrap.py"
    spec = importlib.util.spec_from_file_location("nas_bootstrap", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    _bootstrap().ensure_venv(sys.argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings.local")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
