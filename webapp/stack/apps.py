from django.apps import AppConfig


class StackConfig(AppConfig):
    name = "webapp.stack"
    verbose_name = "Local stack"
