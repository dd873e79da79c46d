"""Issue 33's digits targets over every seed ``benchmarks/oneshot.py`` was run on: reads the per-seed tables
(``results/oneshot.md`` for seed 0, ``results/oneshot-seed<N>.md`` for the others; both the first table format
and the one with the reference-noise columns) and writes ``results/oneshot-summary.md``: per seed, whether the
final model is within 1 point of evolution's, the search phases' and the whole pipeline's share of evolution's
device-seconds against a fifth, tau against 0.5; and the worst seed of each. Run from the repository root::

    .venv/bin/python benchmarks/oneshot_summary.py
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.report import RESULTS, table  # noqa: E402
from nas.oneshot import check_summary  # noqa: E402

#: A column by the names its header had in each table format (the first that is there wins; a name ending
#: in ``*`` matches as a prefix).
COLUMNS = {
    "evolution": ["evolution final acc %"],
    "oneshot": ["one-shot final acc % (points), paths by accuracy", "one-shot final acc %"],
    "search": ["by accuracy: search phases / whole pipeline, share of evolution's device-s",
               "one-shot / evolution search device-s"],
    "pipeline": ["by accuracy: search phases / whole pipeline, share of evolution's device-s",
                 "whole pipeline / evolution + final, device-s (no check)"],
    "tau": ["Kendall tau, supernet accuracy vs stand-alone*", "Kendall tau [95% interval] over random paths"],
    "loss_final": ["one-shot final acc % (points), paths by loss"],
    "loss_tau": ["tau, supernet loss (*"],
    "noise": ["reference noise: tau between two stand-alone trainings; ceiling against one"],
    "evolution_search_s": ["evolution search device-s"],
    "supernet_s": ["supernet device-s"],
    "path_s": ["path search device-s (by accuracy / by loss)", "path search device-s"],
    "final_s": ["final training device-s (evolution / by accuracy / by loss)",
                "final training device-s (evolution / one-shot)"],
}


def read_rows(path: Path) -> list[dict[str, str]]:
    """The rows of the markdown tables in ``path``, as header -> cell."""
    rows, headers = [], None
    for line in path.read_text().splitlines():
        if not line.startswith("|"):
            headers = None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if headers is None:
            headers = cells
        elif set(cells) != {"---"}:
            rows.append(dict(zip(headers, cells)))
    return rows


def cell(row: dict[str, str], key: str) -> str | None:
    for name in COLUMNS[key]:
        for header, value in row.items():
            if header == name or (name.endswith("*") and header.startswith(name[:-1])):
                return value
    return None


def number(text: str | None, index: int = 0) -> float | None:
    found = re.findall(r"[-+]?\d+\.\d+", text or "")
    return float(found[index]) if len(found) > index else None


def seed_rows() -> list[tuple[str, dict[str, str]]]:
    files = [RESULTS / "oneshot.md", *sorted(RESULTS.glob("oneshot-seed*.md"),
                                             key=lambda p: int(re.sub(r"\D", "", p.stem)))]
    return [(f.name, row) for f in files if f.exists() for row in read_rows(f)]


def seed_table(seed: int) -> Path:
    return RESULTS / ("oneshot.md" if seed == 0 else f"oneshot-seed{seed}.md")


def evolution_side(seed: int) -> dict[str, float | str]:
    """Evolution's final accuracy (%) and device-seconds (search, final training) from ``seed``'s table."""
    path = seed_table(seed)
    (row,) = [r for r in read_rows(path) if r.get("seed") == str(seed)]
    return {"table": path.name, "final": number(cell(row, "evolution")),
            "search_s": number(cell(row, "evolution_search_s")), "final_s": number(cell(row, "final_s"))}


def phases(row: dict[str, str]) -> dict[str, float]:
    """The whole pipeline's terms on both sides, device-s: evolution's search and final training, the
    one-shot supernet, path search (by accuracy) and final training (paths by accuracy)."""
    return {"evolution": number(cell(row, "evolution_search_s")), "evolution_final": number(cell(row, "final_s")),
            "supernet": number(cell(row, "supernet_s")), "paths": number(cell(row, "path_s")),
            "final": number(cell(row, "final_s"), 1)}


def phase_text(row: dict[str, str]) -> str:
    """The one-shot pipeline's phases as shares of evolution's whole pipeline (search + final)."""
    p = phases(row)
    whole = p["evolution"] + p["evolution_final"]
    return " + ".join(f"{p[name] / whole:.3f}" for name in ("supernet", "paths", "final"))


#: The ranking check's choices the summary shows (``score/reference/trainings`` of ``oneshot_tau.py``'s taus).
CHECKS = {"accuracy/accuracy/1": "supernet accuracy vs one training's accuracy (the check before)",
          "accuracy/accuracy/B": "supernet accuracy vs the second training's accuracy (another validation split)",
          "accuracy/accuracy/2": "supernet accuracy vs mean accuracy of 2",
          "loss/accuracy/2": "supernet loss vs mean accuracy of 2",
          "loss/loss/1": "supernet loss vs one training's loss",
          "loss/loss/2": "supernet loss vs mean loss of 2",
          "loss/loss/B": "supernet loss vs the second training's loss (another validation split)"}


def check_taus(paths: list[dict], repeats: int) -> dict:
    """``oneshot_tau.taus`` of ``paths``, and (``.../B``) against the second training alone: it does not share
    the validation split the supernet scores on, as the first does."""
    from benchmarks.oneshot_tau import taus

    second = [{**p, "trainings": p["trainings"][1:2]} for p in paths]
    return {**taus(paths, repeats), **{f"{by}/{by}/B": check_summary(second, score=by, reference=by)
                                       for by in ("accuracy", "loss")}}


def tau_cell(summary: dict) -> str:
    if summary.get("tau") is None:
        return f"undefined (n={summary.get('n')})"
    return f"{summary['tau']:.2f} [{summary['low']:.2f}, {summary['high']:.2f}] (n={summary['n']})"


#: The check's paths every seed has (a seed run with more has these first: ``random_paths`` draws a prefix).
FIRST = 20


def check_part() -> list[str]:
    """The ranking check's table from ``oneshot_tau.py``'s per-path records (``oneshot-check-seed<N>.json``)."""
    files = sorted(RESULTS.glob("oneshot-check-seed*.json"), key=lambda p: int(re.sub(r"\D", "", p.stem)))
    records = [r for f in files for r in json.loads(f.read_text())]
    if not records:
        return []
    rows, worst = [], {key: [] for key in CHECKS}
    for record in records:
        for count in sorted({FIRST, len(record["paths"])}):
            taus = check_taus(record["paths"][:count], record["repeats"])
            if count == FIRST:
                for key in CHECKS:
                    worst[key].append((taus[key]["tau"] if taus[key]["tau"] is not None else -1.0, record["seed"]))
            noise = [f"{taus[f'noise/{by}']['tau']:.2f}; {taus[f'noise/{by}']['ceiling']:.2f} / "
                     f"{taus[f'noise/{by}']['ceiling_mean']:.2f}" for by in ("accuracy", "loss")]
            rows.append([record["seed"], count, *(tau_cell(taus[key]) for key in CHECKS), *noise,
                         f"{record['supernet_s']:.1f} / {record['check_s']:.1f} ({len(record['paths'])} paths)"])
    worst_text = ", ".join(f"{label}: {min(worst[key])[0]:.2f} (seed {min(worst[key])[1]})"
                           for key, label in CHECKS.items()) + f", over the first {FIRST} paths of each seed"
    return [f"## The ranking check: tau by score and reference ({len(records)} seeds)",
            "From `benchmarks/oneshot_tau.py` (`results/oneshot-check-seed<N>.md` and `.json`): the same supernet "
            "(20 epochs) and check paths as `oneshot.py`'s for the seed, each path trained stand-alone twice for 8 "
            "epochs (training seeds seed and seed + 500, each its own validation split). Kendall tau-b with its 95% "
            "interval, over the first 20 paths of every seed (the same paths as `oneshot.py`'s check) and over 30 where a seed has them. Reference noise: tau between the two trainings of the same paths; ceiling: the tau a "
            "perfect score could reach against one training / against the mean of two (if the noise of "
            "trainings is independent, Greiner's and Spearman-Brown's relations).",
            table(["seed", "paths", *CHECKS.values(), "reference noise by accuracy: tau A-B; ceiling one / mean "
                   "of 2", "reference noise by loss: tau A-B; ceiling one / mean of 2",
                   "supernet / check device-s"], rows),
            f"Worst seed of each: {worst_text}."]


def budget_part() -> list[str]:
    """The cheaper supernets' rows (``oneshot_budget.py``), as they are."""
    rows = [[*row.values()] for f in sorted(RESULTS.glob("oneshot-budget-seed*.md")) for row in read_rows(f)]
    if not rows:
        return []
    headers = list(read_rows(sorted(RESULTS.glob("oneshot-budget-seed*.md"))[0])[0])
    return ["## A cheaper supernet (`benchmarks/oneshot_budget.py`, `results/oneshot-budget-seed<N>.md`)",
            table(headers, rows)]


