"""The gang worker's scaling probe before ``auto`` decides (``webapp.worker.device_claims.probe``): it runs on the
worker's free devices and gives them back, feeds the search's model and the list of probed waiting candidates, and
a probe that fails or finds no free device leaves the decision to be made without it."""
from __future__ import annotations

import pytest

from nas.allocation import ThroughputModel
from webapp.worker import device_claims


@pytest.fixture
def shared(monkeypatch):
    """The Redis-backed state, kept in memory (the real-stack test uses Redis: tests/engine/test_gang_search.py)."""
    calls = {"rates": [], "probed": []}
    monkeypatch.setattr(device_claims.allocation_state, "load_model", lambda search: ThroughputModel())
    monkeypatch.setattr(device_claims.allocation_state, "record_rates",
                        lambda search, host, rates: calls["rates"].append((host, rates)))
    monkeypatch.setattr(device_claims.allocation_state, "record_probed",
                        lambda search, individual, single: calls["probed"].append((individual, single)))
    return calls


def individual(devices="auto") -> dict:
    return {"search": 3, "individual": 11, "key": "abc", "training": {"epochs": 2},
            "evaluation": {"mode": "simulated", "duration": 2.0, "efficiency": 0.9, "devices": devices}}


def test_the_probe_runs_on_the_widest_free_gang_and_feeds_the_model(tmp_path, shared, monkeypatch):
    book = device_claims.Ledger(["cpu"] * 4, tmp_path)
    seen = []
    real = device_claims.rate_probe.measure
    monkeypatch.setattr(device_claims.rate_probe, "measure",
                        lambda ind, gangs: seen.append((gangs, len(book.free()))) or real(ind, gangs))
    single, final = device_claims.probe(individual(), (1, 2, 4), book, "h")
    assert final and single == pytest.approx(2.0)
    assert seen == [([["cpu"], ["cpu"] * 4], 0)]  # on one device and the widest gang, all four held meanwhile
    assert len(book.free()) == 4  # given back
    assert [set(rates) for _, rates in shared["rates"]] == [{1, 4}] and shared["probed"] == [(11, single)]


def test_no_free_device_is_retried_and_a_failed_probe_is_no_probe(tmp_path, shared, monkeypatch):
    book = device_claims.Ledger(["cpu"] * 2, tmp_path)
    for index in range(2):
        (tmp_path / f"device.{index}").write_text("1")  # held by another live process
    assert device_claims.probe(individual(), (1, 2), book, "h") == (None, False)
    book.release([0, 1])
    monkeypatch.setattr(device_claims.rate_probe, "measure", lambda ind, gangs: None)
    assert device_claims.probe(individual(), (1, 2), book, "h") == (None, True)
    assert len(book.free()) == 2 and shared["rates"] == [] and shared["probed"] == []
    assert device_claims.probe(individual(devices=2), (1, 2), book, "h") == (None, True)  # a fixed split
