"""Gangs and the allocator over a grid a doubtful user would choose: clusters of one host and of many (4 devices on
1 host, 16 on 4, 64 on 16), duration spreads from sigma 0.3 to 1.0, efficiency per added device from 0.6 to 0.97,
regularized and generational searches, several seeds each; every fixed split and ``auto`` side by side.

A discrete-event simulation (``benchmarks/allocation_sim.py``): the real strategies and the real decision
(``nas.allocation.decide``, from host records as the gang workers publish them), the simulated evaluator's lognormal
durations and its gang model ``T(g) = T(1) / (g x efficiency(g))`` with ``efficiency(g) = rho ** (g - 1)``; no
processes, no sleeping, so the figures do not depend on this machine. Each figure is the mean over ``--seeds``
searches. Run from the repository root::

    python benchmarks/allocation.py            # the full grid (a few minutes on 2 cores)
    python benchmarks/allocation.py --quick    # the grid's corners, one seed (unless --seeds)

``auto`` is the planner (``nas.allocation``); ``dqn`` is seed 003's DQN agent (``benchmarks/allocation_dqn.py``),
trained first on searches of the same grid with other seeds, and compared on the same scenarios.
"""
from __future__ import annotations

import argparse
import dataclasses
import itertools
import multiprocessing
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.allocation_dqn import WEIGHTS, train  # noqa: E402
from benchmarks.allocation_oracle import TRUTHS  # noqa: E402
from benchmarks.allocation_sim import CLUSTERS, RHOS, SIGMAS, Probe, Scenario, grid_scenario  # noqa: E402
from benchmarks.allocation_sim import PULLS, simulate_search  # noqa: E402
from benchmarks.allocation_sim_probe import CONTINUES  # noqa: E402
from nas.allocation.handing_back import LIMIT as HAND_BACKS  # noqa: E402
from benchmarks.report import Report, command_line, table  # noqa: E402

SPLITS = (1, 2, 4)
#: The scaling probe ``auto`` runs before placing each candidate (``allocation_sim.Probe``'s defaults).
PROBE = Probe()


def scenario(strategy: str, sigma: float, rho: float, args: argparse.Namespace) -> Scenario:
    return grid_scenario(strategy, sigma, rho, args.population, args.generations, args.evaluations, args.duration)


def _run(job: tuple) -> tuple:
    key, scenario_, cluster, gang, seed, policy, probe_, pull = job
    truth = TRUTHS.get(policy) if gang == "auto" else None
    # "auto + probe" probes, and so does "oracle-rho" (it learns the durations as the worker does)
    probe = probe_ if gang == "auto" and (policy == "probe" or truth is not None and not truth.durations) else None
    outcome = simulate_search(scenario_, cluster, gang, seed=seed, policy=_policy(policy), probe=probe, truth=truth,
                              pull=pull)
    return key, gang if policy == "plan" or gang != "auto" else policy, seed, outcome.makespan, \
        outcome.utilisation(cluster.total)


