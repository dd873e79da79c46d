"""What every benchmark prints and saves: markdown tables under a header naming the machine they ran on.

Results go to ``benchmarks/results/<name>.md`` (and are printed as they are written), so that a figure is
never read without the CPU, cores, memory, Python, load and commit it was measured with.
"""
from __future__ import annotations

import datetime as dt
import os
import platform
import subprocess
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _memory_gib() -> str:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return f"{int(line.split()[1]) / 2**20:.1f} GiB"
    except OSError:
        pass
    return "unknown"


def _commit() -> str:
    """HEAD's short hash, and whether tracked code differed from it (a table made before its code was committed)."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
        changed = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", "*.py"], cwd=ROOT,
                                 capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return f"{head} with uncommitted changes to its code" if changed else head


def machine() -> str:
    """One markdown line per fact about the machine and the moment."""
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    facts = {
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "CPU": _cpu_model(),
        "cores": str(os.cpu_count()),
        "RAM": _memory_gib(),
        "Python": platform.python_version(),
        "OS": f"{platform.system()} {platform.release()}",
        "load average at start (1, 5, 15 min)": load,
        "commit": _commit(),
    }
    return "\n".join(f"- {name}: {value}" for name, value in facts.items())


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A markdown table; floats are written as given by the caller (format them first)."""
    lines = ["| " + " | ".join(headers) + " |", "| " + " | ".join("---" for _ in headers) + " |"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


class Report:
    """A results file built section by section; each section is printed at once and the file rewritten, so an
    interrupted run keeps what it measured."""

    def __init__(self, name: str, title: str, command: str) -> None:
        self.path = RESULTS / f"{name}.md"
        self.parts = [f"# {title}", machine(), f"Command: `{command}`"]
        print("\n\n".join(self.parts) + "\n", flush=True)

    def add(self, text: str) -> None:
        self.parts.append(text.strip())
        print(text.strip() + "\n", flush=True)
        RESULTS.mkdir(parents=True, exist_ok=True)
        self.path.write_text("\n\n".join(self.parts) + "\n")


def command_line(argv: Sequence[str] | None, script: str) -> str:
    import sys

    args = list(sys.argv[1:] if argv is None else argv)
    return " ".join([".venv/bin/python", f"benchmarks/{script}", *args])


def render_png(html: Path, png: Path, width: int = 900, height: int = 600) -> bool:
    """A PNG of a self-contained plotly HTML file, through Playwright and Debian's chromium (the browser the
    tests use; kaleido is not installed). False when that browser is not there."""
    chromium = Path("/usr/bin/chromium")
    if not chromium.exists():
        return False
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(chromium), headless=True, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": width, "height": height})
        page.goto(html.resolve().as_uri())
        page.wait_for_selector(".main-svg")
        page.screenshot(path=str(png))
        browser.close()
    return True
