from django.apps import AppConfig


class DatasetsConfig(AppConfig):
    name = "webapp.datasets"
    verbose_name = "Data sets"
    default_auto_field = "django.db.models.BigAutoField"
