"""Every benchmark parses under the project's Python, and every one that runs as a script is listed, with its
question, in ``benchmarks/README.md`` (one did not parse on Python 3.11 for several rounds: nothing ran it)."""
from __future__ import annotations

from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
SCRIPTS = sorted(BENCHMARKS.glob("*.py"))


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda path: path.name)
def test_the_benchmark_compiles(path):
    compile(path.read_text(), str(path), "exec")


def test_every_script_is_in_the_benchmarks_readme():
    readme = (BENCHMARKS / "README.md").read_text()
    runnable = [path.name for path in SCRIPTS if "__main__" in path.read_text()]
    assert runnable, "no benchmark script found"
    assert [name for name in runnable if f"`{name}`" not in readme] == []
