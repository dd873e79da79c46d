"""How long the engine tests' ``Stack`` (``tests/engine/conftest.py``) takes to have a control worker and an
evaluation worker ready, started one after the other (each ``ready.`` awaited before the next starts) against
started together (``wait=False``, then one wait for both), and to stop them: the fixed cost that almost every
engine and browser test pays before its first search.

The two ways alternate round by round on the same private Redis, so that a change of the machine's load during
the run weighs on both alike.

    .venv/bin/python benchmarks/stack_start.py --rounds 5
"""
from __future__ import annotations

import argparse
import contextlib
import io
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def setup(state: Path) -> None:
    os.environ.update(DJANGO_SETTINGS_MODULE="webapp.settings.test", NAS_STATE_DIR=str(state), NAS_NO_BOOTSTRAP="1")
    import django

    django.setup()


def one_round(redis_url: str, together: bool) -> tuple[float, float]:
    """Seconds until both workers are ready, and seconds ``Stack.stop`` takes."""
    from tests.engine.conftest import Stack

    stack = Stack(redis_url)
    started = time.monotonic()
    stack.evaluator("alpha", wait=not together)
    stack.control()
    ready = time.monotonic() - started
    started = time.monotonic()
    with contextlib.redirect_stdout(io.StringIO()):  # its workers' logs, for a failing test
        stack.stop()
    return ready, time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="rounds of each way (default 5)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="nas-stack-start-") as folder:
        setup(Path(folder))
        from benchmarks.report import Report, table
        from webapp.stack.redis_server import start_embedded

        server, redis = start_embedded(Path(folder) / "redis")
        times: dict[bool, list[tuple[float, float]]] = {False: [], True: []}
        try:
            for number in range(args.rounds):
                for together in (False, True):
                    times[together].append(one_round(server.url, together))
                    print(f"round {number}: {'together' if together else 'one after the other'} "
                          f"ready {times[together][-1][0]:.2f} s, stop {times[together][-1][1]:.2f} s", flush=True)
        finally:
            redis.terminate()
            redis.wait(timeout=10)

    def cell(values: list[float]) -> str:
        return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"

    rows = [["one after the other" if not together else "together (`wait=False`)",
             cell([ready for ready, _ in runs]), cell([stop for _, stop in runs])]
            for together, runs in times.items()]
    saved = [one[0] - two[0] for one, two in zip(times[False], times[True])]
    report = Report("stack_start", "Engine tests: a control and an evaluation worker, ready and stopped",
                    f"benchmarks/stack_start.py --rounds {args.rounds}")
    report.add(table(["started", "until both are ready, s: median (min-max)", "Stack.stop, s"], rows)
               + f"\n\nSaved per test by starting together: median {statistics.median(saved):.2f} s "
               f"(rounds: {', '.join(f'{s:.2f}' for s in saved)}).")


if __name__ == "__main__":
    main()