def pipeline_text(found: list[tuple[str, dict[str, str]]]) -> str:
    """Which one-shot phase puts the whole pipeline over a fifth of evolution's, seed by seed."""
    over, under = [], []
    for _, row in found:
        p = phases(row)
        whole = p["evolution"] + p["evolution_final"]
        share = (p["supernet"] + p["paths"] + p["final"]) / whole
        (over if share > 0.2 else under).append((row["seed"], p, whole, share))
    if not over:
        return "The whole pipeline is within a fifth of evolution's on every seed."
    def terms(items):
        return "; ".join(f"seed {seed}: supernet {p['supernet']:.1f} s ({p['supernet'] / whole:.3f}), path search "
                         f"{p['paths']:.1f} s, final {p['final']:.1f} s, evolution {p['evolution']:.1f} + "
                         f"{p['evolution_final']:.1f} s" for seed, p, whole, _ in items)
    excess = ", ".join(f"seed {seed} by {(share - 0.2) * whole:.1f} s" for seed, p, whole, share in over)
    return (f"Why the whole pipeline exceeds a fifth ({excess}): the supernet is the largest one-shot term there "
            f"({terms(over)}); on the other seeds: {terms(under)}.")


def main() -> None:
    rows, worst = [], {"final": [], "search": [], "pipeline": [], "tau": []}
    for name, row in seed_rows():
        evolution, oneshot = number(cell(row, "evolution")), number(cell(row, "oneshot"))
        search = number(cell(row, "search"))
        pipeline = number(cell(row, "pipeline"), 1 if "by accuracy" in " ".join(row) else 0)
        tau = number(cell(row, "tau"))
        seed = row["seed"]
        difference = oneshot - evolution
        worst["final"].append((difference, seed))
        worst["search"].append((search, seed))
        worst["pipeline"].append((pipeline, seed))
        worst["tau"].append((tau, seed))
        checks = [abs(difference) <= 1.0 or difference > 0, search <= 0.2, pipeline <= 0.2, tau >= 0.5]
        rows.append([seed, name, f"{evolution:.2f} / {oneshot:.2f} ({difference:+.2f})", f"{search:.3f}",
                     f"{pipeline:.3f}", cell(row, "tau"), " ".join("yes" if c else "NO" for c in checks),
                     phase_text(row), cell(row, "loss_final") or "-", cell(row, "loss_tau") or "-",
                     cell(row, "noise") or "-"])
    lines = ["# One-shot vs evolution on digits: issue 33's targets per seed",
             "Read from the per-seed tables of `benchmarks/oneshot.py` (their headers give the commands); written by "
             "`benchmarks/oneshot_summary.py`. Targets: final within 1 point of evolution's (or above it), at most "
             "a fifth of evolution's device-seconds (search phases; whole pipeline, the same final training "
             "counted on both sides), Kendall tau >= 0.5 over at least 20 paths (the ranking check: supernet accuracy, 512 "
             "calibration images, against one 8-epoch stand-alone training).",
             table(["seed", "table", "final acc % evolution / one-shot (points)", "search phases / evolution's",
                    "whole pipeline / evolution's", "tau [95%] (the check)",
                    "within 1 point / search <= 1/5 / pipeline <= 1/5 / tau >= 0.5",
                    "one-shot pipeline: supernet + path search + final, shares of evolution's search + final",
                    "paths by loss: final acc % (points)", "tau by supernet loss", "reference noise (tau A-B; ceiling)"],
                   rows)]
    final, search = min(worst["final"]), max(worst["search"])
    pipeline, tau = max(worst["pipeline"]), min(worst["tau"])
    lines.append(f"Worst seed of each: final {final[0]:+.2f} points (seed {final[1]}), search phases {search[0]:.3f} "
                 f"(seed {search[1]}), whole pipeline {pipeline[0]:.3f} (seed {pipeline[1]}), tau {tau[0]:.2f} "
                 f"(seed {tau[1]}); over {len(rows)} seeds.")
    lines.append(pipeline_text(seed_rows()))
    lines += [*check_part(), *budget_part()]
    text = "\n\n".join(lines) + "\n"
    (RESULTS / "oneshot-summary.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
