"""Registered data sets in the JSON API (``/api/datasets/``: list, register by path, one set) and in the
browser (a list, a page per set with a few sample thumbnails per class). Thin: the service
``webapp.services.datasets`` registers and decides who sees what; another user's unshared set is a 404, as if
it did not exist."""
from __future__ import annotations

import io
from pathlib import Path

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET, require_http_methods

from evaluators import data_files
from webapp.dashboard.access import api_login_required
from webapp.dashboard.api import _object_body as object_body
from webapp.dashboard.api_errors import json_error
from webapp.datasets.models import DataSet
from webapp.services import datasets

REGISTER_FIELDS = ("name", "path", "shared")
#: Sample thumbnails shown per class, and their side in pixels.
SAMPLES, THUMBNAIL = 6, 64


@api_login_required
@require_http_methods(["GET", "POST"])
def api_datasets(request: HttpRequest) -> JsonResponse:
    if request.method == "GET":
        return JsonResponse({"results": [datasets.dataset_row(d) for d in datasets.visible_datasets(request.user)]})
    body = object_body(request, REGISTER_FIELDS, '{"name": ..., "path": ..., "shared": false}', "the fields are")
    if isinstance(body, JsonResponse):
        return body
    shared = body.get("shared", False)
    if not isinstance(shared, bool):
        return json_error(f"`shared` must be true or false (got {shared!r:.100}).", field="shared")
    try:
        found = datasets.register(request.user, body.get("name"), body.get("path"), shared)
    except datasets.RegisterError as error:
        return json_error(str(error))
    return JsonResponse(datasets.dataset_row(found), status=201)


@api_login_required
@require_GET
def api_dataset(request: HttpRequest, name: str) -> JsonResponse:
    return JsonResponse(datasets.dataset_row(get_object_or_404(datasets.visible_datasets(request.user), name=name)))


@login_required
@require_GET
def dataset_list(request: HttpRequest) -> HttpResponse:
    return render(request, "dashboard/dataset_list.html",
                  {"datasets": [datasets.dataset_row(d) for d in datasets.visible_datasets(request.user)],
                   "max_bytes": settings.NAS_DATASET_MAX_BYTES})


@login_required
@require_GET
def dataset_detail(request: HttpRequest, name: str) -> HttpResponse:
    found = get_object_or_404(datasets.visible_datasets(request.user), name=name)
    row = datasets.dataset_row(found)
    classes = [{"name": c, "count": n, "samples": range(min(SAMPLES, n)) if found.kind == "folder" else ()}
               for c, n in zip(found.classes, found.counts)]
    return render(request, "dashboard/dataset_detail.html", {"dataset": row, "classes": classes})


def _sample_file(found: DataSet, label: int, index: int) -> Path:
    if found.kind != "folder" or not 0 <= label < len(found.classes):
        raise Http404
    root = Path(found.path)
    skipped = {line.split(" (")[0] for line in found.corrupt}  # "relative/path.png (Error: ...)"
    files = [f for f in data_files.image_files(root / found.classes[label])
             if f.relative_to(root).as_posix() not in skipped]
    if not 0 <= index < min(SAMPLES, len(files)):
        raise Http404
    return files[index]


@login_required
@require_GET
def dataset_sample(request: HttpRequest, name: str, label: int, index: int) -> HttpResponse:
    """A small PNG of one of the first images of a class (read from the registered path, owner-checked)."""
    from PIL import Image

    found = get_object_or_404(datasets.visible_datasets(request.user), name=name)
    try:
        with Image.open(_sample_file(found, label, index)) as image:
            image = image.convert("L" if found.channels == 1 else "RGB")
            image.thumbnail((THUMBNAIL, THUMBNAIL))
            out = io.BytesIO()
            image.save(out, format="PNG")
    except (OSError, ValueError):
        raise Http404 from None  # a corrupt or vanished file: no thumbnail
    response = HttpResponse(out.getvalue(), content_type="image/png")
    response["Cache-Control"] = "private, max-age=300"
    return response
