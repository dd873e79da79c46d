"""The allocation benchmark's simulation (``benchmarks/allocation_sim.py``) and the simulated evaluator's gangs."""
from __future__ import annotations

import pytest

from benchmarks.allocation_sim import Cluster, Scenario, plan_policy, simulate_search
from evaluators.simulated import draw_duration, simulate

TAIL = Scenario("tail", "generational", {"population": 6, "generations": 2}, duration=100.0, sigma=0.0,
                efficiency=0.95)


def test_every_split_evaluates_the_same_search_and_accounts_devices():
    fixed = simulate_search(TAIL, 8, 1)
    auto = simulate_search(TAIL, 8, "auto")
    assert fixed.evaluations == auto.evaluations > 0
    assert set(fixed.gangs) == {1}
    for outcome in (fixed, auto):
        assert 0 < outcome.utilisation(8) <= 1.0 + 1e-9
        assert outcome.speedup() <= 8.0 + 1e-9


def test_auto_gives_a_generation_tail_more_devices():
    # 6 candidates per generation on 8 devices: one device each leaves 2 idle; auto uses them (its first
    # generation, before any measurement, also probes gang sizes: no "sooner" promise on 2 generations)
    fixed = simulate_search(TAIL, 8, 1)
    auto = simulate_search(TAIL, 8, "auto")
    assert max(auto.gangs) > 1
    assert auto.makespan < 1.2 * fixed.makespan


def test_the_simulator_decides_through_the_published_records(monkeypatch):
    import benchmarks.allocation_sim as sim

    seen = []

    def spy(model, records, pending, now, here, free):
        seen.append((records, here))
        return sim.plan_policy(model, records, pending, now, here, free)

    outcome = simulate_search(TAIL, Cluster(2, 4), "auto", policy=spy)
    assert outcome.evaluations == len(seen) or len(seen) > outcome.evaluations
    assert all({r["host"] for r in records} == {"host0", "host1"} and here in ("host0", "host1")
               for records, here in seen)


def test_simulated_gang_takes_t1_over_g_times_efficiency(monkeypatch):
    slept = []
    monkeypatch.setattr("evaluators.simulated.time.sleep", slept.append)
    config = {"duration": 2.0, "efficiency": 0.5}
    result = simulate("k", config, gang=4)
    assert slept == [pytest.approx(draw_duration(config, "k") / (4 * 0.25))]
    assert result.device.split(",") == ["simulated"] * 4
    assert simulate("k", config).device == "simulated"


def test_the_searchs_prior_can_be_set_and_a_bad_one_is_named():
    seen = []

    def spy(model, records, pending, now, here, free):
        seen.append(model.prior_spread)
        return plan_policy(model, records, pending, now, here, free)

    outcome = simulate_search(TAIL, 8, "auto", policy=spy, prior={"prior_spread": 1.0})
    assert outcome.evaluations > 0 and set(seen) == {1.0}
    with pytest.raises(ValueError, match="prior_spread"):
        simulate_search(TAIL, 8, "auto", prior={"prior_spread": -1})


def test_the_probe_costs_its_device_time_and_informs_every_decision():
    from benchmarks.allocation_sim import Probe

    seen = []

    def spy(model, records, pending, now, here, free):
        seen.append(pending)
        return plan_policy(model, records, pending, now, here, free)

    spread = Scenario("spread", "generational", {"population": 6, "generations": 2}, duration=100.0, sigma=1.0,
                      efficiency=0.95)
    plain = simulate_search(spread, 8, "auto")
    probed = simulate_search(spread, 8, "auto", policy=spy, probe=Probe(fraction=0.01, setup=5.0))
    assert probed.evaluations == plain.evaluations
    assert seen and all(p.known is not None for p in seen)
    assert any(p.probes for p in seen)  # the waiting ones were probed too
    # the probes' device time is counted: more than the evaluations alone on the same gangs would take
    assert probed.busy > sum(5.0 * g for g, n in probed.gangs.items() for _ in range(n))
    fixed = simulate_search(spread, 8, 2, probe=Probe())  # a fixed split never probes
    assert fixed.busy == simulate_search(spread, 8, 2).busy


