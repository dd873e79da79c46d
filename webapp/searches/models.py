"""Searches, their individuals, their events and the evaluation workers: fields only.

Writes go through the services: a search's own control loop writes its individuals, their attempts and its
results (``webapp.control.recording``, ``webapp.control.attempts``), the user's actions its status
(``webapp.services.lifecycle``), the reaper the worker registry (``webapp.control.registry``), and both the events
(``webapp.searches.broadcast``). One user action touches individuals: a re-run puts failed ones back in the
queue (``webapp.services.reruns``), under the search row's lock that every write of the loop takes.
"""
from __future__ import annotations

from django.conf import settings
from django.db import models


class Search(models.Model):
    class Status(models.TextChoices):
        DRAFT = "draft", "draft"
        RUNNING = "running", "running"
        STOPPING = "stopping", "stopping"
        STOPPED = "stopped", "stopped"
        FINISHED = "finished", "finished"
        FAILED = "failed", "failed"

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="searches")
    name = models.CharField(max_length=200, help_text="A name of the owner's choice.")
    config = models.JSONField(help_text="The checked search configuration (webapp.searches.config.check_config).")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.DRAFT, db_index=True)
    status_reason = models.TextField(blank=True, help_text="Why the search stopped or failed, in words.")
    strategy_state = models.JSONField(
        null=True, blank=True, help_text="The strategy's state_dict() but its archive (in ArchiveRow), saved after "
        "every ask and tell: the search resumes from it."
    )
    lease_owner = models.CharField(max_length=200, blank=True, help_text="The control loop holding the search.")
    lease_expires = models.DateTimeField(null=True, blank=True, help_text="The lease is free after this time.")
    stats = models.JSONField(default=dict, blank=True, help_text="Live accounting, updated as results are recorded.")
    best = models.JSONField(default=list, blank=True, help_text="Ids of the best individuals, best first.")
    best_fitness = models.FloatField(null=True, blank=True)
    event_seq = models.PositiveBigIntegerField(default=0, help_text="The sequence number of the last event.")
    evaluations_total = models.PositiveIntegerField(default=0, help_text="The planned number of evaluations.")
    evaluations_done = models.PositiveIntegerField(default=0, help_text="Individuals with a final result.")
    cloned_from = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="clones")
    created = models.DateTimeField(auto_now_add=True)
    started = models.DateTimeField(null=True, blank=True)
    finished = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created"]
        verbose_name_plural = "searches"

    def __str__(self) -> str:
        return f"{self.name} (#{self.pk}, {self.status})"


class Individual(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued", "queued"
        RUNNING = "running", "running"
        DONE = "done", "done"
        PRUNED = "pruned", "pruned"  # stopped early by the search's pruner: partial curve
        FAILED = "failed", "failed"

    FINAL = (Status.DONE, Status.PRUNED, Status.FAILED)

    class Role(models.TextChoices):
        SEARCH = "search", "search"  # a candidate the strategy asked for
        FINAL = "final", "final"  # a top genome retrained from scratch once the search ended (``final``)
        SUPERNET = "supernet", "supernet"  # a one-shot search's supernet training (``webapp.control.oneshot_loop``)
        CHECK = "check", "check"  # a path of a one-shot search's ranking check, trained stand-alone

    search = models.ForeignKey(Search, on_delete=models.CASCADE, related_name="individuals")
    number = models.PositiveIntegerField(help_text="The strategy's candidate id: 0, 1, 2, ... in the order asked.")
    genome = models.JSONField()
    key = models.CharField(max_length=64, db_index=True, help_text="The space's stable id of the genome.")
    description = models.CharField(max_length=500, blank=True, help_text="The space's one-line description.")
    generation = models.PositiveIntegerField(default=0)
    parents = models.JSONField(default=list, blank=True, help_text="Keys of the parents (none for a sample).")
    operator = models.CharField(max_length=32, default="sample", help_text="sample, mutation, crossover, ...")
    role = models.CharField(max_length=8, choices=Role.choices, default=Role.SEARCH, db_index=True,
                            help_text="search: asked by the strategy; final: a final run (webapp.control.final), "
                            "never told to the strategy.")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED, db_index=True)
    attempts = models.PositiveSmallIntegerField(default=0, help_text="How many times a worker started it.")
    reruns = models.PositiveSmallIntegerField(default=0, help_text="How many times its owner re-ran it after it "
                                              "failed (the strategy was told its first outcome only).")
    attempt_base = models.PositiveSmallIntegerField(default=0, help_text="Attempts made before its latest re-run: "
                                                    "a worker counts the re-run's attempts from 1 again.")
    fitness = models.FloatField(null=True, blank=True, db_index=True)
    metrics = models.JSONField(default=dict, blank=True, help_text="Accuracy, params, FLOPs, latency, timings ...")
    curve = models.JSONField(default=list, blank=True, help_text="Loss and accuracy per epoch.")
    epochs_trained = models.FloatField(null=True, blank=True, help_text="Epochs it trained (fewer when pruned).")
    predicted_fitness = models.FloatField(null=True, blank=True, help_text="The pruner's prediction of its final "
                                          "fitness, when it made one.")
    prune = models.JSONField(default=dict, blank=True, help_text="The pruner's last decision: reason, predicted, "
                             "spread, step, audited.")
    failure = models.CharField(max_length=32, blank=True, help_text="oom, diverged, timeout, invalid, worker_lost ...")
    message = models.TextField(blank=True, help_text="The failure's explanation.")
    node = models.CharField(max_length=200, blank=True)
    device = models.CharField(max_length=32, blank=True)
    slot = models.CharField(max_length=250, blank=True, help_text="node/device/slot that evaluated it.")
    task_id = models.CharField(max_length=64, blank=True, db_index=True, help_text="The current evaluate task.")
    packet_bytes = models.PositiveIntegerField(default=0, help_text="This individual's share of its packet's bytes.")
    created = models.DateTimeField(auto_now_add=True)
    dispatched = models.DateTimeField(null=True, blank=True)
    started = models.DateTimeField(null=True, blank=True)
    finished = models.DateTimeField(null=True, blank=True)
    duration = models.FloatField(null=True, blank=True, help_text="Seconds the worker spent on it.")

    class Meta:
        ordering = ["search", "number"]
        constraints = [models.UniqueConstraint(fields=["search", "number"], name="unique_individual_number")]
        indexes = [models.Index(fields=["search", "status"]), models.Index(fields=["search", "finished"])]

    def __str__(self) -> str:
        return f"#{self.number} of search {self.search_id} ({self.status})"


