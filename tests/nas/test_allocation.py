"""The allocator of gangs: the efficiency curve, the gang sizes a worker allows, the throughput model learned
from measurements, the choice per dispatch (the plan whose remaining work ends soonest) and the decision from host
records as gang workers publish them."""
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
    decide,
    efficiency,
    gang_duration,
    gang_sizes,
    host_state,
    running_entry,
    time_left,
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
    model = ThroughputModel(prior_duration=100.0, prior_efficiency=0.9, prior_spread=0.4)
    assert model.duration("h", 1) == pytest.approx(100.0)
    assert model.duration("h", 2) == pytest.approx(100.0 / (2 * 0.9))
    assert model.spread() == 0.4 and model.measurements(2) == 0


def test_measurements_move_the_estimates():
    model = ThroughputModel(prior_duration=100.0, prior_efficiency=0.9)
    for _ in range(40):
        model.observe("h", 1, 10.0)
    assert model.duration("h", 1) == pytest.approx(10.0, rel=0.1)  # the prior spread fades as data come
    assert model.duration("h", 2) == pytest.approx(10.0 / 1.8, rel=0.1)  # unmeasured: through the prior curve
    for _ in range(40):
        model.observe("h", 2, 9.0)  # this search's pairs scale badly
    assert model.efficiency("h", 2) < 0.65  # measured 10 / (2 x 9) = 0.56
    assert model.per_device_hour("h", 1) > model.per_device_hour("h", 2)
    assert model.measurements(2) == 40


def test_a_few_slow_candidates_on_a_gang_do_not_condemn_it():
    # widely spread durations: two long candidates on pairs are weak evidence, shrunk towards the prior
    model = ThroughputModel(prior_duration=100.0, prior_efficiency=0.9)
    for seconds in (40.0, 300.0, 90.0, 20.0, 150.0, 60.0):
        model.observe("h", 1, seconds)
    for seconds in (120.0, 150.0):
        model.observe("h", 2, seconds)
    assert model.spread() > 0.5
    assert 0.5 < model.efficiency("h", 2) <= 1.0


def test_a_gang_is_never_more_than_perfectly_efficient():
    model = ThroughputModel(prior_duration=100.0)
    for seconds in (100.0, 100.0, 100.0):
        model.observe("h", 1, seconds)
    for _ in range(10):
        model.observe("h", 4, 5.0)  # the short ones end first: it looks 5x faster than possible
    assert model.efficiency("h", 4) <= 1.0 + 1e-9


def test_hosts_share_the_search_and_failures_are_ignored():
    model = ThroughputModel(prior_duration=100.0, prior_spread=0.0)
    model.observe("a", 1, 20.0)
    model.observe("b", 1, float("nan"))
    model.observe("b", 1, 0.0)
    assert model.single("b") == pytest.approx(20.0)  # an unmeasured host: the search's typical one
    assert model.measurements(1) == 1


def test_model_json_round_trip():
    model = ThroughputModel(prior_duration=30.0, prior_efficiency={"2": 0.95})
    model.observe("h", 1, 12.0)
    model.observe("h", 4, 4.0)
    again = ThroughputModel.from_state(json.loads(json.dumps(model.state_dict())))
    assert again.state_dict() == model.state_dict()
    assert again.duration("h", 4) == model.duration("h", 4)
    old = ThroughputModel.from_state({"prior_duration": 30.0, "estimates": [["h", 1, 12.0, 3]]})
    assert old.duration("h", 1) == pytest.approx(12.0 * math.exp(old.spread() ** 2 / 2), rel=0.2)


def test_time_left_of_a_running_evaluation():
    assert time_left(100.0, 0.0, 0.5) == pytest.approx(100.0)
    assert time_left(100.0, 30.0, 0.0) == pytest.approx(70.0)
    # spread durations: one still running past its expectation is likely a long one, with time left
    assert 0 < time_left(100.0, 200.0, 1.0) and time_left(100.0, 50.0, 1.0) > 50.0
    assert math.isfinite(time_left(100.0, 1e6, 1.0))


# --- the policy ------------------------------------------------------------------------------------------------

def allocator(single: float = 60.0, per_doubling: float = 0.9, spread: float = 0.3, **options) -> Allocator:
    options.setdefault("probe", 0)  # the plans alone; probes have their own test
    return Allocator(ThroughputModel(prior_duration=single, prior_efficiency=per_doubling, prior_spread=spread),
                     **options)


