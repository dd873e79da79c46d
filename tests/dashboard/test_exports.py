"""The export services and their download views: CSV, JSON lines, the zip of the best."""
from __future__ import annotations

import csv
import io
import json
import zipfile

import pytest
from django.urls import reverse

from webapp.services import exports

pytestmark = pytest.mark.django_db


def test_csv_has_one_row_per_individual_and_a_stable_header(search):
    out = io.StringIO()
    assert exports.individuals_csv(search, out) == 10
    rows = list(csv.DictReader(io.StringIO(out.getvalue())))
    header = out.getvalue().splitlines()[0].split(",")
    assert header[:3] == ["number", "state", "fitness"]
    for column in ("genome_n_layers", "genome_l1_kernel", "genome_l4_filters", "metric_accuracy", "metric_params",
                   "metric_flops", "timing_train", "timing_total", "node", "device", "slot", "parents",
                   "parent_numbers", "started", "finished", "duration"):
        assert column in header, column
    assert [int(r["number"]) for r in rows] == list(range(10))
    assert rows[3]["state"] == "failed" and rows[3]["fitness"] == "" and rows[3]["failure"] == "oom"
    assert rows[4]["parent_numbers"] == "3" and rows[4]["node"] == "alpha" and rows[4]["slot"] == "alpha/cpu/0"
    again = io.StringIO()
    exports.individuals_csv(search, again)
    assert again.getvalue() == out.getvalue()


GANG = {"compression": "segment_topk", "bytes_sent": 2400, "bytes_dense": 80000, "kept": 0.0125, "ranks": 2,
        "steps": 10, "balance": 1.0, "timings": {"train": 2.0, "communicate": 0.5, "compute": 1.5}}


def test_csv_has_a_gangs_bytes_in_columns_of_their_own(search):
    from webapp.searches.models import Individual

    individual = Individual.objects.get(search=search, number=4)
    individual.metrics = {**(individual.metrics or {}), **GANG}
    individual.save()
    out = io.StringIO()
    exports.individuals_csv(search, out)
    rows = list(csv.DictReader(io.StringIO(out.getvalue())))
    assert rows[4]["bytes_sent"] == "2400" and rows[4]["bytes_dense"] == "80000" and rows[4]["kept"] == "0.0125"
    assert rows[4]["compression"] == "segment_topk" and rows[4]["timing_communicate"] == "0.5"
    assert rows[5]["bytes_sent"] == rows[5]["bytes_dense"] == ""  # not a gang
    assert "metric_bytes_sent" not in rows[4]


def test_events_as_json_lines(search):
    out = io.StringIO()
    assert exports.events_jsonl(search, out) == 10
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [e["seq"] for e in lines] == list(range(1, 11))
    assert lines[0]["type"] == "individual.finished" and lines[0]["data"]["number"] == 0


def test_best_zip_holds_the_best_genomes_best_first(search):
    out = io.BytesIO()
    names = exports.best_zip(search, 3, out)
    archive = zipfile.ZipFile(io.BytesIO(out.getvalue()))
    assert set(archive.namelist()) == set(names)
    genomes = sorted(n for n in names if n.endswith("genome.json"))
    assert genomes == ["rank01_n9/genome.json", "rank02_n8/genome.json", "rank03_n7/genome.json"]
    document = json.loads(archive.read("rank01_n9/genome.json"))
    assert document["fitness"] == pytest.approx(0.59) and document["space"]["name"] == "chain"
    assert "layers" in document["genome"]
    # Every architecture has its standalone PyTorch source; weights and ONNX only where the search kept them.
    assert {"rank01_n9/model.py", "rank02_n8/model.py", "rank03_n7/model.py"} <= set(names)
    assert not any(n.endswith(("model.onnx", "weights.pt")) for n in names)
    assert "class Net" in archive.read("rank01_n9/model.py").decode()
    assert "best architectures" in archive.read("README.txt").decode()


def test_download_views(owner_client, search):
    csv_response = owner_client.get(reverse("download-csv", args=[search.pk]))
    assert csv_response["Content-Type"].startswith("text/csv")
    assert "attachment" in csv_response["Content-Disposition"]
    assert csv_response.content.decode().count("\n") == 11
    assert owner_client.get(reverse("download-events", args=[search.pk])).content.count(b"\n") == 10
    response = owner_client.get(reverse("download-best", args=[search.pk]), {"k": 1})
    assert zipfile.ZipFile(io.BytesIO(response.content)).namelist()[0].startswith("rank01_n9/")
    assert owner_client.get(reverse("download-best", args=[search.pk]), {"k": "0"}).status_code == 400
    single = owner_client.get(reverse("download-individual", args=[search.pk, 9]))
    assert f"search{search.pk}_n9/genome.json" in zipfile.ZipFile(io.BytesIO(single.content)).namelist()
    genome = owner_client.get(reverse("download-genome", args=[search.pk, 9])).json()
    assert genome["number"] == 9


def test_downloads_zip_the_kept_files_as_stored_and_export_nothing(search, monkeypatch):
    """The web process never exports: the kept files are zipped byte for byte as the worker wrote them, and no
    exporter runs (an ONNX export would need torch in the web process)."""
    import evaluators.model_files

    from webapp.searches.models import Individual, Weights

    def refuse(*args, **kwargs):
        raise AssertionError("a download ran an exporter")

    monkeypatch.setattr(evaluators.model_files, "export_files", refuse)
    monkeypatch.setattr(evaluators.model_files, "export_onnx", refuse)
    best = Individual.objects.get(search=search, number=9)
    Weights.objects.create(individual=best, data=b"weights-bytes", nbytes=13, sha256="0" * 64,
                           source="# the worker's model.py\n", onnx=b"onnx-bytes")
    out = io.BytesIO()
    names = exports.best_zip(search, 2, out)
    archive = zipfile.ZipFile(io.BytesIO(out.getvalue()))
    assert archive.read("rank01_n9/weights.pt") == b"weights-bytes"
    assert archive.read("rank01_n9/model.onnx") == b"onnx-bytes"
    assert archive.read("rank01_n9/model.py") == b"# the worker's model.py\n"
    assert "rank02_n8/model.onnx" not in names and "class Net" in archive.read("rank02_n8/model.py").decode()
