"""Training on a registered data set: a folder of 32x32 RGB PNGs kept decoded in memory, the same folder
decoded per batch from disk (``NAS_DATA_CACHE_MB=0``: ``evaluators.own_split``'s streamed path, decoded in the
training process), and the same pixels as a ``.npz`` (in memory, as a built-in set is), on one CPU thread. What
differs is the first load (digest, then decoding every PNG with Pillow; streamed: the first pass that learns the
statistics), a cached one (another seed in the same process), and for the streamed set the training rate, which
pays for decoding every batch again. A last row times the streamed batches alone (no network): the decoding's own
rate on one thread.

A second table: what a worker that cannot read the path pays to fetch the set by digest
(``evaluators.data_cache``): the server's tar of the folder (made once, on the first request), the download over
HTTP from a local server (loopback: the network's own cost is not in it), unpacking and the digest check, against
a fetch that finds the host's cached copy (the lock and a look). Run from the repository root::

    python benchmarks/own_data.py [--images 2000] [--epochs 1]     # both tables -> results/own_data.md
    python benchmarks/own_data.py --only fetch                      # the fetch table -> results/own_data_fetch.md
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402
import torch  # noqa: E402
from PIL import Image  # noqa: E402

from benchmarks.report import Report, command_line, table  # noqa: E402
from evaluators import archives, data_cache  # noqa: E402
from evaluators.data_files import scan  # noqa: E402
from evaluators.evaluate import evaluate  # noqa: E402
from evaluators.own_split import CACHE_VARIABLE, split  # noqa: E402

GENOME = {"layers": [{"kernel": 3, "filters": 16}, {"kernel": 3, "filters": 32}]}
SPACE = {"name": "chain", "max_layers": 4, "modules": 2}


def write_images(root: Path, images: int, classes: int = 10) -> tuple[np.ndarray, np.ndarray]:
    """Class templates plus noise as 32x32 RGB PNGs in class folders; the same pixels returned."""
    rng = np.random.default_rng(7)
    templates = rng.integers(0, 256, size=(classes, 8, 8, 3)).repeat(4, axis=1).repeat(4, axis=2)
    labels = rng.integers(0, classes, size=images)
    pixels = np.clip(templates[labels] + rng.normal(0, 40, size=(images, 32, 32, 3)), 0, 255).astype(np.uint8)
    for index, (image, label) in enumerate(zip(pixels, labels)):
        folder = root / f"class_{label}"
        folder.mkdir(parents=True, exist_ok=True)
        Image.fromarray(image).save(folder / f"{index:05d}.png")
    return pixels, labels


def spec(path: Path, name: str) -> dict:
    found = scan(path)
    return {"name": name, "kind": found.kind, "path": str(path), "digest": found.digest, "classes": found.classes,
            "channels": found.channels, "input_size": 32, "validation_share": 0.2, "augment": False}


def fetch_rows(root: Path, digest: str, work: Path) -> list[list[str]]:
    """Seconds to make the server's tar, a first fetch over loopback HTTP into an empty cache, and a cached one."""
    import functools
    import http.server
    import threading
    import urllib.request

    served = work / "served"
    served.mkdir()
    mark = time.perf_counter()
    archives.write_tar(root, served / "set.tar")
    rows = [["server: tar of the folder (first request only)", f"{time.perf_counter() - mark:.3f}",
             f"{(served / 'set.tar').stat().st_size / 1e6:.1f} MB"]]
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(served))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/set.tar"

    def download(target: Path) -> None:
        with urllib.request.urlopen(url) as answer, open(target, "wb") as out:
            out.write(answer.read())

    try:
        for what, first in (("worker: first fetch (download, unpack, digest)", True),
                            ("worker: cached (lock, look)", False)):
            mark = time.perf_counter()
            _, fetched = data_cache.fetched(work / "cache", digest, "folder", download, 1 << 34)
            assert fetched == first, what
            rows.append([what, f"{time.perf_counter() - mark:.4f}", ""])
    finally:
        server.shutdown()
    return rows


def fetch_note(images: int) -> str:
    return (f"Fetch by digest, a folder of {images} 32x32 RGB PNGs in 10 classes (a worker that cannot read the "
            "path): the download is over loopback HTTP, so a real network adds the archive's size over its bandwidth "
            "to the first fetch; every later evaluation on the host finds the cached copy. The machine's 2 cores "
            "were shared with other work while this ran: times are indicative.")