def test_many_candidates_of_similar_length_get_one_device_each():
    choice = allocator().choose([host()], Pending(waiting=16, more=None))
    assert (choice.host, choice.gang, choice.rule) == ("h", 1, "plan")
    assert "no end in sight" in choice.reason and "expected to finish in ~" in choice.reason
    assert allocator().choose([host()], Pending(waiting=16, more=500)).gang == 1


def test_generation_tail_gets_more_devices_each():
    choice = allocator().choose([host()], Pending(waiting=4, more=0))
    assert choice.gang >= 4 and choice.rule == "plan" and choice.finish is not None
    assert "remaining 4 candidates" in choice.reason and "against ~" in choice.reason


def test_widely_spread_durations_call_for_gangs_even_with_much_work():
    # 48 candidates on 16 devices: one device each by throughput, but the longest of them sets the end
    calm = allocator(per_doubling=0.9, spread=0.1).choose([host()], Pending(waiting=48, more=0))
    wild = allocator(per_doubling=0.9, spread=1.2).choose([host()], Pending(waiting=48, more=0))
    assert calm.gang == 1 and wild.gang > 1


def test_last_candidate_takes_a_big_gang_when_it_scales():
    # 16 is not sure to scale until measured (the plans draw its efficiency as uncertain as it is): 8 or 16
    assert allocator(per_doubling=0.95).choose([host()], Pending(waiting=1, more=0)).gang >= 8


def test_poor_scaling_keeps_one_device():
    # efficiency 0.4 per doubling: a gang of g finishes later than one device (at 0.5 they tie, and the plans'
    # draws of an unmeasured efficiency decide a tie by a few %)
    choice = allocator(per_doubling=0.4).choose([host()], Pending(waiting=2, more=0))
    assert choice.gang == 1


def test_tail_waits_for_devices_about_to_free():
    busy = tuple([1.0] * 15)  # the other 15 free in a second; one device alone would take a minute
    choice = allocator().choose([host(free=1, busy=busy)], Pending(waiting=3, more=0))
    assert choice.host is None and choice.rule == "wait" and choice.gang > 1


def test_gangs_never_span_hosts_and_fill_the_tightest_host():
    hosts = [host(free=4, sizes=(1, 2, 4), devices=4, name="a"), host(free=2, sizes=(1, 2), devices=4, name="b")]
    choice = allocator(per_doubling=0.95).choose(hosts, Pending(waiting=1, more=0))
    assert (choice.host, choice.gang) == ("a", 4)
    assert allocator().choose(hosts, Pending(waiting=40, more=None)).host == "b"  # best fit keeps a's block


def test_a_worker_places_only_on_its_own_host():
    hosts = [host(free=4, sizes=(1, 2, 4), devices=4, name="a"), host(free=1, sizes=(1, 2, 4), devices=4, name="b",
                                                                        busy=(500.0, 500.0, 500.0))]
    choice = allocator(per_doubling=0.95).choose(hosts, Pending(waiting=1, more=0), here="b")
    assert choice.host in ("b", None)
    with pytest.raises(ValueError, match="not among"):
        allocator().choose(hosts, Pending(1, 0), here="c")


def test_fixed_gang_is_used_as_is():
    choice = allocator().choose([host(sizes=(2,), devices=4, free=1)], Pending(waiting=1, more=0))
    assert (choice.host, choice.gang, choice.rule) == (None, 2, "wait")
    choice = allocator().choose([host(sizes=(2,), devices=4, free=4)], Pending(waiting=1, more=0))
    assert (choice.host, choice.gang, choice.rule) == ("h", 2, "fixed")


def test_an_unmeasured_gang_size_is_probed_when_cheap():
    model = ThroughputModel(prior_duration=60.0, prior_spread=0.3)
    for _ in range(6):
        model.observe("h", 1, 60.0)
    choice = Allocator(model, probe_cost=0.5).choose([host(devices=4, free=4, sizes=(1, 2, 4))], Pending(8, 0))
    assert choice.rule == "probe" and choice.gang in (2, 4) and "probe" in choice.reason


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
    model = ThroughputModel(prior_duration=10.0, prior_spread=0.0)
    assert model.spread() == 0.0
    for seconds in (10.0, 20.0, 5.0, 10.0, 20.0, 5.0):
        model.observe("h", 1, seconds)
    assert model.spread() > 0.3
    choices = [Allocator(ThroughputModel.from_state(model.state_dict()), seed=7).choose([host()], Pending(12, 0))
               for _ in range(2)]
    assert choices[0] == choices[1]


# --- the decision from published host records ------------------------------------------------------------------

