"""The allocator of gangs: the efficiency curve, the gang sizes a worker allows, the throughput model learned
from measurements, and the choice per dispatch (one device each while work abounds, bigger gangs in a tail)."""
from __future__ import annotations

import json
import math

import pytest

from nas.allocation import (
    Allocator,
    HostState,
    Pending,
    ThroughputModel,
    check_efficiency,
    efficiency,
    gang_duration,
    gang_sizes,
)

SIZES = (1, 2, 4, 8, 16)


def host(free: int = 16, busy: tuple[float, ...] = (), sizes=SIZES, devices: int = 16, name: str = "h") -> HostState:
    return HostState(name, sizes, devices, free, busy)


# --- efficiency and gang sizes ---------------------------------------------------------------------------------

def test_efficiency_per_doubling_and_duration_model():
    assert efficiency(1, 0.5) == 1.0
    assert efficiency(4, 0.9) == pytest.approx(0.81)
    assert gang_duration(60.0, 4, 0.9) == pytest.approx(60.0 / (4 * 0.81))


def test_efficiency_table_interpolates_and_extrapolates():
    spec = {"2": 0.9, "8": 0.729}
    assert efficiency(2, spec) == 0.9
    assert efficiency(4, spec) == pytest.approx(0.81)  # geometric between 2 and 8
    assert efficiency(16, spec) == pytest.approx(0.9 ** 4)  # beyond 8: the average loss per doubling goes on


@pytest.mark.parametrize("spec, field_text", [(0, "(0, 1]"), (1.5, "(0, 1]"), ({"x": 0.9}, "gang sizes"),
                                              ({"2": 2.0}, "efficiency[2]"), ("fast", "number"), (True, "number")])
def test_bad_efficiency_names_the_field(spec, field_text):
    with pytest.raises(ValueError, match="efficiency") as error:
        check_efficiency(spec)
    assert field_text in str(error.value)


def test_gang_sizes_auto_and_fixed():
    assert gang_sizes(4) == (1, 2, 4)
    assert gang_sizes(4, "2") == (2,)
    assert gang_sizes(1, "auto") == (1,)


@pytest.mark.parametrize("devices, gang, message", [
    (4, 8, "--gang 8 is larger than the 4 device(s)"),
    (4, 3, "--gang 3 does not split 4 devices into equal gangs (choose 1, 2, 4 or auto)"),
    (4, 0, "--gang must be at least 1"),
    (4, "many", "--gang must be auto or a number"),
])
def test_bad_gang_is_one_line(devices, gang, message):
    with pytest.raises(ValueError) as error:
        gang_sizes(devices, gang)
    assert message in str(error.value) and "\n" not in str(error.value)


# --- the throughput model --------------------------------------------------------------------------------------

def test_prior_before_any_measurement():
    model = ThroughputModel(prior_duration=100.0, prior_efficiency=0.9)
    assert model.duration("h", 1) == 100.0
    assert model.duration("h", 2) == pytest.approx(100.0 / (2 * 0.9))


def test_measurements_move_the_estimates():
    model = ThroughputModel(prior_duration=100.0, prior_efficiency=0.9)
    for _ in range(20):
        model.observe("h", 1, 10.0)
    assert model.duration("h", 1) == pytest.approx(10.0)
    assert model.duration("h", 2) == pytest.approx(10.0 / 1.8)  # derived from the measured single through the prior
    for _ in range(30):
        model.observe("h", 2, 9.0)  # this host's pairs scale badly
    assert model.efficiency("h", 2) < 0.6
    assert model.per_device_hour("h", 1) > model.per_device_hour("h", 2)


def test_unmeasured_host_borrows_and_failures_are_ignored():
    model = ThroughputModel(prior_duration=100.0)
    model.observe("a", 1, 20.0)
    model.observe("b", 1, float("nan"))
    model.observe("b", 1, 0.0)
    assert model.single("b") == 20.0
    model.observe("c", 4, 5.0)
    assert model.single("c") == pytest.approx(5.0 * 4 * efficiency(4))


