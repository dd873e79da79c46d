"""Data sets uploaded as archives in chunks through the JSON API (issue 35): resumable and idempotent chunks,
the archive checks (each a clear message, nothing registered, nothing left unpacked), the size limit, owner
scoping of uploads, and a worker's signed fetch of a set's archive by digest into its host's cache."""
from __future__ import annotations

import io
import os
import tarfile
import zipfile

import pytest
from django.urls import reverse

from evaluators import data_cache, data_files
from evaluators.own_data import DataSetUnreadable
from tests.dashboard.uploading import send_chunks, start, upload
from tests.evaluators.digit_folders import archive_folder, truncate_one, write_digit_folders
from webapp.datasets.models import DataSet
from webapp.messaging import dataset_signing
from webapp.services import datasets

pytestmark = pytest.mark.django_db


@pytest.fixture
def data_dir(tmp_path, settings, monkeypatch):
    settings.DATA_DIR = tmp_path / "data"
    settings.NAS_DATASET_ROOTS = [str(tmp_path / "data")]
    settings.NAS_UPLOAD_CHUNK_BYTES = 1024  # several chunks for a small archive
    return tmp_path / "data"


@pytest.fixture
def digits(tmp_path):
    root = write_digit_folders(tmp_path / "src" / "digits", classes=(0, 1, 2), per_class=8, corrupt=False)
    truncate_one(root)
    return root


def nothing_registered(data_dir) -> None:
    assert not DataSet.objects.exists()
    assert not any((data_dir / "datasets").glob("*")) if (data_dir / "datasets").exists() else True


@pytest.mark.parametrize("suffix", [".zip", ".tar"])
def test_upload_in_chunks_registers_the_set_and_keeps_the_archive(data_dir, digits, tmp_path, client, users, suffix):
    client.force_login(users["owner"])
    archive = archive_folder(digits, tmp_path / f"digits{suffix}", top="digits")  # wrapped in a top folder
    data = archive.read_bytes()
    started = start(client, "up", archive).json()
    assert started["chunks"] > 3 and started["received"] == []
    # Out of order, one chunk twice (a client that lost the answer sends it again), the last one missing.
    order = [1, 0, 1, *range(2, started["chunks"] - 1)]
    send_chunks(client, started, data, order)
    status = client.get(reverse("api-upload", args=[started["upload"]])).json()
    assert status["received"] == list(range(started["chunks"] - 1))
    early = client.post(reverse("api-upload-finish", args=[started["upload"]]))
    assert early.status_code == 400 and f"lacks 1 chunk(s) ({started['chunks'] - 1})" in early.json()["error"]
    send_chunks(client, started, data, [started["chunks"] - 1])  # resumed
    done = client.post(reverse("api-upload-finish", args=[started["upload"]]))
    assert done.status_code == 201, done.content
    row = done.json()
    assert row["classes"] == ["digit_0", "digit_1", "digit_2"] and row["counts"] == [7, 8, 8]
    assert len(row["corrupt"]) == 1 and row["digest"] == data_files.digest(digits, "folder")
    found = DataSet.objects.get(name="up")
    assert found.path.startswith(str(data_dir / "datasets")) and found.archive.endswith(suffix)
    assert open(found.archive, "rb").read() == data  # kept for the workers' fetch
    assert not any((data_dir / "uploads").iterdir())


def zip_of(tmp_path, entries) -> os.PathLike:
    """A zip with ``entries``: (name, bytes), or (name, None) for a folder entry, or (name, "->target") a link."""
    path = tmp_path / "bad.zip"
    with zipfile.ZipFile(path, "w") as archive:
        for name, content in entries:
            if content is None:
                archive.writestr(zipfile.ZipInfo(name), b"")
            elif isinstance(content, str):
                info = zipfile.ZipInfo(name)
                info.external_attr = 0o120777 << 16
                archive.writestr(info, content[2:])
            else:
                archive.writestr(name, content)
    return path


def png(digits) -> bytes:
    return sorted((digits / "digit_1").glob("*.png"))[0].read_bytes()


