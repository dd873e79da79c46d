"""The webhook calls in the admin, shown only (they are written by the engine); a user's setting without its
secret."""
from django.contrib import admin

from webapp.notifications.models import Delivery, UserHook


@admin.register(Delivery)
class DeliveryAdmin(admin.ModelAdmin):
    list_display = ("search", "end_seq", "url", "state", "attempts", "last_error", "created", "sent")
    list_filter = ("state",)
    readonly_fields = [f.name for f in Delivery._meta.fields]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(UserHook)
class UserHookAdmin(admin.ModelAdmin):
    list_display = ("user", "webhook", "changed")
    fields = ("user", "webhook", "changed")  # never the secret
    readonly_fields = ("user", "webhook", "changed")

    def has_add_permission(self, request) -> bool:
        return False
