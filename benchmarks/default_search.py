"""How long the create form's default search takes: real PyTorch training on digits, as a new user runs it.

The form's defaults (a `regularized` search of 24 small chain CNNs, 3 epochs each on digits, the trained files
of the best 5 kept) on 1 and on 2 CPU evaluation slots of this machine, with the real stack (Redis, Celery, the
control loop, SQLite). Prints the wall time, the seconds per evaluation and per epoch, and the load the machine
was under: the README quotes it, and the form's estimate is built from the same seconds per epoch. Run from the
repository root::

    .venv/bin/python benchmarks/default_search.py --slots 1,2
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.report import Report, command_line, table  # noqa: E402
from benchmarks.stack import Node, Run, Stack, main_guard  # noqa: E402


def default_config(pool: str) -> dict:
    """The configuration the create form makes of its defaults, on ``pool``."""
    from webapp.dashboard.architecture_form import DEFAULTS, SearchForm

    form = SearchForm(data={**DEFAULTS, "pool": pool})
    if not form.is_valid():
        raise RuntimeError(f"the form's defaults do not validate: {form.errors}")
    return form.config


def per_evaluation(run: Run) -> tuple[float, float, int]:
    """Median seconds per evaluation (the slot's whole time), per epoch, and the epochs of each."""
    from webapp.searches.models import Individual

    rows = list(Individual.objects.filter(search_id=run.search_id, status="done")
                .values_list("duration", "metrics__epochs"))
    seconds = [duration for duration, _ in rows if duration]
    epochs = max((e for _, e in rows if e), default=1)
    return statistics.median(seconds), statistics.median(seconds) / epochs, epochs


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--slots", default="1,2", help="evaluation slots to try, comma separated (default 1,2)")
    parser.add_argument("--threads", type=int, default=0,
                        help="torch threads per slot (OMP_NUM_THREADS); 0, the default: torch's own, as `up` leaves it")
    args = parser.parse_args(argv)
    report = Report("default_search", "The form's default search on this machine's CPU",
                    command_line(argv, "default_search.py"))
    load = os.getloadavg()
    rows = []
    with Stack() as stack:
        for slots in (int(n) for n in args.slots.split(",")):
            if args.threads:
                stack.env["OMP_NUM_THREADS"] = str(args.threads)
            with stack.workers([Node("laptop", slots=slots)]) as pool:
                config = default_config(pool)
                run = stack.run_search(f"default search on {slots} slot(s)", config)
            median, per_epoch, epochs = per_evaluation(run)
            rows.append([str(slots), str(run.individuals), f"{run.wall / 60:.1f}", f"{median:.1f}",
                         f"{per_epoch:.2f}", f"{run.summary['speedup']:.2f}"])
            print(f"  {slots} slot(s): {run.status}, {run.wall / 60:.1f} min", flush=True)
    threads = args.threads or "torch's default number of"
    report.add(f"The form's defaults: regularized, 24 evaluations of 3 epochs on digits (chain space), the best 5 "
               f"keep their weights and ONNX; {threads} thread(s) per slot. Load average (1 min) when "
               f"it started: {load[0]:.2f}.")
    report.add(table(["slots", "evaluations", "wall, min", "s per evaluation (median)", "s per epoch",
                      "speedup (serial / running time)"], rows))


if __name__ == "__main__":
    main_guard(main)