@pytest.mark.parametrize("entries, message", [
    (lambda p: [("a/1.png", p), ("a/2.png", p)], "a classifier needs two"),
    (lambda p: [("a/1.png", p), ("b/", None)], "the class b has no readable image"),
    (lambda p: [("a/1.png", p), ("../b/1.png", p)], "climbs out of the archive"),
    (lambda p: [("a/1.png", p), ("/etc/b.png", p)], "has an absolute path"),
    (lambda p: [("a/1.png", p), ("b/1.png", p), ("b/2.png", "->../../../etc/passwd")], "points out of the archive"),
    (lambda p: [("a/1.png", p), ("b/1.png", p), ("b/2.png", b"#!/bin/sh\nrm -rf /\n")],
     "is named as an image but is not one"),
    (lambda p: [("a/1.png", p), ("b/1.png", b"not a zip" * 10)], "is named as an image but is not one"),
])
def test_bad_archives_register_nothing(data_dir, digits, tmp_path, client, users, entries, message):
    client.force_login(users["owner"])
    response = upload(client, "bad", zip_of(tmp_path, entries(png(digits))))
    assert response.status_code == 400 and message in response.json()["error"], response.content
    nothing_registered(data_dir)


def test_a_tar_link_out_and_a_damaged_archive_register_nothing(data_dir, digits, tmp_path, client, users):
    client.force_login(users["owner"])
    path = tmp_path / "link.tar"
    with tarfile.open(path, "w") as archive:
        archive.add(digits / "digit_1", "a")
        archive.add(digits / "digit_2", "b")
        link = tarfile.TarInfo("b/evil.png")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        archive.addfile(link)
    response = upload(client, "bad", path)
    assert response.status_code == 400 and "'b/evil.png' -> '/etc/passwd' points out" in response.json()["error"]
    broken = tmp_path / "broken.zip"
    broken.write_bytes(b"PK\x03\x04" + b"\0" * 100)
    response = upload(client, "bad", broken)
    assert response.status_code == 400 and "is not a readable zip archive" in response.json()["error"]
    nothing_registered(data_dir)


def test_size_limit_names_the_setting(data_dir, digits, tmp_path, client, users, settings):
    client.force_login(users["owner"])
    settings.NAS_DATASET_MAX_BYTES = 10_000
    response = start(client, "big", tmp_path / "x.zip", size=10_001)
    assert response.status_code == 400 and "over the limit of 10,000 bytes (NAS_DATASET_MAX_BYTES" in \
        response.json()["error"]
    # An archive small enough that unpacks to more (a zip bomb) is refused too.
    bomb = tmp_path / "bomb.zip"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("a/1.png", png(digits))
        archive.writestr("b/zeros.txt", b"\0" * 50_000)
    response = upload(client, "bomb", bomb)
    assert response.status_code == 400 and "unpacks to" in response.json()["error"]
    for bad in ({"name": "x", "filename": "x.rar", "size": 3}, {"name": "x", "filename": "x.zip", "size": -1},
                {"name": "digits", "filename": "x.zip", "size": 3}, {"name": "x", "filename": "x.zip", "size": 3,
                                                                    "shared": True},
                {"name": "x", "filename": "x.zip", "size": 3, "shared": "no"}, {"name": "x", "size": 3},
                {"name": "x", "filename": "x.zip", "size": 3, "extra": 1}):
        refused = client.post(reverse("api-upload-start"), bad, content_type="application/json")
        assert refused.status_code == 400 and refused.json()["error"], bad
    nothing_registered(data_dir)


def test_an_upload_is_its_owners_only(data_dir, digits, tmp_path, client, users):
    client.force_login(users["owner"])
    archive = archive_folder(digits, tmp_path / "d.zip")
    started = start(client, "mine", archive).json()
    client.force_login(users["other"])
    assert client.get(reverse("api-upload", args=[started["upload"]])).status_code == 404
    put = client.put(reverse("api-upload-chunk", args=[started["upload"], 0]), b"x",
                     content_type="application/octet-stream")
    assert put.status_code == 404
    assert client.post(reverse("api-upload-finish", args=[started["upload"]])).status_code == 404
    assert client.get(reverse("api-upload", args=["..%2f..%2fetc"])).status_code == 404
    client.force_login(users["owner"])
    wrong = client.put(reverse("api-upload-chunk", args=[started["upload"], 0]), b"x",
                       content_type="application/octet-stream")
    assert wrong.status_code == 400 and "must be 1,024 bytes" in wrong.json()["error"]
    nothing_registered(data_dir)


