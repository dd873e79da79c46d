"""``python3 manage.py test [pytest args]``: the whole test suite, through pytest (replaces Django's runner)."""
import os
import sys
from pathlib import Path

from django.core.management.base import BaseCommand

ROOT = Path(__file__).resolve().parents[4]


class Command(BaseCommand):
    help = "Run the test suite with pytest; extra arguments go to pytest (e.g. -k launcher, tests/nas)."
    requires_system_checks = []

    def add_arguments(self, parser):
        parser.add_argument("pytest_args", nargs="*", help="passed to pytest as they are")

    def run_from_argv(self, argv):
        # Everything after `test` belongs to pytest, flags included: skip Django's argument parser.
        self.handle(pytest_args=argv[2:])

    def handle(self, *args, **options):
        env = dict(os.environ)
        env["DJANGO_SETTINGS_MODULE"] = "webapp.settings.test"
        # Tests never touch the state of a running `manage.py up` (its database, its Redis files).
        # NAS_TEST_STATE_DIR lets two test runs share a checkout without sharing a test database.
        env["NAS_STATE_DIR"] = os.environ.get("NAS_TEST_STATE_DIR") or str(ROOT / ".state" / "test")
        env.pop("REDIS_URL", None)
        os.chdir(ROOT)
        os.execve(sys.executable, [sys.executable, "-m", "pytest", *options["pytest_args"]], env)
