from django.apps import AppConfig


class SearchesConfig(AppConfig):
    name = "webapp.searches"
    verbose_name = "Searches"
    default_auto_field = "django.db.models.BigAutoField"