def fetch_through(client, digest: str):
    """A download function for ``data_cache`` that asks the test client as a worker would (signed)."""
    calls = []

    def download(target):
        calls.append(target)
        headers = {f"HTTP_{k.upper().replace('-', '_')}": v for k, v in dataset_signing.signed_headers(digest).items()}
        response = client.get(reverse("api-dataset-archive", args=[digest]), **headers)
        assert response.status_code == 200, response.content
        target.write_bytes(b"".join(response.streaming_content))
    return download, calls


def test_a_worker_fetches_by_digest_once_per_host(data_dir, digits, tmp_path, client, users):
    client.force_login(users["owner"])
    assert upload(client, "up", archive_folder(digits, tmp_path / "d.zip")).status_code == 201
    # A set registered by path is fetched as a tar the server makes of it on the first request.
    path_set = write_digit_folders(data_dir / "bypath", classes=(3, 4), per_class=5, corrupt=False)
    datasets.register(users["owner"], "bypath", str(path_set))
    client.logout()  # a worker has no session: the signature is what counts
    for found in DataSet.objects.all():
        download, calls = fetch_through(client, found.digest)
        copy, fetched = data_cache.fetched(tmp_path / "cache", found.digest, "folder", download, 10 << 20)
        assert fetched and data_files.digest(copy, "folder") == found.digest
        again, fetched = data_cache.fetched(tmp_path / "cache", found.digest, "folder", download, 10 << 20)
        assert again == copy and not fetched and len(calls) == 1
    bad = client.get(reverse("api-dataset-archive", args=[found.digest]), HTTP_X_NAS_EXPIRES="9999999999",
                     HTTP_X_NAS_SIGNATURE="0" * 64)
    assert bad.status_code == 403 and "bad or missing signature" in bad.json()["error"]
    expired = {f"HTTP_{k.upper().replace('-', '_')}": v
               for k, v in dataset_signing.signed_headers(found.digest, now=1000.0).items()}
    assert client.get(reverse("api-dataset-archive", args=[found.digest]), **expired).status_code == 403


def test_a_fetched_copy_of_other_content_is_not_kept(tmp_path, digits):
    other = archive_folder(digits, tmp_path / "d.zip")
    with pytest.raises(DataSetUnreadable, match=r"worker .*: the copy fetched from the server has digest"):
        data_cache.fetched(tmp_path / "cache", "ab" * 32, "folder",
                           lambda target: target.write_bytes(other.read_bytes()), 10 << 20)
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == [f"{'ab' * 32}.lock"]
    with pytest.raises(DataSetUnreadable, match="not a data set digest"):
        data_cache.fetched(tmp_path / "cache", "../x", "folder", lambda target: None, 10)


def test_zip_entry_checks_read_no_more_than_the_header(tmp_path):
    data = io.BytesIO()
    with zipfile.ZipFile(data, "w") as archive:
        archive.writestr("./a/1.png", b"\x89PNG\r\n\x1a\n...")
    (tmp_path / "x.zip").write_bytes(data.getvalue())
    from evaluators import archives

    assert [e[1:3] for e in archives.check(tmp_path / "x.zip", 1000)] == [("a/1.png", "file")]


def test_the_command_registers_an_archive_under_the_roots(data_dir, digits, tmp_path, users):
    from io import StringIO

    from django.core.management import call_command
    from django.core.management.base import CommandError

    (data_dir / "incoming").mkdir(parents=True)
    archive = archive_folder(digits, data_dir / "incoming" / "d.tar", top="d")
    out = StringIO()
    call_command("dataset", "add", "fromcli", str(archive), "--owner", "owner", stdout=out)
    assert "registered fromcli: 23 images in 3 classes" in out.getvalue()
    found = DataSet.objects.get(name="fromcli")
    assert found.archive.endswith(".tar") and archive.is_file()  # a copy kept, the original left in place
    with pytest.raises(CommandError, match="outside the folders"):
        call_command("dataset", "add", "outside", str(archive_folder(digits, tmp_path / "x.zip")), "--owner", "owner")
    bad = zip_of(data_dir / "incoming", [("a/1.png", png(digits)), ("../b/1.png", png(digits))])
    with pytest.raises(CommandError, match="climbs out of the archive"):
        call_command("dataset", "add", "bad", str(bad), "--owner", "owner")
    assert DataSet.objects.count() == 1 and not list((data_dir / "datasets").glob(".incoming-*"))