def _policy(name: str):
    if name in ("plan", "probe", *TRUTHS):
        return None
    from benchmarks.allocation_dqn import dqn_policy
    return dqn_policy()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=None, help="searches per figure (default 3; 1 with --quick)")
    parser.add_argument("--first-seed", type=int, default=0,
                        help="the first search's seed (default 0; another start tries seeds nothing was tuned on)")
    parser.add_argument("--population", type=int, default=24)
    parser.add_argument("--generations", type=int, default=5)
    parser.add_argument("--evaluations", type=int, default=120, help="regularized: evaluations (default 120)")
    parser.add_argument("--duration", type=float, default=300.0, help="median seconds on one device (default 300)")
    parser.add_argument("--workers", type=int, default=2, help="processes (default 2)")
    parser.add_argument("--quick", action="store_true",
                        help="the grid's corners, sigma 0.3 and 1.0, rho 0.6 and 0.97; one seed unless --seeds")
    parser.add_argument("--policies", default="plan,probe,dqn",
                        help="auto policies to compare, comma separated (plan: the planner without probes; probe: "
                             "the planner with a scaling probe before each placement, as the worker runs it; dqn; "
                             "oracle: the planner told the true efficiency and every candidate's length, no probe; "
                             "oracle-rho: told the true efficiency only, durations learned as by probe)")
    parser.add_argument("--dqn-episodes", type=int, default=60, help="DQN training searches (0: the saved weights)")
    parser.add_argument("--output", default="allocation", help="results/<output>.md (default allocation)")
    parser.add_argument("--continues", choices=CONTINUES, default="both",
                        help="auto + probe: which part of the probe the evaluation goes on from when the decision "
                             "keeps its configuration (both: the one device or the wide gang; inside: the gang the "
                             "probe ends on, one device or the wide gang after a one-device part run apart, as the "
                             "real worker does; one: a probe of one device only, as the real worker did before; none: "
                             "it starts again after the whole probe)")
    parser.add_argument("--pull", choices=PULLS, default="host",
                        help="who gets a candidate whose worker is told to wait (host: it is offered to the next host "
                             "with free devices, the tables so far; worker: the worker that pulled it keeps it and "
                             "decides again for its own host while its other pool processes pull the next ones, as the "
                             "gang worker did before its room rule and hand-back; handback: the real gang worker, "
                             "webapp.worker.device_claims.run_on_gang: a worker pulls only while its host has room, "
                             "and one told to wait hands the candidate back, to the front of the queue, when the "
                             "planner would start it now on a host whose worker has a free process and room)")
    args = parser.parse_args(argv)
    probe = dataclasses.replace(PROBE, continues=args.continues)
    sigmas, rhos = ((0.3, 1.0), (0.6, 0.97)) if args.quick else (SIGMAS, RHOS)
    seeds = args.seeds or (1 if args.quick else 3)
    policies = args.policies.split(",")
    keys = list(itertools.product(CLUSTERS, ("regularized", "generational"), sigmas, rhos))
    jobs = []
    for key in keys:
        cluster_name, strategy, sigma, rho = key
        for seed in range(args.first_seed, args.first_seed + seeds):
            for gang in SPLITS:
                jobs.append((key, scenario(strategy, sigma, rho, args), CLUSTERS[cluster_name], gang, seed, "plan",
                             None, args.pull))
            for policy in policies:
                jobs.append((key, scenario(strategy, sigma, rho, args), CLUSTERS[cluster_name], "auto", seed, policy,
                             probe, args.pull))
    if "dqn" in policies and (args.dqn_episodes or not WEIGHTS.exists()):
        train(args.dqn_episodes or 60)  # on seeds from 1000 on: the grid's seeds are 0..seeds-1
    with multiprocessing.Pool(args.workers) as pool:
        results = pool.map(_run, jobs, chunksize=1)
    runs: dict = {}
    for key, split, _, makespan, utilisation in results:
        runs.setdefault(key, {}).setdefault(split, []).append((makespan, utilisation))
    report = Report(args.output, "Gangs and the allocator: fixed splits against auto over clusters, spreads, scaling",
                    command_line(argv, "allocation.py"))
    names = {"plan": "auto", "probe": "auto + probe", "dqn": "dqn", "oracle": "oracle", "oracle-rho": "oracle-rho"}
    report.add(
        f"Discrete-event simulation (no processes; the figures do not depend on this machine): the real strategies "
        f"(`nas.strategies`, pelee space) and the real decision (`nas.allocation.decide`, from the host records the "
        f"gang workers publish), lognormal durations with median {args.duration:g} s on one device, "
        f"`efficiency(g) = rho ** (g - 1)`. Generational: population {args.population}, {args.generations} "
        f"generations; regularized: population {args.population}, {args.evaluations} evaluations. Hosts of 4 "
        f"devices (gangs of 1, 2 or 4; a gang never spans hosts). Mean of {seeds} seed(s) per figure (from seed "
        f"{args.first_seed}); `auto` starts from a 60 s prior and learns durations, their spread and each gang "
        "size's efficiency as evaluations end. "
        "Cells: makespan in s (device utilisation); ratio: auto / the best fixed split. `auto + probe`: the same "
        f"planner, each candidate first timed by a scaling probe (`allocation_sim.Probe`: {PROBE.setup:g} s setup "
        f"on one device and {PROBE.wide_setup:g} s on a gang, as measured on the CPU "
        f"(`results/allocation-probe-real.md`), plus {PROBE.fraction:.0%} of its duration per gang size, rates off by a lognormal {PROBE.noise:g}; one "
        f"device each for every waiting candidate there are free devices for, and, for the first {PROBE.pairs} "
        "efficiency probes (of any gang size), a gang where its scaling could give a candidate one: the gang good "
        "scaling would give this one where it is narrower than the widest free gang, that gang otherwise, "
        "`nas.allocation.scaling_gang`), its device time counted, as the gang worker runs it; "
        + {"none": "the evaluation starts again after the whole probe",
           "one": "the probe's steps are the evaluation's first where it has no wide part: a decision that keeps its "
                  "one device goes on from there; a probe with a wide part is paid whole (the real worker's rule "
                  "before its wide part went inside the evaluation)",
           "inside": "the probe's steps are the evaluation's first on the gang it ends on (the real worker's rule): "
                     "a decision that keeps its one device, or its wide gang, goes on from there; a wide one loses "
                     "its one-device part, run apart first",
           "both": "the probe's steps are the evaluation's first: a decision that keeps the probe's one device, or "
                   "its wide gang, goes on from there and loses only the other part"}[args.continues]
        + "; `auto`: without probes."
        + {"host": " A candidate whose worker is told to wait is offered to the next host with free devices.",
           "worker": " As the gang worker pulled before its room rule and hand-back (`--pull worker`): each host's "
                     "worker has one pool process per "
                     "smallest gang, each holding one candidate, running or waiting; one told to wait keeps its "
                     "candidate and decides again for its own host as devices change, while the other processes "
                     "pull the next candidates.",
           "handback": " As the real gang worker pulls (`--pull handback`): each host's worker has one pool process "
                       "per smallest gang, each holding one candidate, running or waiting, and pulls only while its "
                       "host has room (free devices for a smallest gang beyond what its held candidates need); one "
                       "told to wait hands the candidate back, to the front of the queue (the loop re-sends it with "
                       "Celery's first priority), when the planner would start it now on a host whose worker has a "
                       f"free process and room (at most {HAND_BACKS} times), and holds it otherwise; a probe without "
                       "a wide part times a candidate only where its length could change where it goes now, on the "
                       "gang it would get untimed where a long one would get it too (that gang's rate alone, no "
                       "one-device part; lost where the decision leaves it), else on one device "
                       "(`nas.allocation.length_gang`)."}[args.pull]
        + (" `oracle` (`benchmarks/allocation_oracle.py`): the same planner and decision told the truth: the true "
           "efficiency per gang size, the durations' true median and spread, every asked candidate's own length "
           "(`Pending.known`, `Pending.probes`) and every running one's exact time left; no probe, none paid "
           "(candidates not asked yet are drawn from the true distribution)." if "oracle" in policies else "")
        + (" `oracle-rho`: told the true efficiency only; durations learned as `auto + probe` learns them (its "
           "one-device probes, paid alike; no wide probe)." if "oracle-rho" in policies else ""))
    rows, worst = [], {}
    for key in keys:
        cell = {split: (statistics.mean(m for m, _ in v), statistics.mean(u for _, u in v))
                for split, v in runs[key].items()}
        best = min((cell[g][0], g) for g in SPLITS)
        row = [key[0], key[1], f"{key[2]:g}", f"{key[3]:g}"]
        row += [f"{cell[g][0]:,.0f} ({cell[g][1]:.2f})" for g in SPLITS]
        for policy in policies:
            split = "auto" if policy == "plan" else policy
            ratio = cell[split][0] / best[0]
            row += [f"{cell[split][0]:,.0f} ({cell[split][1]:.2f})", f"{ratio:.3f}"]
            if ratio > worst.get(policy, (0.0,))[0]:
                worst[policy] = (ratio, key, best[1])
        rows.append(row)
    headers = ["cluster", "search", "sigma", "rho"] + [f"fixed {g}" for g in SPLITS]
    for policy in policies:
        headers += [names.get(policy, policy), f"{names.get(policy, policy)} / best fixed"]
    report.add("## Every scenario\n\n" + table(headers, rows))
    verdict = []
    for policy in policies:
        ratio, key, best = worst[policy]
        ratios = [float(row[4 + len(SPLITS) + 2 * policies.index(policy) + 1]) for row in rows]
        verdict.append([names.get(policy, policy), f"{ratio:.3f}", f"{key[0]}, {key[1]}, sigma {key[2]:g}, "
                        f"rho {key[3]:g} (best fixed: gangs of {best})", f"{statistics.mean(ratios):.3f}",
                        f"{sum(r <= 1.05 for r in ratios)} of {len(ratios)}"])
    report.add("## Verdict (target: within 5% of the best fixed split in every scenario)\n\n"
               + table(["policy", "worst ratio to the best fixed split", "where", "mean ratio",
                        "scenarios within 5%"], verdict))


if __name__ == "__main__":
    main()
