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
    monkeypatch.setattr(device_claims.allocation_state, "read_model", lambda search: ThroughputModel())
    monkeypatch.setattr(device_claims.allocation_state, "record_rates",
                        lambda search, host, rates: calls["rates"].append((host, rates)))
    monkeypatch.setattr(device_claims.allocation_state, "record_probed",
                        lambda search, individual, single: calls["probed"].append((individual, single)))
    monkeypatch.setattr(device_claims.allocation_state, "hand_backs", lambda search, individual: 0)
    monkeypatch.setattr(device_claims, "_scaling_gang", lambda ind, sizes, book, host, wide: wide)
    return calls


def individual(devices="auto") -> dict:
    return {"search": 3, "individual": 11, "number": 5, "key": "abc", "training": {"epochs": 2},
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


def test_a_scaling_that_cannot_change_the_placement_is_not_probed_on_a_gang(tmp_path, shared, monkeypatch):
    """The wide part runs only where the scaling it reads could change where the candidate goes
    (``nas.allocation.scaling_gang``); elsewhere the probe has its one-device part only, which times the length
    while the search lacks its efficiency probes, whether or not the length could change the placement."""
    book = device_claims.Ledger(["cpu"] * 4, tmp_path)
    measured, asked = [], []
    monkeypatch.setattr(device_claims.rate_probe, "measure",
                        lambda ind, gangs: measured.append(gangs) or {"rates": {1: 500.0}, "steps": 1000,
                                                                      "seconds": 0.1})
    monkeypatch.setattr(device_claims, "_scaling_gang",
                        lambda ind, sizes, book_, host, wide: asked.append(wide) or 1)
    monkeypatch.setattr(device_claims, "_length_gang", lambda ind, sizes, book_, host: pytest.fail("asked"))
    assert device_claims.probe(individual(), (1, 2, 4), book, "h") == (pytest.approx(2.0), True)
    assert asked == [4] and measured == [[["cpu"]]]  # asked about the widest free gang, then timed on one device
    assert device_claims.inside_gang(individual(), (1, 2, 4), book, "h") == (1, True)  # the evaluation's start


def test_the_wide_part_runs_on_the_narrower_gang_good_scaling_would_give(tmp_path, shared, monkeypatch):
    """Where good scaling would give the candidate a pair here, not the widest free gang, the wide part runs on a
    pair (``nas.allocation.scaling_gang``): that probe is the start of its evaluation, which trains on."""
    book = device_claims.Ledger(["cpu"] * 4, tmp_path)
    measured, asked = [], []
    monkeypatch.setattr(device_claims.rate_probe, "measure",
                        lambda ind, gangs: measured.append(gangs) or {"rates": {1: 500.0, 2: 950.0}, "steps": 1000,
                                                                      "seconds": 0.1})
    monkeypatch.setattr(device_claims, "_scaling_gang", lambda ind, sizes, book_, host, wide: asked.append(wide) or 2)
    assert device_claims.probe(individual(), (1, 2, 4), book, "h") == (pytest.approx(2.0), True)
    assert asked == [4] and measured == [[["cpu"], ["cpu"] * 2]]  # asked about four, probed on one and a pair
    assert [set(rates) for _, rates in shared["rates"]] == [{1, 2}] and len(book.free()) == 4
    assert device_claims.inside_gang(individual(), (1, 2, 4), book, "h") == (2, True)


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


def test_a_length_that_cannot_change_the_placement_is_not_probed(tmp_path, shared, monkeypatch):
    """Without a wide part (one free device), the probe times the candidate only where a short and a long one would
    be placed differently (``nas.allocation.length_gang``); else it is decided without, and tried again while it
    waits."""
    book = device_claims.Ledger(["cpu"] * 2, tmp_path)
    (tmp_path / "device.1").write_text("1")  # held by another live process: one device free
    measured = []
    monkeypatch.setattr(device_claims.rate_probe, "measure",
                        lambda ind, gangs: measured.append(gangs) or {"rates": {1: 500.0}, "steps": 1000,
                                                                      "seconds": 0.1})
    asked = []
    monkeypatch.setattr(device_claims, "_length_gang", lambda ind, sizes, book_, host: asked.append(host) or 0)
    assert device_claims.probe(individual(), (1, 2), book, "h") == (None, False)
    assert device_claims.inside_gang(individual(), (1, 2), book, "h") == (0, True)
    assert measured == [] and asked == ["h", "h"] and len(book.free()) == 1
    monkeypatch.setattr(device_claims, "_length_gang", lambda ind, sizes, book_, host: 1)
    assert device_claims.inside_gang(individual(), (1, 2), book, "h") == (1, True)
    assert device_claims.probe(individual(), (1, 2), book, "h") == (pytest.approx(2.0), True)
    assert measured == [[["cpu"]]] and len(book.free()) == 1  # on its one free device, given back


@pytest.fixture
def published(monkeypatch):
    """What ``probe_inside`` publishes, kept in memory."""
    calls = {"runs": [], "removed": [], "forgotten": [], "durations": []}
    monkeypatch.setattr(device_claims.cluster_state, "publish_run",
                        lambda host, token, entry: calls["runs"].append((host, token, entry)))
    monkeypatch.setattr(device_claims.cluster_state, "remove_run", lambda host, token: calls["removed"].append(token))
    monkeypatch.setattr(device_claims.allocation_state, "forget_probed",
                        lambda search, number: calls["forgotten"].append(number))
    monkeypatch.setattr(device_claims.allocation_state, "record_duration",
                        lambda search, host, gang, seconds, since=None: calls["durations"].append((gang, since)))
    monkeypatch.setattr(device_claims.slots, "set_current", lambda current: None)
    return calls


def simulated(held, on_probe=None):
    from evaluators.simulated import simulate

    return simulate("abc", individual()["evaluation"], epochs=2, slowdown=0.001, gang=len(held), on_probe=on_probe)


def test_a_probe_inside_the_evaluation_trains_on_when_the_decision_keeps_its_device(tmp_path, shared, published,
                                                                                     monkeypatch):
    from nas.allocation import Allocation

    book = device_claims.Ledger(["cpu"] * 2, tmp_path)
    seen = []

    def keep(ind, sizes, book_, host, known, holding=0):
        seen.append((known, holding, len(book_.free())))
        return Allocation(host, 1, "gang of 1: it is short", "plan", 10.0, 1)

    monkeypatch.setattr(device_claims, "choose", keep)
    result = device_claims.probe_inside(individual(), (1, 2), book, "h", simulated)
    assert result.ok and result.metrics["allocation_continued"] == "probe" and result.metrics["gang"] == "1"
    assert seen == [(pytest.approx(2.0 * 0.001), 1, 1)]  # decided with its own length, its device counted free
    assert result.metrics["allocation"] == "gang of 1: it is short"
    assert published["runs"][0][2]["single"] == pytest.approx(0.002) and published["removed"] and len(book.free()) == 2
    assert shared["probed"] == [(11, pytest.approx(0.002))]
    # its duration fades from its start: the model's count then, as its running entry published it
    assert published["durations"] == [(1, published["runs"][0][2]["observed"])]


def test_a_probe_inside_the_evaluation_hands_over_what_it_measured_when_the_decision_moves_it(
        tmp_path, shared, published, monkeypatch):
    from nas.allocation import Allocation

    book = device_claims.Ledger(["cpu"] * 2, tmp_path)
    monkeypatch.setattr(device_claims, "choose", lambda *args, **kwargs: Allocation("h", 2, "gang of 2", "plan"))
    known, final = device_claims.probe_inside(individual(), (1, 2), book, "h", simulated)
    assert final and known == pytest.approx(0.002) and len(book.free()) == 2 and published["runs"] == []
    # a decision that fails goes on where it was probed; an evaluation that fails first leaves the decision undone

    def broken(*args, **kwargs):
        raise RuntimeError("redis went away")

    monkeypatch.setattr(device_claims, "choose", broken)
    result = device_claims.probe_inside(individual(), (1, 2), book, "h", simulated)
    assert result.ok and result.metrics["allocation_continued"] == "probe" and "failed" in result.metrics["allocation"]
    failing = lambda held, on_probe=None: device_claims.EvaluationResult.failed("error", "before any step")  # noqa
    assert device_claims.probe_inside(individual(), (1, 2), book, "h", failing) == (None, True)
    for index in range(2):
        (tmp_path / f"device.{index}").write_text("1")  # held by another live process
    assert device_claims.probe_inside(individual(), (1, 2), book, "h", simulated) == (None, False)


def test_a_wide_probe_is_the_start_of_the_evaluation_on_its_gang_and_trains_on_when_the_decision_keeps_it(
        tmp_path, shared, published, monkeypatch):
    """With a wide part, the probe's one-device part runs apart on the first of the gang's devices, then the
    evaluation starts on the whole gang: its first steps give the gang's rate, and a decision that keeps that gang
    trains on (the gang start is paid once); any other hands over the length it measured."""
    from nas.allocation import Allocation

    monkeypatch.setenv("NAS_SIM_SLOWDOWN", "0.001")  # the one-device part as fast as ``simulated``
    book = device_claims.Ledger(["cpu"] * 4, tmp_path)
    assert device_claims.inside_gang(individual(), (1, 2, 4), book, "h") == (4, True)  # scaling matters (fixture)
    measured, seen = [], []
    real = device_claims.rate_probe.measure
    monkeypatch.setattr(device_claims.rate_probe, "measure",
                        lambda ind, gangs: measured.append((gangs, len(book.free()))) or real(ind, gangs))

    def keep(ind, sizes, book_, host, known, holding=0):
        seen.append((known, holding, len(book_.free())))
        return Allocation(host, 4, "gang of 4: it scales", "plan", 10.0, 4)

    monkeypatch.setattr(device_claims, "choose", keep)
    result = device_claims.probe_inside(individual(), (1, 2, 4), book, "h", simulated, 4)
    assert measured == [([["cpu"]], 0)]  # the one-device part alone, the gang's four devices held
    assert result.ok and result.metrics["gang"] == "4" and result.metrics["allocation_continued"] == "probe"
    assert seen == [(pytest.approx(0.002), 4, 0)]  # decided with its length, its gang counted free
    assert [set(rates) for _, rates in shared["rates"]] == [{1, 4}]  # the efficiency: the ratio of the two rates
    host, rates = shared["rates"][0]
    assert rates[4] / rates[1] == pytest.approx(4 * 0.9 ** 2)  # the simulated efficiency per doubling
    assert published["runs"][0][2]["gang"] == 4 and len(book.free()) == 4
    monkeypatch.setattr(device_claims, "choose", lambda *args, **kwargs: Allocation("h", 1, "gang of 1", "plan"))
    known, final = device_claims.probe_inside(individual(), (1, 2, 4), book, "h", simulated, 4)
    assert final and known == pytest.approx(0.002) and len(book.free()) == 4 and len(published["runs"]) == 1
    monkeypatch.setattr(device_claims.rate_probe, "measure", lambda ind, gangs: None)  # a failed one-device part
    assert device_claims.probe_inside(individual(), (1, 2, 4), book, "h", simulated, 4) == (None, True)
    assert len(book.free()) == 4


def test_a_length_alone_is_timed_on_the_gang_it_would_get_and_trains_on_there(tmp_path, shared, published,
                                                                               monkeypatch):
    """Where the length matters and the candidate would get a pair untimed (``nas.allocation.length_gang``), the
    evaluation starts on that pair with no one-device part: the pair's rate, through the efficiency the model
    expects, gives its seconds on one device (no efficiency is recorded: there is no ratio), and a decision that
    keeps the pair trains on; with fewer devices free than the gang, one device."""
    from nas.allocation import Allocation, single_from_gang

    monkeypatch.setenv("NAS_SIM_SLOWDOWN", "0.001")
    book = device_claims.Ledger(["cpu"] * 4, tmp_path)
    monkeypatch.setattr(device_claims, "_scaling_gang", lambda ind, sizes, book_, host, wide: 1)
    monkeypatch.setattr(device_claims, "_length_gang", lambda ind, sizes, book_, host: 2)
    model = ThroughputModel()
    for gang in (2, 4, 2, 4):
        model.observe_rates("h", {1: 10.0, gang: 10.0 * gang * 0.9})  # the search has its efficiency probes
    monkeypatch.setattr(device_claims.allocation_state, "load_model", lambda search: model)
    assert device_claims.inside_gang(individual(), (1, 2, 4), book, "h") == (2, False)
    monkeypatch.setattr(device_claims.rate_probe, "measure", lambda ind, gangs: pytest.fail("no one-device part"))
    seen = []

    def keep(ind, sizes, book_, host, known, holding=0):
        seen.append((known, holding))
        return Allocation(host, 2, "gang of 2", "plan", 10.0, 2)

    monkeypatch.setattr(device_claims, "choose", keep)
    result = device_claims.probe_inside(individual(), (1, 2, 4), book, "h", simulated, 2, apart=False)
    assert result.ok and result.metrics["gang"] == "2" and result.metrics["allocation_continued"] == "probe"
    from evaluators.simulated import probe_rates

    answer = probe_rates("abc", individual()["evaluation"], [2], epochs=2, slowdown=0.001)
    expected = single_from_gang(model, "h", 2, answer["rates"][2], answer["steps"])
    assert seen == [(pytest.approx(expected), 2)] and shared["probed"] == [(11, pytest.approx(expected))]
    assert expected == pytest.approx(0.002 * model.efficiency("h", 2) / 0.9)  # the model's efficiency, not 0.9
    assert shared["rates"] == [] and len(book.free()) == 4
    for index in range(3):
        (tmp_path / f"device.{index}").write_text("1")  # held by another live process: one device free
    assert device_claims.inside_gang(individual(), (1, 2, 4), book, "h") == (1, True)


def test_a_model_that_cannot_be_read_publishes_no_count_and_its_duration_counts_in_full(tmp_path, shared, published,
                                                                                         monkeypatch):
    monkeypatch.setattr(device_claims.allocation_state, "read_model", lambda search: None)
    book = device_claims.Ledger(["cpu"] * 2, tmp_path)
    token, observed = device_claims._started(individual(), book, "h", [0], None)
    assert observed is None and "observed" not in published["runs"][0][2] and published["runs"][0][2]["gang"] == 1
