"""The engine's own cost per evaluation, with evaluations that do nothing (simulated, duration 0).

Each evaluation goes the whole way: the strategy is asked, the individual is a committed row, its signed packet
is a Celery task, a worker slot verifies and "evaluates" it, pushes ``started`` and ``result`` through Redis,
and the control loop records it, tells the strategy, saves the strategy state and publishes the events. Measured:

1. the reference: a bare Redis push/pop round trip (``RPUSH`` then ``BLPOP`` of a 1 KB message from this
   process), in the same Redis, in the same run;
2. per evaluation, by the number of workers: wall time / evaluations (the inverse of the engine's throughput)
   and, per individual, where the time goes: created -> dispatched (the loop), dispatched -> started (Celery
   and the worker), started -> finished (the no-op evaluation and its heartbeat), finished -> recorded (the
   result through Redis into the loop's transaction and the event log);
3. its growth with the individuals already in the search: one long search, the time per evaluation in
   consecutive windows of its finished individuals.

Speedup is bounded by about duration / (wall time per evaluation): this says how long an evaluation must be for
a given number of workers to pay off. Run from the repository root::

    python benchmarks/overhead.py --workers 1,4,16,64 --evaluations 300 --long 2000
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.report import Report, command_line, table  # noqa: E402
from benchmarks.stack import Run, Stack, equal_nodes, main_guard, simulated_config  # noqa: E402


def redis_round_trip(count: int) -> list[float]:
    """Seconds per RPUSH + BLPOP of a 1 KB message, ``count`` times."""
    from webapp.messaging import transport

    redis, key, message = transport.client(), "bench:roundtrip", b"x" * 1024
    times = []
    for _ in range(count):
        started = time.perf_counter()
        redis.rpush(key, message)
        redis.blpop([key], timeout=1)
        times.append(time.perf_counter() - started)
    return times


def stages(search_id: int) -> list[dict[str, float]]:
    """Per individual, in the order they finished: the time stamps of its trip through the engine."""
    from webapp.searches.models import Event, Individual

    recorded = {
        event.data["id"]: event.time.timestamp()
        for event in Event.objects.filter(search_id=search_id, type="individual.finished").only("data", "time")
    }
    rows = Individual.objects.filter(search_id=search_id).values("pk", "created", "dispatched", "started", "finished")
    trips = [
        {"created": row["created"].timestamp(), "dispatched": row["dispatched"].timestamp(),
         "started": row["started"].timestamp(), "finished": row["finished"].timestamp(),
         "recorded": recorded[row["pk"]]}
        for row in rows if row["started"] and row["finished"] and row["pk"] in recorded
    ]
    return sorted(trips, key=lambda trip: trip["recorded"])


def ms(values: list[float]) -> str:
    return f"{1000 * statistics.median(values):.1f}" if values else "—"


def trip_row(trips: list[dict[str, float]]) -> list[str]:
    pairs = (("created", "dispatched"), ("dispatched", "started"), ("started", "finished"), ("finished", "recorded"))
    return [ms([t[b] - t[a] for t in trips]) for a, b in pairs] + [ms([t["recorded"] - t["created"] for t in trips])]


def run(stack: Stack, workers: int, evaluations: int, args: argparse.Namespace) -> Run:
    with stack.workers(equal_nodes(workers, args.slots_per_process)) as pool:
        params = {"population": args.population, "sample_size": 5, "max_evaluations": evaluations}
        config = simulated_config(pool, "regularized", params, duration=0.0, space=args.space, seed=args.seed)
        return stack.run_search(f"overhead n={workers} N={evaluations}", config)


def growth(trips: list[dict[str, float]], window: int) -> list[list[str]]:
    rows = []
    for start in range(0, len(trips) - window + 1, window):
        chunk = trips[start : start + window]
        span = chunk[-1]["recorded"] - chunk[0]["recorded"]
        rows.append([f"{start}-{start + window - 1}", f"{1000 * span / (window - 1):.1f}", *trip_row(chunk)])
    return rows


STAGES = ["created -> dispatched", "dispatched -> started", "started -> finished", "finished -> recorded",
          "created -> recorded"]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", default="1,4,16,64", help="worker counts (default 1,4,16,64)")
    parser.add_argument("--evaluations", type=int, default=300, help="evaluations per worker count (default 300)")
    parser.add_argument("--long", type=int, default=2000, help="evaluations of the long search (default 2000)")
    parser.add_argument("--long-workers", type=int, default=4, help="workers of the long search (default 4)")
    parser.add_argument("--window", type=int, default=250, help="individuals per window of the long search")
    parser.add_argument("--population", type=int, default=20)
    parser.add_argument("--space", default="pelee", choices=("pelee", "chain", "cell"))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--slots-per-process", type=int, default=16)
    args = parser.parse_args(argv)
    report = Report("overhead", "The engine's cost per evaluation (no-op evaluations)",
                    command_line(argv, "overhead.py"))
    report.add(f"Regularized evolution (population {args.population}) on the {args.space} space, simulated "
               "evaluations of 0 s; times are medians over the individuals, in ms. Measured under whatever else the "
               "machine was running (see the load average above).")
    with Stack() as stack:
        reference = redis_round_trip(2000)
        report.add(f"Bare Redis RPUSH + BLPOP round trip (1 KB, 2000 times, same Redis): median "
                   f"{1000 * statistics.median(reference):.3f} ms, mean {1000 * statistics.fmean(reference):.3f} ms.")
        rows = []
        for workers in [int(n) for n in args.workers.split(",")]:
            done = run(stack, workers, args.evaluations, args)
            per = done.engine_wall / args.evaluations
            rows.append([str(workers), str(args.evaluations), f"{done.wall:.1f}", f"{1000 * per:.1f}", f"{1 / per:.0f}",
                         f"{per / statistics.median(reference):.0f}", *trip_row(stages(done.search_id))])
            print(f"  {workers} workers: {1000 * per:.1f} ms per evaluation", flush=True)
        report.add("## Per evaluation, by the number of workers\n\n" + table(
            ["workers", "evaluations", "wall, s", "wall per evaluation, ms", "evaluations per s",
             "x Redis round trip", *STAGES], rows))
        if args.long:
            done = run(stack, args.long_workers, args.long, args)
            report.add(f"## Growth with the individuals already in the search ({args.long} evaluations, "
                       f"{args.long_workers} workers, {done.wall:.1f} s)\n\n" + table(
                           ["individuals", "ms per evaluation (recorded)", *STAGES],
                           growth(stages(done.search_id), args.window)))


if __name__ == "__main__":
    main_guard(main)
