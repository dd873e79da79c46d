"""``python3 manage.py web``: the web server, several uvicorn processes on one port (``webapp.stack.web_server``)."""
import os

from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import BaseCommand, CommandError

from webapp.stack.web_server import check_port, default_workers, serve


class Command(BaseCommand):
    help = ("Serve the dashboard, the API and the websockets with several uvicorn processes on one port (one that "
            "dies is started again).")
    requires_system_checks = []

    def add_arguments(self, parser):
        parser.add_argument("--host", default=os.environ.get("NAS_HOST") or "127.0.0.1",
                            help="address to listen on (default NAS_HOST, else 127.0.0.1; 0.0.0.0 or :: for all)")
        parser.add_argument("--port", type=int, default=int(os.environ.get("NAS_PORT") or 8000),
                            help="port (default NAS_PORT, else 8000)")
        parser.add_argument("--workers", type=int, default=None,
                            help="processes (default NAS_WEB_WORKERS, else one per core up to 4)")
        parser.add_argument("--proxy-headers", action="store_true",
                            help="behind a reverse proxy: take the client's address and scheme from X-Forwarded-For "
                                 "and X-Forwarded-Proto (sent by the addresses in FORWARDED_ALLOW_IPS, else any)")
        parser.add_argument("--no-access-log", action="store_true", help="do not log every request")

    def handle(self, *args, **options):
        try:
            workers = options["workers"] if options["workers"] is not None else default_workers()
        except ImproperlyConfigured as error:
            raise CommandError(str(error)) from None
        if workers < 1:
            raise CommandError(f"--workers must be at least 1 (got {workers}).")
        host, port = options["host"], options["port"]
        try:
            check_port(host, port)
        except OSError as error:
            raise CommandError(f"cannot listen on {host}:{port}: {error}") from None
        serve(host, port, workers, proxy_headers=options["proxy_headers"],
              access_log=not (options["no_access_log"] or options["verbosity"] == 0))