def test_model_json_round_trip():
    model = ThroughputModel(prior_duration=30.0, prior_efficiency={"2": 0.95})
    model.observe("h", 1, 12.0)
    model.observe("h", 4, 4.0)
    again = ThroughputModel.from_state(json.loads(json.dumps(model.state_dict())))
    assert again.state_dict() == model.state_dict()
    assert again.duration("h", 4) == model.duration("h", 4)


# --- the policy ------------------------------------------------------------------------------------------------

def allocator(single: float = 60.0, per_doubling: float = 0.9) -> Allocator:
    return Allocator(ThroughputModel(prior_duration=single, prior_efficiency=per_doubling))


def test_many_candidates_get_one_device_each():
    choice = allocator().choose([host()], Pending(waiting=16, more=None))
    assert (choice.host, choice.gang, choice.rule) == ("h", 1, "throughput")
    assert "evaluations per device-hour" in choice.reason
    assert allocator().choose([host()], Pending(waiting=16, more=500)).gang == 1


def test_generation_tail_gets_more_devices_each():
    choice = allocator().choose([host()], Pending(waiting=4, more=0))
    assert (choice.gang, choice.rule) == (4, "tail")
    assert "4 candidates left" in choice.reason and "instead of" in choice.reason


def test_last_candidate_takes_the_whole_host_when_it_scales():
    assert allocator(per_doubling=0.95).choose([host()], Pending(waiting=1, more=0)).gang == 16


def test_poor_scaling_keeps_one_device():
    # efficiency 0.5 per doubling: a gang of g finishes no sooner than one device
    choice = allocator(per_doubling=0.5).choose([host()], Pending(waiting=2, more=0))
    assert choice.gang == 1


def test_tail_waits_for_devices_about_to_free():
    busy = tuple([1.0] * 15)  # the other 15 free in a second; one device alone would take a minute
    choice = allocator().choose([host(free=1, busy=busy)], Pending(waiting=3, more=0))
    assert choice.host is None and choice.rule == "wait" and choice.gang > 1


def test_gangs_never_span_hosts_and_fill_the_tightest_host():
    hosts = [host(free=4, sizes=(1, 2, 4), devices=4, name="a"), host(free=2, sizes=(1, 2), devices=4, name="b")]
    choice = allocator(per_doubling=0.95).choose(hosts, Pending(waiting=1, more=0))
    assert (choice.host, choice.gang) == ("a", 4)
    assert allocator().choose(hosts, Pending(waiting=10, more=None)).host == "b"  # best fit keeps a's block


def test_fixed_gang_is_used_as_is():
    choice = allocator().choose([host(sizes=(2,), devices=4, free=1)], Pending(waiting=1, more=0))
    assert (choice.host, choice.gang, choice.rule) == (None, 2, "wait")
    choice = allocator().choose([host(sizes=(2,), devices=4, free=4)], Pending(waiting=1, more=0))
    assert (choice.host, choice.gang, choice.rule) == ("h", 2, "fixed")


def test_reason_is_json_and_bad_input_is_named():
    choice = allocator().choose([host()], Pending(waiting=2, more=0))
    assert json.loads(json.dumps(choice.to_dict()))["reason"] == choice.reason
    with pytest.raises(ValueError, match="waiting"):
        allocator().choose([host()], Pending(waiting=0))
    with pytest.raises(ValueError, match="gang sizes"):
        HostState("x", (8,), 4, 4)
    with pytest.raises(ValueError, match="prior_duration"):
        ThroughputModel(prior_duration=-1)
    assert not math.isnan(allocator().choose([host()], Pending(1, 0)).gang)


def test_spread_is_learned_and_plans_are_reproducible():
    model = ThroughputModel(prior_duration=10.0)
    assert model.spread() == 0.0
    for seconds in (10.0, 20.0, 5.0, 10.0, 20.0, 5.0):
        model.observe("h", 1, seconds)
    assert model.spread() > 0.3
    choices = [Allocator(ThroughputModel.from_state(model.state_dict()), seed=7).choose([host()], Pending(12, 0))
               for _ in range(2)]
    assert choices[0] == choices[1]
