"""A process that writes a search's event log as hard as it can (run by test_sqlite_concurrency, twice at once).

    python tests/integration/sqlite_writer.py setup          # migrate, one user, one search; prints its id
    python tests/integration/sqlite_writer.py write ID N     # N events through broadcast.notify
"""
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings.local")

import django  # noqa: E402

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402

from webapp.searches import broadcast  # noqa: E402
from webapp.searches.models import Search  # noqa: E402

if sys.argv[1] == "setup":
    call_command("migrate", interactive=False, verbosity=0)
    user = get_user_model().objects.create_user("writer")
    print(Search.objects.create(owner=user, name="hammered", config={}).pk)
else:
    search_id, count = int(sys.argv[2]), int(sys.argv[3])
    for number in range(count):
        broadcast.notify(search_id, "test.write", {"pid": os.getpid(), "n": number})
    print("wrote", count)
