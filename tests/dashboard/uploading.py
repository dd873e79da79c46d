"""Sending an archive through the chunked upload API (``/api/datasets/uploads/``) as a client would: start, the
chunks (in the order given), finish."""
from __future__ import annotations

from pathlib import Path

from django.urls import reverse


def start(client, name: str, archive: Path, size: int | None = None):
    return client.post(reverse("api-upload-start"), {"name": name, "filename": archive.name,
                                                     "size": archive.stat().st_size if size is None else size},
                       content_type="application/json")


def send_chunks(client, upload: dict, data: bytes, order=None) -> None:
    step = upload["chunk_bytes"]
    for index in order if order is not None else range(upload["chunks"]):
        sent = client.put(reverse("api-upload-chunk", args=[upload["upload"], index]),
                          data[index * step:(index + 1) * step], content_type="application/octet-stream")
        assert sent.status_code == 200, sent.content


def upload(client, name: str, archive: Path, order=None):
    """The finish's response (201 and the set, or 400 and why)."""
    started = start(client, name, archive)
    assert started.status_code == 201, started.content
    send_chunks(client, started.json(), archive.read_bytes(), order)
    return client.post(reverse("api-upload-finish", args=[started.json()["upload"]]))