def test_a_probe_that_continues_loses_only_the_part_whose_configuration_the_decision_changes():
    from benchmarks.allocation_sim import Allocation, Probe, _probe_lost

    probe, wide = Probe(), (0, 30.0, 4, "host0")  # the wide part: 30 s on a gang of 4 of host0
    assert _probe_lost(probe, 5.0, wide, Allocation("host0", 1, "", "plan")) == 30.0  # one device goes on
    assert _probe_lost(probe, 5.0, wide, Allocation("host0", 4, "", "plan")) == 5.0  # the gang that probed goes on
    assert _probe_lost(probe, 5.0, wide, Allocation("host0", 2, "", "plan")) == 35.0  # a new configuration
    assert _probe_lost(probe, 5.0, wide, Allocation("host1", 4, "", "plan")) == 35.0  # another host's gang
    assert _probe_lost(Probe(continues="one"), 5.0, wide, Allocation("host0", 4, "", "plan")) == 35.0
    assert _probe_lost(Probe(continues="one"), 5.0, wide, Allocation("host0", 1, "", "plan")) == 35.0
    alone = (0, 0.0, 1, None)  # no wide part: the one-device probe is the evaluation's start
    assert _probe_lost(Probe(continues="one"), 5.0, alone, Allocation("host0", 1, "", "plan")) == 0.0
    assert _probe_lost(Probe(continues="one"), 5.0, alone, Allocation("host0", 2, "", "plan")) == 5.0
    assert _probe_lost(Probe(continues="none"), 5.0, wide, Allocation("host0", 1, "", "plan")) == 35.0
    inside = Probe(continues="inside")  # the real worker: the gang the probe ends on trains on
    assert _probe_lost(inside, 5.0, wide, Allocation("host0", 4, "", "plan")) == 5.0  # its one-device part ran apart
    assert _probe_lost(inside, 5.0, wide, Allocation("host0", 1, "", "plan")) == 35.0
    assert _probe_lost(inside, 5.0, wide, Allocation("host1", 4, "", "plan")) == 35.0
    assert _probe_lost(inside, 5.0, alone, Allocation("host0", 1, "", "plan")) == 0.0
    assert _probe_lost(inside, 5.0, alone, Allocation("host0", 2, "", "plan")) == 5.0
    with pytest.raises(ValueError, match="continues"):
        _probe_lost(Probe(continues="yes"), 5.0, wide, Allocation("host0", 1, "", "plan"))
    spread = Scenario("spread", "generational", {"population": 6, "generations": 2}, duration=100.0, sigma=1.0,
                      efficiency=0.95)
    again = simulate_search(spread, 8, "auto", probe=Probe(continues="none"))
    going_on = simulate_search(spread, 8, "auto", probe=Probe())
    assert going_on.evaluations == again.evaluations and going_on.busy < again.busy



def test_the_oracle_is_told_every_length_and_the_true_efficiency_and_pays_no_probe():
    from benchmarks.allocation_oracle import TRUTHS
    from nas.allocation import efficiency

    seen = []

    def spy(model, records, pending, now, here, free):
        seen.append((model, pending, [r for record in records for r in record["running"]]))
        return plan_policy(model, records, pending, now, here, free)

    spread = Scenario("spread", "generational", {"population": 6, "generations": 2}, duration=100.0, sigma=1.0,
                      efficiency=0.8)
    told = simulate_search(spread, 8, "auto", policy=spy, truth=TRUTHS["oracle"])
    assert told.evaluations == simulate_search(spread, 8, "auto").evaluations
    model = seen[-1][0]
    assert model.spread() == 1.0 and model.duration("host0", 1) == pytest.approx(100.0 * 2.718281828 ** 0.5)
    assert all(model.efficiency("host0", g) == pytest.approx(efficiency(g, 0.8)) for g in (2, 4, 8))
    assert all(p.known is not None and len(p.probes) == p.waiting - 1 for _, p, _ in seen)
    # the running ones are published with their own length and no spread: their time left is exact
    assert all(r["spread"] == 0.0 and "single" in r for _, _, running in seen for r in running)
    assert told.reasons.get("probe", 0) == 0  # no gang size is tried to measure its efficiency: it is known


