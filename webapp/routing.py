"""Websocket routes."""
from django.urls import path

from webapp.dashboard.consumers import SearchConsumer

websocket_urlpatterns: list = [
    path("ws/searches/<int:search_id>/", SearchConsumer.as_asgi()),
]