def test_host_records_count_every_search_as_busy_with_its_time_left():
    model = ThroughputModel(prior_duration=100.0, prior_spread=0.5)
    record = {"host": "a", "devices": 4, "sizes": [1, 2, 4],
              "running": [running_entry(7, 2, 1000.0, model, "a"), running_entry("other", 1, 1050.0, model, "a")]}
    state = host_state(record, now=1060.0)
    assert (state.free, len(state.busy)) == (1, 3)
    assert sorted(state.busy)[0] == pytest.approx(time_left(model.duration("a", 2), 60.0, 0.5), rel=1e-3)
    assert host_state(record, now=1060.0, free=2).free == 2  # the worker's ledger knows its own host exactly


def test_decide_is_the_allocator_on_the_published_cluster():
    model = ThroughputModel(prior_duration=100.0, prior_spread=0.3)
    records = [{"host": "a", "devices": 4, "sizes": [1, 2, 4], "running": []},
               {"host": "b", "devices": 4, "sizes": [1, 2, 4],
                "running": [running_entry(1, 4, 0.0, model, "b")]}]
    choice = decide(model, records, Pending(2, 0), now=10.0, here="a")
    hosts = [host_state(record, 10.0) for record in records]
    assert choice == Allocator(model).choose(hosts, Pending(2, 0), here="a")
    assert choice.host == "a"


# --- censored durations and plans the allocator keeps ----------------------------------------------------------

def test_running_evaluations_count_as_at_least_as_long_as_they_have_run():
    # the short candidates end first: from the finished ones alone the search looks faster than it is
    model = ThroughputModel(prior_duration=100.0, prior_spread=0.5)
    for seconds in (40.0, 50.0, 60.0):
        model.observe("h", 1, seconds)
    finished_only = model.duration("h", 1)
    model.running([("h", 1, 200.0)] * 6)
    assert model.duration("h", 1) > 1.5 * finished_only
    model.running([])
    assert model.duration("h", 1) == pytest.approx(finished_only)


def test_decide_feeds_the_searchs_running_evaluations_to_the_model():
    model = ThroughputModel(prior_duration=100.0, prior_spread=0.5)
    model.observe("a", 1, 50.0)
    before = model.duration("a", 1)
    records = [{"host": "a", "devices": 4, "sizes": [1, 2, 4],
                "running": [running_entry(1, 1, 0.0, model, "a"), running_entry(1, 1, 0.0, model, "a"),
                            running_entry("other", 1, 0.0, model, "a")]}]
    decide(model, records, Pending(1, 3), now=400.0, here="a", search=1)
    # its own only, other searches' are not its data; each in full (their starts' counts are the model's now)
    assert model._censored == (("a", 1, 400.0, 1.0), ("a", 1, 400.0, 1.0))
    assert model.duration("a", 1) > before


def test_a_gang_that_does_not_fit_yet_is_waited_for_not_filled_one_device_at_a_time():
    # candidates that scale well with a wide spread: gangs of 4 for the rest. Running one on the device free now
    # ("1 now, 4 for the rest") at every dispatch would never leave 4 free: it waits for them instead
    model = ThroughputModel(prior_duration=100.0, prior_efficiency={"2": 0.99, "4": 0.97}, prior_spread=1.0)
    for gang, seconds in ((1, 60.0), (1, 160.0), (2, 30.0), (2, 80.0), (4, 15.0), (4, 40.0)):
        model.observe("h", gang, seconds)  # every size measured twice: no probe
    busy = host(free=1, busy=(200.0, 200.0, 200.0), sizes=(1, 2, 4), devices=4)
    choice = Allocator(model).choose([busy], Pending(1, 11))
    assert (choice.host, choice.gang, choice.rest) == (None, 4, 4)
    assert Allocator(model, uniform=False).choose([busy], Pending(1, 11)).gang == 1  # the mixed plan it avoids


# --- scaling probes ------------------------------------------------------------------------------------------

def _probe_rates(rho: float, single: float, gang: int = 4, steps: float = 1000.0) -> dict[int, float]:
    return {1: steps / single, gang: steps / gang_duration(single, gang, {str(gang): rho ** (gang - 1)})}


