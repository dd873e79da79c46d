"""The framework-free core of the search: spaces, operators, strategies and the packet.

Imports only the standard library and numpy, so a whole search runs in a plain Python loop
with any fitness function (no Django, Celery or torch).
"""