def test_oracle_rho_knows_the_efficiency_learns_the_durations_and_never_probes_a_wide_gang():
    from benchmarks.allocation_oracle import TRUTHS
    from benchmarks.allocation_sim import Probe
    from nas.allocation import efficiency

    seen = []

    def spy(model, records, pending, now, here, free):
        seen.append((model, pending))
        return plan_policy(model, records, pending, now, here, free)

    spread = Scenario("spread", "generational", {"population": 6, "generations": 2}, duration=100.0, sigma=1.0,
                      efficiency=0.8)
    simulate_search(spread, 8, "auto", policy=spy, probe=Probe(continues="one"), truth=TRUTHS["oracle-rho"])
    model = seen[-1][0]
    assert model.spread() != 1.0  # learned from the probes and the finished evaluations
    assert all(model.efficiency("host0", g) == pytest.approx(efficiency(g, 0.8)) for g in (2, 4, 8))
    assert Probe().rule.wide_gang(model, (1, 2, 4, 8), 8) == 1  # nothing to measure: no wide probe
    assert any(p.known is not None for _, p in seen)  # its lengths are probed as auto + probe's are


def test_the_split_reads_the_grid_and_names_a_missing_column(tmp_path):
    from benchmarks.allocation_oracle_split import ratios, read_grid

    head = "| cluster | search | sigma | rho | fixed 1 | fixed 2 | fixed 4 | auto + probe | auto + probe / best fixed |\n"
    path = tmp_path / "grid.md"
    path.write_text(head + "| --- |\n| 4 on 1 host | generational | 0.6 | 0.97 | 9,435 (0.85) | 8,000 (0.96) "
                    "| 8,800 (1.00) | 9,000 (0.99) | 1.125 |\n")
    grid = read_grid(path)
    row = grid[("4 on 1 host", "generational", 0.6, 0.97)]
    assert row == {"fixed 1": 9435.0, "fixed 2": 8000.0, "fixed 4": 8800.0, "auto + probe": 9000.0}
    assert ratios(row, {"oracle": 8200.0}) == pytest.approx({"auto + probe": 1.125, "oracle": 1.025})
    path.write_text(head.replace("| auto + probe | auto + probe / best fixed ", "") + "| --- |\n")
    with pytest.raises(ValueError, match="auto \\+ probe"):
        read_grid(path)


def _pairs_or_wait(model, records, pending, now, here, free):
    """A decision that wants a gang of 2 on the host that asks, or a wait while it has fewer free."""
    from nas.allocation import Allocation

    return Allocation(here, 2, "a pair", "plan") if free[here] >= 2 else Allocation(None, 2, "wait", "wait")


def test_a_worker_told_to_wait_keeps_its_candidate_and_runs_it_on_its_own_host():
    spread = Scenario("spread", "generational", {"population": 6, "generations": 2}, duration=100.0, sigma=1.0,
                      efficiency=0.95)
    cluster = Cluster(2, 2)  # two hosts of 2 devices: each worker runs one pair and holds one more candidate
    offered = simulate_search(spread, cluster, "auto", policy=_pairs_or_wait)
    kept = simulate_search(spread, cluster, "auto", policy=_pairs_or_wait, pull="worker")
    assert kept.evaluations == offered.evaluations > 0 and set(kept.gangs) == {2}
    assert offered.held == 0 and kept.held > 0
    # every candidate runs where its worker pulled it; those held start later, on that host, never on another
    assert all(p.host == p.pulled_by for p in kept.placements)
    late = [p for p in kept.placements if p.started > p.pulled]
    assert len(late) == kept.held
    # offered on, a waiting candidate goes to whichever host frees first: the two modes place them differently
    assert [p.host for p in kept.placements] != [p.host for p in offered.placements]
    with pytest.raises(ValueError, match="pull"):
        simulate_search(spread, cluster, "auto", pull="nobody")


