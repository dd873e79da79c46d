"""Training throughput of K evaluation slots sharing one device, in both precisions.

Each slot is its own process (as in an evaluation worker with ``--slots K``), training a model with the
evaluators' own code (``build_model``, ``make_optimizer``, ``train_one_epoch``: tensors already on the device,
full batches, fp32 or bf16 autocast + channels_last). All K slots start together and train for a fixed window;
the table gives images/s summed over the slots, per slot, and the evaluations per hour that rate allows for a
training budget of ``--epochs`` x ``--train-images`` images (CIFAR-10's 45,000-image training split by default).

    python benchmarks/evaluation_throughput.py                       # cuda:0 when available, else the CPU
    python benchmarks/evaluation_throughput.py --device cpu --seconds 2 --slots 1,2
    python benchmarks/evaluation_throughput.py --device cuda:0 --batch 256 --seconds 10

On a CPU the defaults are small (batch 32, 2 s windows) so the whole table takes about 2-3 minutes; the slots
then split the cores between them. The H100 figures measured earlier (PeleeNet, batch 256: 6,745 img/s fp32 in one process) are the informational target.
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import queue
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

#: The two genomes measured: PeleeNet itself (seed 000's network, 2.1 M parameters) and a small chain.
GENOMES = {
    "pelee": ({"stages": [[2, 3, 32], [2, 4, 32], [2, 8, 32], [2, 6, 32]]}, {"name": "pelee"}),
    "small": ({"layers": [{"kernel": 3, "filters": 32}, {"kernel": 3, "filters": 64}]}, {"name": "chain", "modules": 3}),
}


def slot_main(index: int, tasks: mp.Queue, results: mp.Queue) -> None:
    """One slot: for each task, build and warm up, report ready, then train from ``start`` to ``end``."""
    import torch

    from evaluators.builders import describe
    from evaluators.catalog import dataset_shape
    from evaluators.networks import build_model
    from evaluators.training import TrainingBudget, make_optimizer, train_one_epoch

    results.put(("alive", index))  # imports done: the first row is not measured against starting processes
    while True:
        task = tasks.get()
        if task is None:
            return
        device = torch.device(task["device"])
        if device.type == "cpu":
            torch.set_num_threads(task["threads"] or max(1, (os.cpu_count() or 1) // task["slots"]))
        else:
            torch.backends.cudnn.benchmark = True
        genome, space = GENOMES[task["genome"]]
        shape, classes = dataset_shape(task["dataset"])
        budget = TrainingBudget(batch_size=task["batch"], precision=task["precision"], seed=index)
        torch.manual_seed(index)
        model = build_model(genome, space, task["dataset"]).to(device)
        if budget.precision == "bf16":
            model.to(memory_format=torch.channels_last)
        optimizer = make_optimizer(model, budget)
        chunk = task["batch"] * task["steps"]
        x = torch.randn(chunk, *shape, device=device)
        y = torch.randint(0, classes, (chunk,), device=device)
        generator = torch.Generator().manual_seed(index)
        train_one_epoch(model, x, y, optimizer, budget, generator)  # warm-up: cudnn tuning, allocator, autocast
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        results.put(("ready", index, describe(genome, space, task["dataset"])["params"]))
        start, end = tasks.get()
        time.sleep(max(0.0, start - time.time()))
        images = 0
        while time.time() < end:
            train_one_epoch(model, x, y, optimizer, budget, generator)
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            images += chunk
        results.put(("done", index, images, time.time() - start))
        del model, optimizer, x, y
        if device.type == "cuda":
            torch.cuda.empty_cache()


def measure(pool: list[tuple[mp.Process, mp.Queue]], results: mp.Queue, task: dict) -> tuple[float, int]:
    """Total images/s of ``task["slots"]`` slots training together; and the model's parameter count."""
    active = pool[: task["slots"]]
    for _, tasks in active:
        tasks.put(task)
    params = 0
    for _ in active:
        kind, _index, params = results.get(timeout=600)
    start = time.time() + 0.2
    for _, tasks in active:
        tasks.put((start, start + task["seconds"]))
    total = 0.0
    for _ in active:
        kind, _index, images, elapsed = results.get(timeout=600 + task["seconds"])
        total += images / elapsed
    return total, params


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default=None, help="cpu, cuda, cuda:N (default: cuda:0 when available)")
    parser.add_argument("--slots", default="1,2,4,8", help="slot counts to measure (comma-separated)")
    parser.add_argument("--precisions", default="fp32,bf16")
    parser.add_argument("--genomes", default="pelee,small", help=f"from {', '.join(GENOMES)}")
    parser.add_argument("--dataset", default="cifar10", help="the input shape: cifar10, fashion_mnist, digits, synthetic")
    parser.add_argument("--batch", type=int, default=None, help="images per step (default: 256 on a GPU, 32 on a CPU)")
    parser.add_argument("--steps", type=int, default=None, help="steps per train_one_epoch call (default 8 GPU, 2 CPU)")
    parser.add_argument("--seconds", type=float, default=None, help="measured window per row (default 10 GPU, 2 CPU)")
    parser.add_argument("--threads", type=int, default=1,
                        help="CPU threads per slot (0: the cores divided by the slots); one thread per slot keeps a "
                             "shared machine's OpenMP barriers from stalling")
    parser.add_argument("--epochs", type=int, default=3, help="training budget for the evaluations/hour column")
    parser.add_argument("--train-images", type=int, default=45_000, help="training images per epoch, same column")
    args = parser.parse_args()

    import torch

    device = args.device or ("cuda:0" if torch.cuda.is_available() else "cpu")
    gpu = device.startswith("cuda")
    batch = args.batch or (256 if gpu else 32)
    steps = args.steps or (8 if gpu else 2)
    seconds = args.seconds or (10.0 if gpu else 2.0)
    slot_counts = [int(s) for s in args.slots.split(",")]
    name = torch.cuda.get_device_name(device) if gpu else f"CPU ({os.cpu_count()} cores)"
    print(f"device {device}: {name}; torch {torch.__version__}; input {args.dataset}; batch {batch}; "
          f"{seconds:g} s per row; {args.threads or 'cores/slots'} CPU thread(s) per slot; evaluations/hour assume {args.epochs} epochs x {args.train_images} images")

    context = mp.get_context("spawn")
    results: mp.Queue = context.Queue()
    pool = []
    for index in range(max(slot_counts)):
        tasks: mp.Queue = context.Queue()
        process = context.Process(target=slot_main, args=(index, tasks, results), daemon=True)
        process.start()
        pool.append((process, tasks))
    for _ in pool:
        results.get(timeout=600)
    header = f"{'genome':<7} {'params':>9} {'precision':<9} {'slots':>5} {'images/s':>10} {'per slot':>9} {'evals/hour':>10} {'vs 1 slot':>9}"
    print(header)
    print("-" * len(header))
    try:
        for genome in args.genomes.split(","):
            for precision in args.precisions.split(","):
                single = None
                for slots in slot_counts:
                    task = {"device": device, "genome": genome, "precision": precision, "slots": slots,
                            "batch": batch, "steps": steps, "seconds": seconds, "dataset": args.dataset,
                            "threads": args.threads}
                    rate, params = measure(pool, results, task)
                    single = single or rate
                    per_hour = 3600 * rate / (args.epochs * args.train_images)
                    print(f"{genome:<7} {params:>9,} {precision:<9} {slots:>5} {rate:>10,.0f} {rate / slots:>9,.0f} "
                          f"{per_hour:>10,.1f} {rate / single:>8.2f}x", flush=True)
    except queue.Empty:
        print("a slot did not answer in time", file=sys.stderr)
    finally:
        for _, tasks in pool:
            tasks.put(None)
        for process, _ in pool:
            process.join(timeout=10)


if __name__ == "__main__":
    main()
