"""Run by ``test_reaper_fork.py`` in a process of its own: a control worker's reaper thread runs while the
process forks, as Celery forks its pool; the forked process must then see what others write (exit 0), not a
database frozen at the fork (exit 3)."""
import os
import sqlite3
import time

import django

django.setup()

from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connections  # noqa: E402

from webapp.control.reaper import Reaper  # noqa: E402

MARK = "written after the fork"


def wait_rounds(reaper: Reaper, count: int) -> None:
    target = reaper.rounds + count
    while reaper.rounds < target:
        time.sleep(0.005)


call_command("migrate", verbosity=0)
connections.close_all()  # as Celery's Django fixup does before it forks the pool
database = str(settings.DATABASES["default"]["NAME"])
reaper = Reaper(interval=0.01)
reaper.start()
wait_rounds(reaper, 3)
ready, go = os.pipe()
pid = os.fork()  # a pool process
if pid == 0:
    os.read(ready, 1)
    seen = sqlite3.connect(database).execute("select count(*) from auth_group where name = ?", (MARK,)).fetchone()[0]
    os._exit(0 if seen == 1 else 3)
wait_rounds(reaper, 3)  # each round closes (and reopens) the parent's connection meanwhile
writer = sqlite3.connect(database, isolation_level=None)  # another process's connection, kept open
writer.execute("insert into auth_group (name) values (?)", (MARK,))
os.write(go, b"x")
_, status = os.waitpid(pid, 0)
raise SystemExit(os.waitstatus_to_exitcode(status))
