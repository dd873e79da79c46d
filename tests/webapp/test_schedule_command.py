"""``manage.py schedule``: the report of a genome's network, and one-line errors for bad input."""
from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

CELL = {"edges": {"1<-0": "conv_3x3", "2<-0": "conv_3x3", "2<-1": "avg_pool_3x3", "3<-0": "conv_1x1",
                  "3<-1": "skip_connect", "3<-2": "conv_1x1"}}


@pytest.fixture(autouse=True)
def one_thread():
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def test_it_prints_the_schedule_against_the_baselines(tmp_path):
    path = tmp_path / "genome.json"
    path.write_text(json.dumps({"genome": CELL, "space": {"name": "cell", "cells_per_stage": 1, "stages": 2,
                                                          "channels": 8}, "dataset": "digits"}))
    out = io.StringIO()
    call_command("schedule", "--genome", str(path), "--device", "cpu", "--batch", "1", "--repeats", "3", stdout=out)
    text = out.getvalue()
    for expected in ("optimal schedule", "sequential", "greedy", "chosen:", "DP states", "L1.e01"):
        assert expected in text
    out = io.StringIO()
    call_command("schedule", "--genome", str(path), "--batch", "2", "--repeats", "3", "--json", stdout=out)
    report = json.loads(out.getvalue())
    assert report["batch"] == 2 and report["modelled_ms"]["optimal"] <= report["modelled_ms"]["sequential"] + 1e-9


@pytest.mark.parametrize("content, options, message", [
    ({"layers": [{"kernel": 3, "filters": 16}]}, [], "--genome: not a genome of the cell space"),
    (CELL, ["--batch", "0"], r"--batch must be in \[1, 4096\] \(got 0\)"),
    ("not json", [], "--genome: .* is not JSON"),
])
def test_bad_genomes_and_batches_are_one_line_errors(tmp_path, content, options, message):
    path = tmp_path / "genome.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    with pytest.raises(CommandError, match=message):
        call_command("schedule", "--genome", str(path), *options, stdout=io.StringIO())


def test_a_cyclic_graph_is_refused_and_a_graph_is_scheduled(tmp_path):
    path = tmp_path / "graph.json"
    path.write_text(json.dumps({"ops": [{"name": "a", "inputs": ["b"]}, {"name": "b", "inputs": ["a"]}]}))
    with pytest.raises(CommandError, match="--graph: inputs: the graph has a cycle through a, b"):
        call_command("schedule", "--graph", str(path), stdout=io.StringIO())
    path.write_text(json.dumps({"ops": [{"name": "a"}, {"name": "b"}, {"name": "c", "inputs": ["a", "b"]}]}))
    out = io.StringIO()
    call_command("schedule", "--graph", str(path), "--json", stdout=out)
    report = json.loads(out.getvalue())
    assert report["modelled"]["optimal"] <= report["modelled"]["greedy"]
    assert [len(stage["ops"]) for stage in report["optimal"]["stages"]] == [2, 1]
