"""The Django project: settings, the Celery app, the web pages and the local stack launcher."""
# Celery's Django example: load the app when Django starts, so @shared_task binds to it.
from webapp.celery import app as celery_app

__all__ = ("celery_app",)