class Attempt(models.Model):
    """One start of an individual's evaluation and how it ended: ``ok`` (a result), ``pruned``, ``failed`` (a
    failed result, or no worker could run it) or ``lost`` (its worker died under it; it was sent again). Written
    by the search's loop with the individual (``webapp.control.attempts``); ``Individual.attempts`` counts them."""

    class Outcome(models.TextChoices):
        OK = "ok", "ok"
        PRUNED = "pruned", "pruned"
        FAILED = "failed", "failed"
        LOST = "lost", "lost"

    individual = models.ForeignKey(Individual, on_delete=models.CASCADE, related_name="attempt_rows")
    number = models.PositiveSmallIntegerField(help_text="1, 2, ... in the order the workers started them.")
    run = models.PositiveSmallIntegerField(default=0, help_text="0 for the search's own run, n for its n-th re-run.")
    outcome = models.CharField(max_length=8, choices=Outcome.choices)
    reason = models.CharField(max_length=32, blank=True, help_text="oom, error, worker_lost, ... (empty when ok).")
    kind = models.CharField(max_length=100, blank=True, help_text="The exception's type, when it raised one.")
    message = models.TextField(blank=True, help_text="The exception's message, or what happened, in words.")
    traceback = models.TextField(blank=True, help_text="The last lines of its traceback, paths outside the "
                                 "project cut (evaluators.failure_text).")
    node = models.CharField(max_length=200, blank=True)
    device = models.CharField(max_length=32, blank=True)
    slot = models.CharField(max_length=250, blank=True)
    started = models.DateTimeField(null=True, blank=True)
    finished = models.DateTimeField(null=True, blank=True)
    duration = models.FloatField(null=True, blank=True, help_text="Seconds the worker reported (none when lost).")
    peak_memory_bytes = models.PositiveBigIntegerField(null=True, blank=True, help_text="When it was measured.")

    class Meta:
        ordering = ["individual", "number"]
        constraints = [models.UniqueConstraint(fields=["individual", "number"], name="unique_attempt_number")]

    def __str__(self) -> str:
        return f"attempt {self.number} of individual {self.individual_id} ({self.outcome})"


class Weights(models.Model):
    """The files kept for one of a search's best individuals: its trained weights (``torch.save`` of a flat dict
    of CPU tensors), the standalone PyTorch source and the ONNX export that the worker wrote when it trained it.

    Workers leave these in Redis for a while; the loop keeps those of the best ``keep_weights`` individuals here
    and deletes those that leave the best (``webapp.control.kept``). Downloads only zip these bytes."""

    individual = models.OneToOneField(Individual, on_delete=models.CASCADE, related_name="weights")
    data = models.BinaryField(help_text="weights.pt: the trained state_dict (tensors only).")
    nbytes = models.PositiveIntegerField()
    sha256 = models.CharField(max_length=64)
    source = models.TextField(blank=True, help_text="model.py: the standalone source, written by the worker.")
    onnx = models.BinaryField(null=True, blank=True, help_text="model.onnx with these weights (empty if it failed).")
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = verbose_name_plural = "weights"

    def __str__(self) -> str:
        return f"weights of individual {self.individual_id} ({self.nbytes} bytes)"


