"""``python3 manage.py up``: start the whole system locally (see webapp/stack/launcher.py)."""
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from webapp.settings.env import env_int, env_str
from webapp.stack.launcher import LaunchError, LaunchOptions, Launcher
from webapp.stack.redis_server import RedisUnavailable


class Command(BaseCommand):
    help = (
        "Start Redis (REDIS_URL if set, else an embedded server), migrate, create the first user, then the web "
        "server, the control worker and one evaluation worker per device. A process that dies is restarted; "
        "Ctrl-C stops everything."
    )
    requires_system_checks = []

    def add_arguments(self, parser):
        parser.add_argument("--host", default=env_str("NAS_HOST", "127.0.0.1"),
                            help="address the web server binds to (default 127.0.0.1; 0.0.0.0 exposes it)")
        parser.add_argument("--port", type=int, default=int(env_str("NAS_PORT", "8000")),
                            help="web port (default 8000; the next free one is used if busy)")
        parser.add_argument("--devices", default=env_str("NAS_DEVICES", ""),
                            help="comma-separated devices, e.g. cuda:0,cuda:1 (default: every CUDA device, else cpu)")
        parser.add_argument("--slots", type=int, default=int(env_str("NAS_SLOTS", "1")),
                            help="evaluation slots per device (default 1)")
        parser.add_argument("--redis-port", type=int, default=env_int("NAS_REDIS_PORT", 0) or None,
                            help="port of the embedded Redis (default: the one it had last time with this state "
                                 "folder, else a free one)")
        parser.add_argument("--user", default=env_str("NAS_ADMIN_USER", "admin"),
                            help="name of the user created on the first run (default admin)")

    def handle(self, *args, **options):
        if options["slots"] < 1:
            raise CommandError(f"--slots must be at least 1 (got {options['slots']})")
        if options["redis_port"] is not None and not 0 < options["redis_port"] < 65536:
            raise CommandError(f"--redis-port (or NAS_REDIS_PORT) must be a port, 1-65535 (got {options['redis_port']})")
        launch = LaunchOptions(
            state_dir=Path(settings.STATE_DIR),
            host=options["host"],
            port=options["port"],
            redis_url=env_str("REDIS_URL", ""),
            redis_port=options["redis_port"],
            devices=tuple(d.strip() for d in options["devices"].split(",") if d.strip()),
            slots=options["slots"],
            username=options["user"],
        )
        try:
            code = Launcher(launch, out=self.stdout._out).run()
        except (LaunchError, RedisUnavailable) as exc:
            raise CommandError(str(exc)) from None
        except KeyboardInterrupt:
            code = 130
        if code:
            raise SystemExit(code)
