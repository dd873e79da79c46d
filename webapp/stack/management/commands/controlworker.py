"""``python3 manage.py controlworker``: the Celery worker that runs the search loops (queue ``control``) and sends
the webhooks of ended searches (queue ``notify``, ``webapp.notifications.tasks``)."""
import socket

from django.core.management.base import BaseCommand

from webapp.celery import app
from webapp.stack.privileges import quiet_root_warning


class Command(BaseCommand):
    help = "Run the control worker: consumes the 'control' queue, where each search's loop is one long task."
    requires_system_checks = []

    def add_arguments(self, parser):
        parser.add_argument("--concurrency", type=int, default=4, help="search loops run at once (default 4)")
        parser.add_argument("--node", default=socket.gethostname(), help="node name (default: the host name)")
        parser.add_argument("--loglevel", default="INFO")

    def handle(self, *args, **options):
        from webapp.control.reaper import Reaper

        # Restarts the loop of any search whose control worker died (a thread: see webapp.control.reaper).
        Reaper().start()
        quiet_root_warning()  # started as root by up (webapp.stack.privileges)
        app.worker_main([
            "worker",
            "--queues", "control,notify",
            # this process's tasks only (the others send them by name)
            "--include", "webapp.control.tasks,webapp.notifications.tasks",
            "--hostname", f"control@{options['node']}",
            "--concurrency", str(options["concurrency"]),
            "--loglevel", options["loglevel"],
            # Our heartbeats replace Celery's gossip, mingle and events (a core's worth with many workers).
            "--without-gossip", "--without-mingle", "--without-heartbeat",
        ])