class Event(models.Model):
    """An append-only log per search; ``seq`` numbers them so a page can ask for what it missed."""

    search = models.ForeignKey(Search, on_delete=models.CASCADE, related_name="events")
    seq = models.PositiveBigIntegerField()
    type = models.CharField(max_length=64, help_text="e.g. individual.finished, search.status")
    data = models.JSONField(default=dict)
    time = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["search", "seq"]
        constraints = [models.UniqueConstraint(fields=["search", "seq"], name="unique_event_seq")]

    def __str__(self) -> str:
        return f"{self.type} #{self.seq} of search {self.search_id}"


class ArchiveRow(models.Model):
    """One entry of a list in a strategy's state that only grows (its ``APPEND_ONLY`` lists: an archive's
    candidates asked and results told), as its ``state_dict()`` wrote it.

    Such lists are stored a row at a time: saving the state after a result writes that result's row, not the
    whole list again (see ``webapp.control.strategy_store``)."""

    search = models.ForeignKey(Search, on_delete=models.CASCADE, related_name="archive_rows")
    kind = models.CharField(max_length=32, help_text="The state's list this row belongs to (e.g. candidates).")
    index = models.PositiveIntegerField(help_text="Its place in that list.")
    data = models.JSONField()

    class Meta:
        ordering = ["search", "kind", "index"]
        constraints = [models.UniqueConstraint(fields=["search", "kind", "index"], name="unique_archive_row")]

    def __str__(self) -> str:
        return f"{self.kind} row {self.index} of search {self.search_id}"


class Worker(models.Model):
    """An evaluation worker slot, as last seen through its heartbeat in Redis."""

    name = models.CharField(max_length=250, unique=True, help_text="node/device/slot")
    node = models.CharField(max_length=200)
    device = models.CharField(max_length=32)
    slot = models.PositiveSmallIntegerField(default=0)
    slots = models.PositiveSmallIntegerField(default=1, help_text="Slots of its device's worker.")
    pool = models.CharField(max_length=100, default="eval")
    host = models.CharField(max_length=200, blank=True)
    pid = models.PositiveIntegerField(null=True, blank=True)
    current = models.JSONField(null=True, blank=True, help_text="The evaluation it runs: search and individual ids.")
    first_seen = models.DateTimeField(auto_now_add=True)
    last_seen = models.DateTimeField()

    class Meta:
        ordering = ["node", "device", "slot"]

    def __str__(self) -> str:
        return self.name


class WeightState(models.Model):
    """A weight search's current weights (seed 001): what a resume starts from and what ``weights.pt`` holds.
    Written by the search's loop after every generation."""

    search = models.OneToOneField(Search, on_delete=models.CASCADE, related_name="weight_state")
    generation = models.PositiveIntegerField(help_text="Generations done: the next one to run.")
    digest = models.CharField(max_length=64, help_text="Digest of the weights (workers compare theirs with it).")
    data = models.BinaryField(help_text="torch.save of the weights, SNES's sigma, the optimizer state, the counter.")
    validation_accuracy = models.FloatField(null=True, blank=True)
    weights_pt = models.BinaryField(default=b"", help_text="weights.pt: the network's state_dict (tensors only).")
    source = models.TextField(blank=True, help_text="model.py: the network's standalone source.")
    updated = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"weights of search {self.search_id} at generation {self.generation}"


class WeightGeneration(models.Model):
    """One generation of a weight search, as its loop recorded it."""

    search = models.ForeignKey(Search, on_delete=models.CASCADE, related_name="weight_generations")
    number = models.PositiveIntegerField()
    best = models.FloatField(null=True, blank=True, help_text="Best offspring fitness.")
    mean = models.FloatField(null=True, blank=True)
    worst = models.FloatField(null=True, blank=True)
    validation_accuracy = models.FloatField(null=True, blank=True, help_text="Of the weights after the update.")
    workers = models.PositiveSmallIntegerField(default=1, help_text="Parts the generation was split into.")
    evaluated = models.JSONField(default=dict, help_text="Offspring evaluated per node.")
    traffic = models.JSONField(default=dict, help_text="Bytes moved (measured and modelled) and the weights' bytes.")
    timings = models.JSONField(default=dict, help_text="Seconds: evaluate, gather, gradient, update, total.")
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["search", "number"]
        constraints = [models.UniqueConstraint(fields=["search", "number"], name="unique_weight_generation")]

    def __str__(self) -> str:
        return f"generation {self.number} of search {self.search_id}"


class NodeControl(models.Model):
    """An evaluation node's state as an operator set it (``drain``, ``pause``, ``resume``): the copy that
    outlives Redis, where the workers and the loops read it (``webapp.messaging.node_state``). Written by
    ``webapp.services.node_control``; written back to Redis by the control worker's reaper."""

    class State(models.TextChoices):
        ACTIVE = "active", "active"
        DRAINING = "draining", "draining"
        PAUSED = "paused", "paused"

    node = models.CharField(max_length=200, unique=True)
    state = models.CharField(max_length=16, choices=State.choices, default=State.ACTIVE)
    changed_by = models.CharField(max_length=150, blank=True, help_text="The user who set it last.")
    changed = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["node"]

    def __str__(self) -> str:
        return f"{self.node}: {self.state}"
