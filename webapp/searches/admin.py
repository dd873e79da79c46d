"""Django admin for every model of the engine: read mostly (the engine writes individuals and events)."""
from django.contrib import admin

from webapp.searches.models import (ArchiveRow, Attempt, Event, Individual, NodeControl, Search, WeightGeneration,
                                     Weights, WeightState, Worker)


@admin.register(Search)
class SearchAdmin(admin.ModelAdmin):
    list_display = ("id", "name", "owner", "status", "evaluations_done", "evaluations_total", "best_fitness",
                    "created", "started", "finished")
    list_filter = ("status",)
    search_fields = ("name", "owner__username")
    readonly_fields = ("event_seq", "lease_owner", "lease_expires", "stats", "best", "strategy_state")
    raw_id_fields = ("owner", "cloned_from")


@admin.register(Individual)
class IndividualAdmin(admin.ModelAdmin):
    list_display = ("id", "search", "number", "status", "role", "fitness", "operator", "node", "device", "duration")
    list_filter = ("status", "role", "operator", "node")
    search_fields = ("key", "description")
    raw_id_fields = ("search",)


@admin.register(Event)
class EventAdmin(admin.ModelAdmin):
    list_display = ("id", "search", "seq", "type", "time")
    list_filter = ("type",)
    raw_id_fields = ("search",)


class WrittenByTheLoop(admin.ModelAdmin):
    """Rows only the control loop writes: shown, never added or changed here."""

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(ArchiveRow)
class ArchiveRowAdmin(WrittenByTheLoop):
    """The strategies' archives."""

    list_display = ("id", "search", "kind", "index")
    list_filter = ("kind",)
    raw_id_fields = ("search",)


@admin.register(Attempt)
class AttemptAdmin(WrittenByTheLoop):
    """Every start of an individual's evaluation and how it ended."""

    list_display = ("id", "individual", "number", "run", "outcome", "reason", "node", "device", "started")
    list_filter = ("outcome", "reason")
    raw_id_fields = ("individual",)


@admin.register(Weights)
class WeightsAdmin(WrittenByTheLoop):
    """The trained weights kept for the best individuals (the bytes are never shown)."""

    list_display = ("id", "individual", "nbytes", "sha256", "created")
    raw_id_fields = ("individual",)
    exclude = ("data",)


@admin.register(Worker)
class WorkerAdmin(admin.ModelAdmin):
    list_display = ("name", "node", "device", "slot", "slots", "pool", "host", "last_seen")
    list_filter = ("pool", "node")


@admin.register(WeightState)
class WeightStateAdmin(WrittenByTheLoop):
    list_display = ("id", "search", "generation", "validation_accuracy", "digest", "updated")
    raw_id_fields = ("search",)
    exclude = ("data",)  # the weights' bytes


@admin.register(WeightGeneration)
class WeightGenerationAdmin(WrittenByTheLoop):
    list_display = ("id", "search", "number", "best", "mean", "worst", "validation_accuracy", "workers")
    raw_id_fields = ("search",)


@admin.register(NodeControl)
class NodeControlAdmin(admin.ModelAdmin):
    """Shown only: a change goes through the nodes page, the API or ``manage.py node``, which also tell Redis."""

    list_display = ("node", "state", "changed_by", "changed")

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False
