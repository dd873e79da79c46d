"""The ASGI entry point: HTTP through Django, websockets through Channels."""
import os

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings.local")
# Set Django up before anything imports models (Channels' tutorial, part 2), as get_asgi_application() does.
django.setup(set_prefix=False)

from webapp.http_handler import SyncChainHandler  # noqa: E402

# Django's handler, with the middleware chain and the view in one call on a pooled thread (webapp.http_handler).
django_asgi_app = SyncChainHandler()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from django.conf import settings  # noqa: E402

from webapp.dashboard.origins import SameOriginValidator  # noqa: E402
from webapp.routing import websocket_urlpatterns  # noqa: E402
from webapp.static_files import StaticFilesHandler  # noqa: E402

if settings.NAS_SERVE_STATIC:
    # One machine, no reverse proxy: the ASGI server serves /static/ itself, straight from the source folders.
    django_asgi_app = StaticFilesHandler(django_asgi_app)

application = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        # Only pages of this site (same scheme, host and port) may open a socket with the user's cookie.
        "websocket": SameOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
    }
)
