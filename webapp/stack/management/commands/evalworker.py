"""``python3 manage.py evalworker --device cuda:0 --slots K``: one evaluation worker pinned to one device."""
import os
import re
import socket

from django.core.management.base import BaseCommand, CommandError

from webapp.celery import app
from webapp.stack.devices import device_error

DEVICE = re.compile(r"^(cpu|cuda:\d+)$")


class Command(BaseCommand):
    help = (
        "Run one evaluation worker pinned to one device. It pulls from the pool queue (default 'eval') and from "
        "its own queue eval.<node>.<device>, one task per free slot."
    )
    requires_system_checks = []

    def add_arguments(self, parser):
        parser.add_argument("--device", default="cpu", help="cpu or cuda:N (default cpu)")
        parser.add_argument("--slots", type=int, default=1, help="evaluations run at once on the device (default 1)")
        parser.add_argument("--pool", default="eval", help="the shared queue to pull from (default eval)")
        parser.add_argument("--node", default=socket.gethostname(), help="node name (default: the host name)")
        parser.add_argument("--loglevel", default="INFO")

    def handle(self, *args, **options):
        device = options["device"]
        if not DEVICE.match(device):
            raise CommandError(f"--device must be cpu or cuda:N (got {device!r})")
        if options["slots"] < 1:
            raise CommandError(f"--slots must be at least 1 (got {options['slots']})")
        problem = device_error(device)
        if problem:
            raise CommandError(problem)
        node, short = options["node"], device.replace(":", "")
        # Inherited by the pool's processes: each one is a slot announcing itself (webapp.searches.slots).
        os.environ.update(NAS_DEVICE=device, NAS_NODE=node, NAS_POOL=options["pool"], NAS_SLOTS=str(options["slots"]))
        app.worker_main([
            "worker",
            "--queues", f"{options['pool']},eval.{node}.{short}",
            "--hostname", f"eval-{short}@{node}",
            "--concurrency", str(options["slots"]),
            "--prefetch-multiplier", "1",
            "--loglevel", options["loglevel"],
            "--without-gossip", "--without-mingle", "--without-heartbeat",
        ])
