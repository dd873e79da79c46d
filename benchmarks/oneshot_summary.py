"""Issue 33's digits targets over every seed ``benchmarks/oneshot.py`` was run on: reads the per-seed tables
(``results/oneshot.md`` for seed 0, ``results/oneshot-seed<N>.md`` for the others; both the first table format
and the one with the reference-noise columns) and writes ``results/oneshot-summary.md``: per seed, whether the
final model is within 1 point of evolution's, the search phases' and the whole pipeline's share of evolution's
device-seconds against a fifth, tau against 0.5; and the worst seed of each. Run from the repository root::

    .venv/bin/python benchmarks/oneshot_summary.py
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.report import RESULTS, table  # noqa: E402

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
                     cell(row, "loss_final") or "-", cell(row, "loss_tau") or "-", cell(row, "noise") or "-"])
    lines = ["# One-shot vs evolution on digits: issue 33's targets per seed",
             "Read from the per-seed tables of `benchmarks/oneshot.py` (their headers give the commands); written by "
             "`benchmarks/oneshot_summary.py`. Targets: final within 1 point of evolution's (or above it), at most "
             "a fifth of evolution's device-seconds (search phases; whole pipeline, the same final training "
             "counted on both sides), Kendall tau >= 0.5 over at least 20 paths (the ranking check: supernet accuracy, 512 "
             "calibration images, against one 8-epoch stand-alone training).",
             table(["seed", "table", "final acc % evolution / one-shot (points)", "search phases / evolution's",
                    "whole pipeline / evolution's", "tau [95%] (the check)",
                    "within 1 point / search <= 1/5 / pipeline <= 1/5 / tau >= 0.5",
                    "paths by loss: final acc % (points)", "tau by supernet loss", "reference noise (tau A-B; ceiling)"],
                   rows)]
    final, search = min(worst["final"]), max(worst["search"])
    pipeline, tau = max(worst["pipeline"]), min(worst["tau"])
    lines.append(f"Worst seed of each: final {final[0]:+.2f} points (seed {final[1]}), search phases {search[0]:.3f} "
                 f"(seed {search[1]}), whole pipeline {pipeline[0]:.3f} (seed {pipeline[1]}), tau {tau[0]:.2f} "
                 f"(seed {tau[1]}); over {len(rows)} seeds.")
    text = "\n\n".join(lines) + "\n"
    (RESULTS / "oneshot-summary.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