def test_where_no_worker_is_told_to_wait_the_two_modes_agree():
    spread = Scenario("spread", "regularized", {"population": 6, "sample_size": 3, "max_evaluations": 16},
                      duration=100.0, sigma=1.0, efficiency=0.95)
    for gang in (1, 2, 4):  # a fixed split: an idle pool process always has its gang's devices free
        offered = simulate_search(spread, Cluster(3, 4), gang)
        kept = simulate_search(spread, Cluster(3, 4), gang, pull="worker")
        assert kept.held == 0 and kept.makespan == offered.makespan and kept.busy == offered.busy
        # the same draws start at the same times on the same gangs (which of the equal hosts runs them may differ)
        assert [(p.draw, p.gang, p.pulled, p.started) for p in kept.placements] == \
            [(p.draw, p.gang, p.pulled, p.started) for p in offered.placements]


def test_a_worker_that_hands_back_what_it_must_wait_for_lets_a_host_with_free_devices_run_it():
    """``pull="handback"`` (the real gang worker): a worker pulls only while its host has room, and one told to wait
    hands the candidate back where ``nas.allocation.hand_back`` says so, so it runs no later than held by its first
    worker; each still runs where it was last pulled, and every candidate runs once."""
    spread = Scenario("spread", "generational", {"population": 6, "generations": 2}, duration=100.0, sigma=1.0,
                      efficiency=0.95)
    cluster = Cluster(2, 2)
    kept = simulate_search(spread, cluster, "auto", policy=_pairs_or_wait, pull="worker")
    handed = simulate_search(spread, cluster, "auto", policy=_pairs_or_wait, pull="handback")
    assert sorted(p.draw for p in handed.placements) == sorted(p.draw for p in kept.placements)
    assert len({p.draw for p in handed.placements}) == handed.evaluations == kept.evaluations
    assert all(p.host == p.pulled_by for p in handed.placements)
    assert [p.host for p in handed.placements] != [p.host for p in kept.placements]
    assert handed.makespan < kept.makespan and handed.held < kept.held


def test_the_simulated_hand_back_is_the_workers_rule_on_the_published_records(monkeypatch):
    """The simulator hands back through ``nas.allocation.hand_back`` with what the real worker gives it: every host's
    record (its ``waiting`` included) and the exact free devices of its own host only; at most ``LIMIT`` times per
    candidate."""
    from benchmarks import allocation_sim
    from nas.allocation.handing_back import LIMIT

    calls = []
    real = allocation_sim.hand_back

    def spy(model, records, pending, now, here, free, search, handed):
        calls.append((records, here, dict(free), handed))
        return real(model, records, pending, now, here, free, search, handed)

    monkeypatch.setattr(allocation_sim, "hand_back", spy)
    spread = Scenario("spread", "generational", {"population": 12, "generations": 2}, duration=100.0, sigma=1.0,
                      efficiency=0.97)
    outcome = simulate_search(spread, Cluster(4, 4), "auto", seed=4, pull="handback")
    assert calls and outcome.handed >= 1
    assert outcome.evaluations == simulate_search(spread, Cluster(4, 4), "auto", seed=4).evaluations
    for records, here, free, handed in calls:
        assert set(free) == {here} and 0 <= handed < LIMIT + 1
        assert all("waiting" in record for record in records)


def test_every_decision_starts_from_the_model_as_stored():
    """The real worker loads the search's model for each decision (``allocation_state.load_model``: what was
    observed); the running and probed candidates one decision adds to its model must not reach the simulator's
    next decision either."""
    import benchmarks.allocation_sim as sim
    from nas.allocation import ThroughputModel

    same = []

    def spy(model, records, pending, now, here, free):
        stored = ThroughputModel.from_state(model.state_dict())
        same.append((model.spread(), model.single(here)) == pytest.approx((stored.spread(), stored.single(here))))
        return sim.plan_policy(model, records, pending, now, here, free)

    spread = Scenario("spread", "regularized", {"population": 8, "sample_size": 3, "max_evaluations": 24},
                      duration=100.0, sigma=1.0, efficiency=0.9)
    simulate_search(spread, Cluster(2, 4), "auto", policy=spy, pull="handback", probe=sim.Probe(continues="inside"))
    assert len(same) >= 24 and all(same)
