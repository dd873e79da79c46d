"""Data sets moving in and out as archives: the chunked upload in the JSON API (the browser's upload form on the
data-set list sends the same requests, ``static/js/dataset_upload.js``), and a worker's signed download of a
set's archive by digest. Thin: ``webapp.services.uploads`` and ``webapp.services.dataset_fetch`` decide.

```
POST /api/datasets/uploads/                      {"name", "filename", "size", "shared"} -> 201 the upload's status
GET  /api/datasets/uploads/<id>/                 -> {"upload", "chunk_bytes", "chunks", "received": [i, ...]}
PUT  /api/datasets/uploads/<id>/chunks/<i>/      the chunk's bytes -> the status
POST /api/datasets/uploads/<id>/finish/          -> 201 the registered set, or 400 and nothing registered
GET  /api/datasets/archives/<digest>/            (workers: X-NAS-Expires, X-NAS-Signature) -> the archive
```
"""
from __future__ import annotations

from django.http import FileResponse, HttpRequest, JsonResponse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from webapp.dashboard.access import api_login_required
from webapp.dashboard.api import _object_body as object_body
from webapp.dashboard.api_errors import json_error
from webapp.messaging import dataset_signing, signing
from webapp.services import dataset_fetch, datasets, uploads

START_FIELDS = ("name", "filename", "size", "shared")
NO_SUCH_UPLOAD = "No such upload (it finished, failed, or was started by another user)."


@api_login_required
@require_POST
def api_upload_start(request: HttpRequest) -> JsonResponse:
    body = object_body(request, START_FIELDS, '{"name": ..., "filename": "set.zip", "size": BYTES}', "the fields are")
    if isinstance(body, JsonResponse):
        return body
    try:
        started = uploads.start(request.user, body.get("name"), body.get("filename"), body.get("size"),
                                body.get("shared", False))
    except datasets.RegisterError as error:
        return json_error(str(error))
    return JsonResponse(started, status=201)


@api_login_required
@require_GET
def api_upload_status(request: HttpRequest, upload: str) -> JsonResponse:
    try:
        return JsonResponse(uploads.status(request.user, upload))
    except uploads.NoSuchUpload:
        return json_error(NO_SUCH_UPLOAD, status=404)


@api_login_required
@require_http_methods(["PUT"])
def api_upload_chunk(request: HttpRequest, upload: str, index: int) -> JsonResponse:
    try:
        return JsonResponse(uploads.put_chunk(request.user, upload, index, request.body))
    except uploads.NoSuchUpload:
        return json_error(NO_SUCH_UPLOAD, status=404)
    except datasets.RegisterError as error:
        return json_error(str(error))


@api_login_required
@require_POST
def api_upload_finish(request: HttpRequest, upload: str) -> JsonResponse:
    try:
        found = uploads.finish(request.user, upload)
    except uploads.NoSuchUpload:
        return json_error(NO_SUCH_UPLOAD, status=404)
    except datasets.RegisterError as error:
        return json_error(str(error))
    return JsonResponse(datasets.dataset_row(found), status=201)


@require_GET
def api_archive(request: HttpRequest, digest: str):
    """A registered set's archive for a worker whose request carries this installation's signature."""
    try:
        dataset_signing.check_signature(digest, request.headers.get(dataset_signing.EXPIRES),
                                        request.headers.get(dataset_signing.SIGNATURE))
    except signing.MalformedPacket as error:
        return json_error(f"Refused: {error}.", status=403)
    found = dataset_fetch.archive_for(digest)
    if found is None:
        return json_error(f"No registered data set has the digest {digest[:64]}.", status=404)
    return FileResponse(open(found, "rb"), as_attachment=True, filename=found.name)
