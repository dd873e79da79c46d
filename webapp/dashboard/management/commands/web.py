"""``python3 manage.py web``: the web server, several daphne processes on one port (``webapp.dashboard.server``)."""
import os

from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import BaseCommand, CommandError

from webapp.dashboard.server import WebServer, default_workers, listen


class Command(BaseCommand):
    help = ("Serve the dashboard, the API and the websockets with several daphne processes sharing one port "
            "(each one started again if it dies).")
    requires_system_checks = []

    def add_arguments(self, parser):
        parser.add_argument("--host", default=os.environ.get("NAS_HOST") or "127.0.0.1",
                            help="IPv4 address to listen on (default NAS_HOST, else 127.0.0.1; 0.0.0.0 for all)")
        parser.add_argument("--port", type=int, default=int(os.environ.get("NAS_PORT") or 8000),
                            help="port (default NAS_PORT, else 8000)")
        parser.add_argument("--workers", type=int, default=None,
                            help="daphne processes (default NAS_WEB_WORKERS, else one per core up to 4)")
        parser.add_argument("--proxy-headers", action="store_true",
                            help="behind a reverse proxy: take the client's address from X-Forwarded-For")
        parser.add_argument("--no-access-log", action="store_true", help="do not log every request")

    def handle(self, *args, **options):
        try:
            workers = options["workers"] if options["workers"] is not None else default_workers()
        except ImproperlyConfigured as error:
            raise CommandError(str(error)) from None
        if workers < 1:
            raise CommandError(f"--workers must be at least 1 (got {workers}).")
        if ":" in options["host"]:
            raise CommandError(f"--host must be an IPv4 address (daphne adopts IPv4 sockets only): "
                               f"got {options['host']}.")
        try:
            sock = listen(options["host"], options["port"])
        except OSError as error:
            raise CommandError(f"cannot listen on {options['host']}:{options['port']}: {error}") from None
        daphne_args = []
        if options["proxy_headers"]:
            daphne_args.append("--proxy-headers")
        if options["no_access_log"] or options["verbosity"] == 0:
            daphne_args += ["-v", "0"]
        WebServer(sock, workers, daphne_args, "webapp.asgi:application", out=self.stdout).run()
