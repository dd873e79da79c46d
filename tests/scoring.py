"""Scoring a downloaded architecture exactly as its README tells a user to (browser and engine tests)."""
from __future__ import annotations

import zipfile
from pathlib import Path


def score_as_the_readme_says(archive: zipfile.ZipFile, prefix: str, folder: Path) -> float:
    """Unpack ``prefix/`` and run the script its README.txt shows (the indented lines) with this Python."""
    import subprocess
    import sys

    target = folder / prefix
    for name in archive.namelist():
        if name.startswith(prefix + "/"):
            (target / name.split("/", 1)[1]).parent.mkdir(parents=True, exist_ok=True)
            (target / name.split("/", 1)[1]).write_bytes(archive.read(name))
    readme = (target / "README.txt").read_text()
    script = "\n".join(line[4:] for line in readme.splitlines() if line.startswith("    "))
    run = subprocess.run([sys.executable, "-c", script], cwd=target, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    return float(run.stdout.strip().splitlines()[-1])
