"""``python manage.py node list|drain|pause|resume``: operate evaluation nodes from a terminal.

    python manage.py node list               # every node: state (active, draining, drained, paused), slots
    python manage.py node drain gpu-host-2   # finishes what it runs, takes nothing new; shows "drained"
    python manage.py node pause gpu-host-2   # hands its running evaluations back at once
    python manage.py node resume gpu-host-2  # takes work again

A thin layer over ``webapp.services.node_control``, the service the nodes page and the API call; it acts as
``--as USER`` (default: the first superuser). Every error is one line on stderr and a non-zero exit code;
nothing is changed then.
"""
from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from webapp.services import node_control
from webapp.stack.users import acting_user


class Command(BaseCommand):
    help = "List the evaluation nodes, or drain, pause or resume one (see the README, 'Operating workers')."

    def add_arguments(self, parser):
        commands = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
        commands.add_parser("list", help="every node with its state and slots")
        texts = {"drain": "finish what it runs, take nothing new", "pause": "hand its running evaluations back now",
                 "resume": "take work again"}
        for action in node_control.ACTIONS:
            sub = commands.add_parser(action, help=texts[action])
            sub.add_argument("node")
            sub.add_argument("--as", dest="user", help="act as this user (default: the first superuser)")

    def handle(self, *args, **options):
        if options["action"] == "list":
            return self.list()
        try:
            row = node_control.set_state(self.user(options.get("user")), options["node"], options["action"])
        except node_control.NodeError as error:
            raise CommandError(str(error)) from None
        self.stdout.write(f"node {row['node']} is {row['state']} ({row['busy']} of {row['slots']} live slots busy)")

    def list(self) -> None:
        rows = node_control.node_rows()
        if not rows:
            self.stdout.write("no evaluation node has been seen yet (start one: manage.py evalworker --device cpu)")
            return
        self.stdout.write(f"{'node':<24} {'state':<9} {'slots':>5} {'busy':>4}  {'pools':<12} changed by")
        for row in rows:
            self.stdout.write(f"{row['node']:<24} {row['state']:<9} {row['slots']:>5} {row['busy']:>4}  "
                              f"{','.join(row['pools']):<12} {row['changed_by']}")

    def user(self, username: str | None):
        return acting_user(username, "--as")
