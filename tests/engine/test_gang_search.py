"""A search on a gang worker (``evalworker --device cpu,cpu,cpu,cpu --gang auto``), simulated evaluations: the
allocator gives a generation's tail more devices each, and every individual records its devices and the reason."""
from __future__ import annotations

import pytest

from tests.conftest import ProcessLog, manage
from tests.engine.conftest import finished, launched
from webapp.searches.models import Individual, Search

pytestmark = pytest.mark.integration


def gang_config(devices) -> dict:
    return {
        "space": {"name": "chain", "max_layers": 6},
        "strategy": {"name": "generational", "seed": 1, "params": {"population": 6, "generations": 2}},
        "training": {"epochs": 2},
        "evaluation": {"mode": "simulated", "duration": 0.4, "efficiency": 0.95, "devices": devices},
    }


def gang_worker(stack, gang: str, devices: str = "cpu,cpu,cpu,cpu", node: str = "gangnode",
                wait: bool = True) -> ProcessLog:
    return stack.start(manage("evalworker", "--device", devices, "--gang", gang, "--node", node), wait)


def test_auto_gives_the_generation_tail_more_devices_and_records_why(stack):
    gang_worker(stack, "auto", wait=False)
    stack.control()
    search = finished(launched("gangs auto", gang_config("auto")).pk, timeout=120)
    assert search.status == Search.Status.FINISHED, search.status_reason
    individuals = list(Individual.objects.filter(search=search))
    assert individuals and all(i.status == Individual.Status.DONE for i in individuals)
    gangs = [int(i.metrics["gang"]) for i in individuals]
    assert max(gangs) > 1  # 6 candidates per generation on 4 devices: the tail takes more than one each
    for individual in individuals:
        assert len(individual.metrics["devices"].split(",")) == int(individual.metrics["gang"])
        assert individual.metrics["allocation"].split(":")[0].split(" of ")[0] in ("gang", "probe gang")
        assert float(individual.metrics["allocation_finish"]) >= 0
        assert individual.device == "cpux4" and individual.node == "gangnode"
    utilisation = Search.objects.get(pk=search.pk).stats
    assert utilisation.get("device_seconds", 0) > 0 and utilisation.get("device_busy", 0) > 0


