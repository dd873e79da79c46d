from django.apps import AppConfig


class SearchesConfig(AppConfig):
    name = "webapp.searches"
    verbose_name = "Searches"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from webapp.searches import redis_cleanup

        redis_cleanup.connect()  # a deleted search's Redis keys go with it
