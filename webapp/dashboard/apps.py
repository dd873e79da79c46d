from django.apps import AppConfig


class DashboardConfig(AppConfig):
    name = "webapp.dashboard"
    verbose_name = "Dashboard"