def test_two_gang_workers_probe_and_decide_with_the_published_cluster_as_the_policy_computes(stack):
    from evaluators.simulated import draw_duration
    from nas.allocation import Allocation, Pending, ThroughputModel, decide, hand_back
    from webapp.messaging import allocation_state, cluster_state

    gang_worker(stack, "auto", "cpu,cpu", "gang-a", wait=False)
    gang_worker(stack, "auto", "cpu,cpu", "gang-b", wait=False)
    stack.control()
    config = gang_config("auto")
    # lengths spread widely: past the efficiency probes, each candidate's probe is its evaluation's first steps;
    # candidates that scale badly, more of them than devices: most decisions keep the probe's device and train on
    config["evaluation"].update(distribution="lognormal", sigma=1.0, duration=2.0, efficiency=0.6)
    config["strategy"]["params"]["population"] = 10
    search = finished(launched("gangs two hosts", config).pk, timeout=240)
    assert search.status == Search.Status.FINISHED, search.status_reason
    individuals = {i.pk: i for i in Individual.objects.filter(search=search)}
    assert individuals and all(i.status == Individual.Status.DONE for i in individuals.values())
    assert {i.node for i in individuals.values()} <= {"gang-a", "gang-b"}
    decisions = cluster_state.read_decisions(search.pk)
    taken = {}  # the last decision per individual is the one it ran with (earlier ones were waits or hand-backs)
    handed = 0
    for decision in decisions:
        hosts = {record["host"] for record in decision["records"]}
        assert {"gang-a", "gang-b"} <= hosts  # every worker published its host at start: each decision sees both
        pending = decision["pending"]
        again = decide(ThroughputModel.from_state(decision["model"]), decision["records"],
                       Pending(**{**pending, "probes": tuple(pending["probes"])}), decision["now"], decision["here"],
                       decision["free"], search=decision["search"])
        assert again == Allocation(**decision["choice"])  # the policy, replayed on the published (probed) state
        if decision["choice"]["host"] is None:  # told to wait: the hand-back it made (or not), replayed
            moved = hand_back(ThroughputModel.from_state(decision["model"]), decision["records"],
                              Pending(**{**pending, "probes": tuple(pending["probes"])}), decision["now"],
                              decision["here"], decision["free"], decision["search"], decision["handed"])
            assert moved == (Allocation(**decision["hand_back"]) if decision["hand_back"] else None)
            handed += moved is not None
        taken[decision["individual"]] = decision
    config = config["evaluation"]
    continued = 0
    for pk, individual in individuals.items():
        choice = taken[pk]["choice"]
        assert int(individual.metrics["gang"]) == choice["gang"]
        assert individual.metrics["allocation"] == choice["reason"][:300]
        assert individual.node == choice["host"]
        known = taken[pk]["pending"]["known"]
        if known is not None:  # the probe's answer: the simulated candidate's own seconds on one device
            assert known == pytest.approx(draw_duration(config, individual.key), rel=1e-6)
            assert individual.metrics["allocation_probe"] == f"{known:.1f}"
            assert "its probe" in choice["reason"]
        if individual.metrics.get("allocation_continued") == "probe":  # it trained on from its probe's steps (on
            continued += 1  # one device, or on the wide part's gang), which the decision counted free
            assert known is not None and taken[pk]["free"][choice["host"]] >= choice["gang"]
    # the first candidates were probed (no efficiency measured yet) and their rates reached the search's model
    assert any(decision["pending"]["known"] is not None for decision in decisions[:4])
    assert allocation_state.load_model(search.pk).rates_measured(2) >= 1
    assert not allocation_state.probed_waiting(search.pk)  # every probed candidate started
    assert continued >= 1  # a decision that kept the probe's device went on from it
    # each hand-back sent its candidate through the loop again: it ran once, on the host that started it, and says so
    assert sum(int(i.metrics.get("allocation_handed", 0)) for i in individuals.values()) == handed


def test_a_fixed_number_of_devices_is_used_for_every_candidate(stack):
    gang_worker(stack, "auto", wait=False)
    stack.control()
    search = finished(launched("gangs fixed", gang_config(2)).pk, timeout=120)
    assert search.status == Search.Status.FINISHED, search.status_reason
    individuals = list(Individual.objects.filter(search=search))
    assert individuals and {i.metrics["gang"] for i in individuals} == {"2"}
    assert all(i.metrics["allocation"].startswith("fixed") for i in individuals)


def test_device_utilisation_counts_a_gang_as_its_devices():
    from webapp.searches import accounting

    stats = accounting.new_stats(0.0)
    accounting.count_result(stats, node="n", device="cpux4", slot="n/cpux4/0", ok=True, duration=10.0, finished=10.0,
                            nbytes=0, devices=4)
    accounting.count_result(stats, node="n", device="cpux4", slot="n/cpux4/1", ok=True, duration=10.0, finished=10.0,
                            nbytes=0)
    assert accounting.summary(stats)["utilisation"] is None  # nothing available measured yet
    accounting.add_device_time(stats, 100.0)
    assert accounting.summary(stats)["utilisation"] == pytest.approx(0.5)  # (4 x 10 + 1 x 10) / 100


def test_the_timeline_names_the_devices_a_gang_held():
    from webapp.dashboard import charts

    point = {"number": 3, "description": "chain", "devices": "cuda:0,cuda:1"}
    assert charts.hover(point) == "#3 chain on cuda:0,cuda:1"
    assert charts.hover({"number": 3, "description": "chain", "devices": None}) == "#3 chain"
    why = {**point, "allocation": "gang of 2: the remaining 9 candidates ... <b>", "allocation_finish": "1840"}
    assert charts.hover(why).endswith("<br>gang of 2: the remaining 9 candidates ... &lt;b&gt; "
                                      "(plan done ~1840 s after)")
