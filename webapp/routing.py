"""Websocket routes (the live dashboard adds its consumers here)."""
websocket_urlpatterns: list = []