def fetch_only(args: argparse.Namespace, argv: list[str] | None) -> None:
    report = Report(args.output or "own_data_fetch", "Registered data sets: a worker's fetch by digest, first and "
                                                     "cached", command_line(argv, "own_data.py"))
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        write_images(root / "pngs", args.images)
        fetches = fetch_rows(root / "pngs", scan(root / "pngs").digest, root)
    print(fetches, flush=True)
    report.add(fetch_note(args.images))
    report.add(table(["step", "seconds", "archive"], fetches))


def training_rows(name: str, described: dict, args: argparse.Namespace) -> list[list[str]]:
    """A first and a cached evaluation on the set (the streamed one with a budget of 0 MB)."""
    rows = []
    budget = {"epochs": args.epochs, "batch_size": 64, "seed": 0}
    os.environ[CACHE_VARIABLE] = "0" if name.endswith("streamed") else "1024"
    for load, seed in (("first (digest + decode)", 0), ("cached (another seed)", 1)):
        result = evaluate(GENOME, SPACE, {**budget, "seed": seed}, described, "cpu")
        if not result.ok:
            rows.append([name, load, "failed", result.message[:80], "", "", ""])
            continue
        trained = result.metrics["steps"] * 64
        rows.append([name, load, f"{result.timings['data']:.2f}", f"{trained / result.timings['train']:.0f}",
                     f"{result.fitness:.3f}", f"{result.timings['total']:.2f}",
                     result.metrics.get("data_loading", "").split(":")[0].split(" (")[0]])
        print(rows[-1], flush=True)
    return rows


def decoding_row(described: dict) -> list[str]:
    """One epoch of the streamed training split's batches of 64, decoded and normalised, no network."""
    os.environ[CACHE_VARIABLE] = "0"
    data = split(described, 0, "cpu")
    picks = [slice(start, start + 64) for start in range(0, len(data.train_x) - 63, 64)]
    mark = time.perf_counter()
    count = sum(len(batch) for batch in data.train_x.batches(picks))
    return ["folder of PNGs, streamed", "batches only (no network)", "", f"{count / (time.perf_counter() - mark):.0f}",
            "", "", "decode + normalise"]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", type=int, default=2000)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--output", default=None, help="the results file's name (own_data, own_data_fetch)")
    parser.add_argument("--only", choices=["fetch"], help="only the fetch-by-digest table")
    args = parser.parse_args(argv)
    if args.only == "fetch":
        return fetch_only(args, argv)
    args.output = args.output or "own_data"
    torch.set_num_threads(1)
    report = Report(args.output, "Registered data sets: a folder of PNGs kept decoded or streamed from disk, against "
                                 "the same pixels as .npz, one CPU thread", command_line(argv, "own_data.py"))
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        mark = time.perf_counter()
        pixels, labels = write_images(root / "pngs", args.images)
        written = time.perf_counter() - mark
        np.savez(root / "same.npz", x=pixels, y=labels)
        mark = time.perf_counter()
        sets = {"folder of PNGs, kept decoded": spec(root / "pngs", "pngs"),
                ".npz (same pixels, in memory)": spec(root / "same.npz", "npz")}
        scanned = time.perf_counter() - mark
        sets["folder of PNGs, streamed"] = {**sets["folder of PNGs, kept decoded"], "name": "pngs-streamed"}
        rows = [row for name, described in sets.items() for row in training_rows(name, described, args)]
        rows.append(decoding_row(sets["folder of PNGs, streamed"]))
        print(rows[-1], flush=True)
        fetches = fetch_rows(root / "pngs", sets["folder of PNGs, kept decoded"]["digest"], root)
        print(fetches, flush=True)
    report.add(f"{args.images} images 32x32x3 in 10 classes (templates plus noise), {args.epochs} epoch(s), batch "
               f"64, a two-layer chain network, torch.set_num_threads(1). Writing the PNGs took {written:.1f} s and "
               f"scanning both sets (Pillow verify and decode, digests) {scanned:.1f} s. In memory the set takes "
               f"{args.images * 3 * 32 * 32 / 1e6:.1f} MB as bytes and {args.images * 3 * 32 * 32 * 4 / 1e6:.1f} MB "
               "as float32. The machine's 2 cores were shared with other work while this ran: times are indicative.")
    report.add(table(["set", "load", "data, s", "training images/s", "validation accuracy", "total, s", "data loading"],
                     rows))
    report.add(fetch_note(args.images))
    report.add(table(["step", "seconds", "archive"], fetches))


if __name__ == "__main__":
    main()