@pytest.mark.parametrize("rho", [0.6, 0.97])
def test_probes_learn_the_efficiency_before_any_evaluation_ends(rho):
    model = ThroughputModel(prior_duration=300.0)
    for single in (50.0, 300.0, 2000.0, 700.0):  # a wide spread of lengths: the ratio is free of it
        model.observe_rates("h", _probe_rates(rho, single))
    assert model.rates_measured(4) == 4 and model.measurements(4) == 0
    assert model.efficiency("h", 4) == pytest.approx(rho ** 3, rel=0.05)
    assert abs(model.uncertainty(4)) < 0.1 < abs(ThroughputModel().uncertainty(4))
    restored = ThroughputModel.from_state(json.loads(json.dumps(model.state_dict())))
    assert restored.efficiency("h", 4) == pytest.approx(model.efficiency("h", 4))
    assert restored.rates_measured(4) == 4


@pytest.mark.parametrize("rates", [{1: 10.0}, {1: 0.0, 4: 3.0}, {0: 1.0, 2: 1.0}, {1: float("nan"), 2: 1.0}])
def test_a_bad_probe_is_refused_and_changes_nothing(rates):
    model = ThroughputModel()
    before = model.efficiency("h", 4)
    if len(rates) == 1:  # one size: nothing to compare, nothing learned
        model.observe_rates("h", rates)
    else:
        with pytest.raises(ValueError, match="rates"):
            model.observe_rates("h", rates)
    assert model.efficiency("h", 4) == before and model.rates_measured(4) == 0


def test_probed_durations_count_until_their_evaluation_ends():
    model = ThroughputModel(prior_duration=60.0)
    model.probed([("h", 300.0), ("h", 330.0), ("h", 270.0)])
    assert 250 < model.single("h") < 360
    model.probed([])
    assert model.single("h") == pytest.approx(60.0)


def test_a_probed_long_candidate_gets_a_wider_gang_than_a_short_one():
    model = ThroughputModel(prior_duration=300.0)
    for single in (300.0, 250.0, 350.0, 320.0):
        model.observe_rates("h", _probe_rates(0.97, single))
    hosts = [host(free=16, sizes=(1, 2, 4, 8, 16))]
    others = tuple([300.0] * 23)
    long = Allocator(model).choose(hosts, Pending(24, 0, known=6000.0, probes=others))
    short = Allocator(model).choose(hosts, Pending(24, 0, known=100.0, probes=others))
    assert long.gang > short.gang
    assert "its probe: ~6,000 s on one device" in long.reason and long.rule == "plan"


def test_decide_takes_a_probed_running_evaluation_by_its_own_length():
    model = ThroughputModel(prior_duration=100.0)
    entry = running_entry(7, 2, 0.0, model, "a", single=800.0)
    assert entry["single"] == 800.0 and entry["expected"] == pytest.approx(800.0 * model.duration("a", 2)
                                                                          / model.duration("a", 1), rel=1e-3)
    record = {"host": "a", "devices": 4, "sizes": [1, 2, 4], "running": [entry]}
    state = host_state(record, 100.0)
    assert state.busy[0] == pytest.approx(entry["expected"] - 100.0, rel=0.05)
    decide(model, [record], Pending(3, 0), 100.0, "a", search=7)
    assert model.single("a") > 300  # the probed 800 s counts as a measured duration, not as "at least 100 s"


def test_the_probe_rule_asks_for_efficiency_probes_until_enough_and_lengths_while_the_spread_is_wide():
    from nas.allocation import ProbeRule, single_seconds

    rule, model = ProbeRule(pairs=2, min_spread=0.45), ThroughputModel(prior_duration=300.0, prior_spread=0.3)
    assert not rule.wanted(model, (1,))  # one size: nothing to decide
    assert rule.wanted(model, (1, 2, 4)) and rule.wide_gang(model, (1, 2, 4), 4) == 4
    assert rule.wide_gang(model, (1, 2, 4), 3) == 2 and rule.wide_gang(model, (1, 2, 4), 1) == 1
    for single in (300.0, 320.0):
        model.observe_rates("h", _probe_rates(0.9, single))
    assert rule.wide_gang(model, (1, 2, 4), 4) == 1  # enough probes of quads
    assert not rule.wanted(model, (1, 2, 4))  # and the spread (0.3) makes lengths predictable
    pairs = ThroughputModel(prior_duration=300.0, prior_spread=0.3)
    for single in (300.0, 320.0):
        pairs.observe_rates("h", _probe_rates(0.9, single, gang=2))
    assert rule.wide_gang(pairs, (1, 2, 4), 4) == 1  # probes of pairs count: one slope fits every size
    assert rule.wanted(ThroughputModel(prior_duration=300.0, prior_spread=1.0), (1, 2))  # not here
    assert single_seconds({1: 4.0, 2: 7.0}, 1000) == 250.0
