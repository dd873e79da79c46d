"""Registered data sets: a user's own images, by name (``models``), registered by path (``webapp.services.datasets``)."""
