"""The WSGI entry point, for tools that want one; the run command serves ASGI."""
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings.local")
application = get_wsgi_application()
