"""A registered data set: what its scan found (``evaluators.data_files.scan``), kept so that searches can train
on it by name and the data-set page can show it without reading the files again."""
from __future__ import annotations

from django.conf import settings
from django.db import models


class DataSet(models.Model):
    class Kind(models.TextChoices):
        FOLDER = "folder", "class folders"
        NPZ = "npz", ".npz file"

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="datasets")
    name = models.CharField(max_length=64, unique=True, help_text="The name a search's \"dataset\" gives.")
    shared = models.BooleanField(default=False, help_text="Usable by every user (only staff may share a set).")
    kind = models.CharField(max_length=8, choices=Kind.choices)
    path = models.CharField(max_length=1000, help_text="Where every worker reads it (resolved, under an allowed root).")
    digest = models.CharField(max_length=64, help_text="SHA-256 of the sorted relative paths and bytes.")
    classes = models.JSONField(help_text="The class names, sorted: label i is classes[i].")
    counts = models.JSONField(help_text="Readable images per class, in the order of classes.")
    sizes = models.JSONField(help_text="Image sizes found, \"WxH\" -> count, commonest first.")
    channels = models.PositiveSmallIntegerField(help_text="1 (grey) or 3 (colour).")
    archive = models.CharField(max_length=1000, blank=True, default="",
                               help_text="The archive workers fetch it as, by digest (the upload, or one made of "
                                         "the path on a first fetch); empty until then.")
    corrupt = models.JSONField(default=list, blank=True, help_text="Files skipped: relative path and the error.")
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def images(self) -> int:
        return sum(self.counts)

    @property
    def imbalance(self) -> float:
        """The largest class's image count over the smallest's (1.0: balanced)."""
        return max(self.counts) / min(self.counts)
