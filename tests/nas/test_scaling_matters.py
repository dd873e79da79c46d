"""Whether measuring how a gang scales is worth its cost, and on which gang (``nas.allocation.scaling_gang`` for the
worker's wide probe, ``Allocator``'s probe plans for a candidate run on a gang to measure it): only where the
decision after a measurement that read good scaling and after one that read bad scaling differ."""
from __future__ import annotations

from nas.allocation import Allocator, HostState, Pending, ThroughputModel, decide, scaling_gang, scaling_matters
from nas.allocation.model import SCALES_BADLY, SCALES_WELL

NOW = 1000.0


def measured(spread: float = 0.3) -> ThroughputModel:
    """A search whose one-device durations are known (60 s, a few measurements), its gangs never measured."""
    model = ThroughputModel(prior_duration=60.0, prior_spread=spread)
    for seconds in (55.0, 60.0, 66.0, 60.0, 58.0, 62.0):
        model.observe("a", 1, seconds)
    return model


def records(model: ThroughputModel) -> list:
    return [{"host": "a", "devices": 4, "sizes": [1, 2, 4], "running": []}]


def test_as_if_probed_is_a_copy_that_learned_one_probe():
    model = measured()
    model.running([("a", 1, 30.0)])
    good, bad = model.as_if_probed("a", 4, SCALES_WELL), model.as_if_probed("a", 4, SCALES_BADLY)
    assert model.rates_measured() == 0 and good.rates_measured(4) == bad.rates_measured(4) == 1
    assert good.efficiency("a", 4) > model.efficiency("a", 4) > bad.efficiency("a", 4)
    assert abs(good.efficiency("a", 4) - SCALES_WELL ** 3) < 0.05
    assert abs(bad.efficiency("a", 4) - SCALES_BADLY ** 3) < 0.05
    assert good._censored == model._censored  # the running evaluations are part of what it knows


def test_many_short_candidates_per_device_go_one_each_however_they_scale():
    model = measured()
    pending = Pending(1, 199)  # 200 candidates of a minute on 4 devices
    assert not scaling_matters(model, records(model), pending, NOW, "a", 4, {"a": 4}, 1)
    assert scaling_gang(model, records(model), pending, NOW, "a", 4, {"a": 4}, 1) == 1
    assert decide(measured(), records(model), pending, NOW, "a", {"a": 4}, 1).gang == 1


def test_the_last_candidate_on_free_devices_goes_wide_only_if_it_scales():
    model = measured()
    pending = Pending(1, 0)
    assert scaling_matters(model, records(model), pending, NOW, "a", 4, {"a": 4}, 1)
    wide = decide(model.as_if_probed("a", 4, SCALES_WELL), records(model), pending, NOW, "a", {"a": 4}, 1)
    narrow = decide(model.as_if_probed("a", 4, SCALES_BADLY), records(model), pending, NOW, "a", {"a": 4}, 1)
    assert wide.gang == 4 and narrow.gang < 4  # a pair still beats one device at 0.6; a gang of 4 does not


def test_the_planner_runs_no_candidate_on_a_gang_to_measure_it_where_the_measure_changes_nothing():
    hosts = [HostState("a", (1, 2, 4), 4, 4)]
    few = Allocator(measured(), probe_cost=0.5).choose(hosts, Pending(8, 0), "a")
    assert few.rule == "probe" and few.gang in (2, 4)  # 8 on 4 devices: gangs may win if they scale
    many = Allocator(measured(), probe_cost=0.5).choose(hosts, Pending(200, 0), "a")
    assert many.rule == "plan" and many.gang == 1  # 200 on 4: one each, however they scale


def test_the_wide_probe_runs_on_the_gang_good_scaling_would_give_where_it_is_narrower():
    """Two candidates left on four free devices: good scaling gives each a pair, so the probe runs on a pair (it is
    the start of the candidate's evaluation, which trains on); the last one would take all four."""
    model = measured()
    assert scaling_gang(model, records(model), Pending(2, 0), NOW, "a", 4, {"a": 4}, 1) == 2
    assert scaling_gang(model, records(model), Pending(1, 0), NOW, "a", 4, {"a": 4}, 1) == 4
    assert scaling_gang(model, records(model), Pending(1, 0), NOW, "a", 2, {"a": 4}, 1) == 2  # never wider than asked
