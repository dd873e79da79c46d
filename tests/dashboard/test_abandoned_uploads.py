"""Uploads never finished are removed once they received nothing for ``NAS_UPLOAD_TTL_HOURS``, when the next
upload starts; a recent one (or an old one whose chunks still arrive) is left alone."""
from __future__ import annotations

import os
import time

import pytest
from django.urls import reverse

from tests.dashboard.test_dataset_upload import data_dir, digits  # noqa: F401 - fixtures
from tests.dashboard.uploading import send_chunks, start
from tests.evaluators.digit_folders import archive_folder
from webapp.services import uploads

pytestmark = pytest.mark.django_db
HOUR = 3600


def backdate(folder, hours: float) -> None:
    """Every file of the upload (and its folder) last touched ``hours`` ago."""
    when = time.time() - hours * HOUR
    for path in [*folder.iterdir(), folder]:
        os.utime(path, (when, when))


def test_an_abandoned_upload_is_removed_when_the_next_one_starts(data_dir, digits, tmp_path, client,  # noqa: F811
                                                                  users, settings):
    settings.NAS_UPLOAD_TTL_HOURS = 24
    client.force_login(users["owner"])
    archive = archive_folder(digits, tmp_path / "d.zip")
    data = archive.read_bytes()
    abandoned, recent, revived = (start(client, name, archive).json() for name in ("gone", "kept", "revived"))
    for upload in (abandoned, recent, revived):
        send_chunks(client, upload, data, [0, 1])
    folders = {name: data_dir / "uploads" / upload["upload"]
               for name, upload in (("gone", abandoned), ("kept", recent), ("revived", revived))}
    backdate(folders["gone"], 25)
    backdate(folders["kept"], 23)
    backdate(folders["revived"], 30)
    send_chunks(client, revived, data, [2])  # a chunk arrives today: the upload is alive again
    client.force_login(users["other"])  # anyone's start cleans everyone's abandoned uploads
    fresh = start(client, "other", archive)
    assert fresh.status_code == 201
    assert not folders["gone"].exists() and folders["kept"].exists() and folders["revived"].exists()
    client.force_login(users["owner"])
    assert client.get(reverse("api-upload", args=[abandoned["upload"]])).status_code == 404
    assert client.get(reverse("api-upload", args=[recent["upload"]])).json()["received"] == [0, 1]
    assert client.get(reverse("api-upload", args=[revived["upload"]])).json()["received"] == [0, 1, 2]


def test_the_time_to_live_is_a_setting(data_dir, digits, tmp_path, client, users, settings):  # noqa: F811
    client.force_login(users["owner"])
    started = start(client, "short", archive_folder(digits, tmp_path / "d.zip")).json()
    folder = data_dir / "uploads" / started["upload"]
    backdate(folder, 2)
    settings.NAS_UPLOAD_TTL_HOURS = 3
    assert uploads.clean_abandoned() == [] and folder.exists()
    settings.NAS_UPLOAD_TTL_HOURS = 1
    assert uploads.clean_abandoned() == [started["upload"]] and not folder.exists()
