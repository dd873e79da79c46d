"""Bytes per evaluation packet against ``ind_len`` for each search space, against seed 000's Eq. (2),
L = l_p + l_ind * ind_len.

For each space and each ind_len, ``--draws`` packets are built exactly as the control loop builds them
(``webapp.messaging.signing.build``: every individual with its ids, genome key, genome sampled from the space,
the space, the dataset, the default training budget and evaluation mode, then the HMAC signature) and
measured two ways:

- the packet: ``len(json.dumps(data)) + len(signature)``, what the engine's accounting counts (``bytes_sent``);
- on the wire: the Celery message the loop's ``dispatch.send_packet`` leaves in Redis (headers, the
  base64-encoded body, delivery info), read back from a queue no worker consumes, in a private Redis.

l_p and l_ind are fitted by least squares on every measured packet (``benchmarks.message_model.fit_message_length``); the
residuals say how far the model is from the sizes (genomes of variable length, e.g. chain's 1..8 layers, are
the main source). No evaluation worker is needed. Run from the repository root::

    python benchmarks/messages.py --max-ind-len 10 --draws 20
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import uuid
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.report import Report, command_line, table  # noqa: E402
from benchmarks.stack import Stack, main_guard  # noqa: E402

QUEUE = "bench.messages"  #: a queue no worker consumes: messages stay in Redis to be measured


def packet_items(config: dict, genomes: list[dict], first: int) -> list[dict]:
    """The individuals of one packet, with the fields the loop puts in them (``SearchLoop._send``)."""
    from nas.spaces import space_from_config

    space = space_from_config(config["space"])
    return [
        {"search": 1, "individual": first + i, "number": first + i, "key": space.key(genome), "genome": genome,
         "space": config["space"], "dataset": config["dataset"], "training": config["training"],
         "evaluation": config["evaluation"]}
        for i, genome in enumerate(genomes)
    ]


def wire_bytes(data: dict, signature: str) -> int:
    """The size of the Celery message for this packet as it sits in Redis."""
    from webapp.messaging import transport
    from webapp.messaging import dispatch

    redis = transport.client()
    redis.delete(QUEUE)
    dispatch.send_packet(data, signature, uuid.uuid4().hex, QUEUE)
    raw = redis.lindex(QUEUE, 0)
    redis.delete(QUEUE)
    return len(raw)


def measure(space_name: str, max_ind_len: int, draws: int, seed: int) -> list[tuple[int, int, int]]:
    """(ind_len, packet bytes, wire bytes) for every packet built."""
    from nas.spaces import space_from_config
    from webapp.messaging import signing as packets
    from webapp.searches.config import check_config

    config = check_config({"space": {"name": space_name}, "strategy": {"name": "regularized"}})
    space = space_from_config(config["space"])
    rng = np.random.default_rng(seed)
    sizes = []
    for ind_len in range(max_ind_len + 1):
        for draw in range(draws):
            items = packet_items(config, [space.sample(rng) for _ in range(ind_len)], first=1000 * draw)
            data, signature = packets.build(items)
            sizes.append((ind_len, len(json.dumps(data)) + len(signature), wire_bytes(data, signature)))
    return sizes


def genome_bytes(space_name: str, draws: int, seed: int) -> float:
    """The mean JSON size of a genome sampled from the space: the part of l_ind that is the architecture."""
    from nas.spaces import get_space

    space, rng = get_space(space_name), np.random.default_rng(seed)
    return statistics.fmean(len(json.dumps(space.sample(rng))) for _ in range(draws))


def fit(points: list[tuple[int, int]]) -> tuple[float, float, float, float]:
    """l_p, l_ind, R^2 and the largest absolute residual (bytes) of Eq. (2) fitted to (ind_len, bytes)."""
    from benchmarks.message_model import fit_message_length, message_length_model

    lens, sizes = [p[0] for p in points], [p[1] for p in points]
    l_p, l_ind = fit_message_length(lens, sizes)
    residuals = [size - message_length_model(l_p, l_ind, n) for n, size in points]
    mean = statistics.fmean(sizes)
    total = sum((size - mean) ** 2 for size in sizes)
    r2 = 1 - sum(r * r for r in residuals) / total if total else 1.0
    return l_p, l_ind, r2, max(abs(r) for r in residuals)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spaces", default="pelee,chain,cell", help="comma-separated spaces (default all three)")
    parser.add_argument("--max-ind-len", type=int, default=10, help="ind_len from 0 to this (default 10)")
    parser.add_argument("--draws", type=int, default=20, help="packets per space and ind_len (default 20)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    report = Report("messages", "Bytes per packet against ind_len (seed 000's L = l_p + l_ind * ind_len)",
                    command_line(argv, "messages.py"))
    per_len, fits = [], []
    with Stack(control=False) as _:
        for space in args.spaces.split(","):
            sizes = measure(space, args.max_ind_len, args.draws, args.seed)
            for ind_len in range(args.max_ind_len + 1):
                packet = [p for n, p, _ in sizes if n == ind_len]
                wire = [w for n, _, w in sizes if n == ind_len]
                per_len.append([space, ind_len, f"{statistics.fmean(packet):.0f}", min(packet), max(packet),
                                f"{statistics.fmean(wire):.0f}"])
            for label, column in (("packet", 1), ("wire", 2)):
                l_p, l_ind, r2, worst = fit([(s[0], s[column]) for s in sizes])
                genome = genome_bytes(space, 10 * args.draws, args.seed)
                fits.append([space, label, f"{l_p:.1f}", f"{l_ind:.1f}", f"{genome:.0f}", f"{r2:.5f}", f"{worst:.1f}"])
    report.add(f"{args.draws} packets per space and ind_len, genomes sampled from the space (seed {args.seed}); "
               "the default training budget and evaluation mode of a search in every individual. "
               "packet = JSON + HMAC signature as the engine counts it; wire = the Celery message in Redis.")
    report.add("## The fit of Eq. (2), least squares over every packet\n\n" + table(
        ["space", "measured", "l_p (bytes)", "l_ind (bytes per individual)", "of which the genome (mean)", "R^2",
         "largest residual (bytes)"], fits)
        + "\n\nThe rest of l_ind is what every individual repeats: ids, genome key, the space, dataset, training "
        "budget and evaluation settings (the same for the whole packet).")
    report.add("## Measured sizes (bytes)\n\n" + table(
        ["space", "ind_len", "packet mean", "packet min", "packet max", "wire mean"], per_len))


if __name__ == "__main__":
    main_guard(main)
