"""Downloads of a search, as services (no request objects): the dashboard's download views and the
``search export`` command call these.

- :func:`individuals_csv`: one row per individual, a stable header in the spirit of optuna-dashboard's export
  (``number, state, fitness, genome_*, metric_*, timing_*`` then where and when it ran, and its parents; last, a
  gang's gradient traffic: ``compression``, ``bytes_sent`` and ``bytes_dense`` of all its ranks over the whole
  evaluation, ``kept``; then ``role``: ``search``, or ``final`` for a final run, ``final``'s retraining).
- :func:`events_jsonl`: the search's event log, one JSON object per line.
- :func:`best_zip`: the best k architectures (a search with final runs: those first, the best of them is its
  result), each as genome JSON, standalone PyTorch source, trained weights
  where kept (``evaluation.keep_weights``, see ``webapp.control.kept``) and ONNX (with those weights); all
  but the genome from ``evaluators.model_source`` when it is installed.
"""
from __future__ import annotations

import csv
import datetime as dt
import json
import logging
import zipfile
from typing import Any, BinaryIO, TextIO

from evaluators.catalog import VALIDATION_FRACTION
from evaluators.model_source import standalone_source
from nas.spaces import space_from_config
from webapp.searches.models import Event, Individual, Search, Weights
from webapp.searches.data_config import dataset_argument
from webapp.services.predict_script import prediction_files
from webapp.searches.ranking import best_individuals

log = logging.getLogger(__name__)

#: Metrics first in this order when present; any other metric follows in alphabetical order.
KNOWN_METRICS = ("accuracy", "params", "flops", "latency_ms", "peak_memory_bytes")
TIMINGS = ("build", "train", "validate", "total")
TAIL = ("node", "device", "slot", "attempts", "reruns", "generation", "operator", "parents", "parent_numbers", "key",
        "description", "failure", "message", "created", "dispatched", "started", "finished", "duration",
        "packet_bytes", "epochs_trained", "predicted_fitness", "prune_reason", "compression", "bytes_sent",
        "bytes_dense", "kept", "role")
#: A gang's gradient traffic (``evaluators.ranks.Gang.traffic``): columns of their own, blank off a gang.
TRAFFIC = ("compression", "bytes_sent", "bytes_dense", "kept")


def _iso(value: dt.datetime | None) -> str:
    return value.isoformat() if value else ""


def _flat_genome(space, genome: dict[str, Any]) -> dict[str, Any]:
    try:
        return space.flatten(genome)
    except Exception:  # a genome the space no longer reads: keep the row, without gene columns
        return {}


def individuals_csv(search: Search, out: TextIO) -> int:
    """Write every individual of ``search`` as CSV to ``out``; returns the number of rows."""
    space = space_from_config(search.config["space"])
    individuals = list(Individual.objects.filter(search=search).order_by("number"))
    genes: list[str] = []
    metrics: set[str] = set()
    timings: list[str] = list(TIMINGS)
    flats = []
    for individual in individuals:
        flat = _flat_genome(space, individual.genome)
        flats.append(flat)
        genes.extend(name for name in flat if name not in genes)
        for name, value in (individual.metrics or {}).items():
            if name == "timings" and isinstance(value, dict):
                timings.extend(t for t in value if t not in timings)
            elif not isinstance(value, (dict, list)) and name not in TRAFFIC:
                metrics.add(name)
    ordered_metrics = [m for m in KNOWN_METRICS if m in metrics or m in ("accuracy", "params", "flops")]
    ordered_metrics += sorted(metrics - set(ordered_metrics))
    header = (["number", "state", "fitness"] + [f"genome_{g}" for g in genes]
              + [f"metric_{m}" for m in ordered_metrics] + [f"timing_{t}" for t in timings] + list(TAIL))
    number_by_key: dict[str, int] = {}
    for individual in individuals:
        number_by_key.setdefault(individual.key, individual.number)
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    for individual, flat in zip(individuals, flats):
        values = individual.metrics or {}
        times = values.get("timings") if isinstance(values.get("timings"), dict) else {}
        tail = {
            "node": individual.node, "device": individual.device, "slot": individual.slot,
            "attempts": individual.attempts, "reruns": individual.reruns, "generation": individual.generation, "operator": individual.operator,
            "parents": ";".join(individual.parents),
            "parent_numbers": ";".join(str(number_by_key[k]) for k in individual.parents if k in number_by_key),
            "key": individual.key, "description": individual.description, "failure": individual.failure,
            "message": individual.message, "created": _iso(individual.created),
            "dispatched": _iso(individual.dispatched), "started": _iso(individual.started),
            "finished": _iso(individual.finished),
            "duration": "" if individual.duration is None else individual.duration,
            "packet_bytes": individual.packet_bytes,
            # early stopping: state "pruned", the epochs it trained, the pruner's prediction and its reason
            "epochs_trained": "" if individual.epochs_trained is None else individual.epochs_trained,
            "predicted_fitness": "" if individual.predicted_fitness is None else individual.predicted_fitness,
            "prune_reason": (individual.prune or {}).get("reason", ""),
            # a gang's bytes sent by all its ranks over the whole evaluation, and what dense AllReduce would send
            **{name: "" if values.get(name) is None else values[name] for name in TRAFFIC},
            "role": individual.role,  # final: a final run (the search's top genomes retrained, ``final``)
        }
        writer.writerow(
            [individual.number, individual.status, "" if individual.fitness is None else individual.fitness]
            + [flat.get(g, "") for g in genes]
            + ["" if values.get(m) is None else values.get(m) for m in ordered_metrics]
            + ["" if times.get(t) is None else times.get(t) for t in timings]
            + [tail[name] for name in TAIL]
        )
    return len(individuals)


def events_jsonl(search: Search, out: TextIO) -> int:
    """Write the search's event log to ``out`` as JSON lines, oldest first; returns the number of events."""
    count = 0
    for event in Event.objects.filter(search=search).order_by("seq").iterator(chunk_size=2000):
        out.write(json.dumps({"seq": event.seq, "type": event.type, "time": event.time.isoformat(),
                              "data": event.data}, sort_keys=True) + "\n")
        count += 1
    return count


def genome_document(search: Search, individual: Individual) -> dict[str, Any]:
    """The genome with what is needed to rebuild and judge it (space, dataset, training, results)."""
    return {
        "search": search.pk, "search_name": search.name, "number": individual.number, "key": individual.key,
        "genome": individual.genome, "space": search.config["space"], "dataset": dataset_argument(search.config),
        "training": search.config["training"], "description": individual.description,
        "fitness": individual.fitness, "metrics": individual.metrics, "node": individual.node,
        "device": individual.device,
    }


def normalization_of(individual: Individual) -> dict[str, list[float]] | None:
    """The input normalisation its evaluation used (results of older workers carry none)."""
    value = (individual.metrics or {}).get("normalization")
    return value if isinstance(value, dict) and {"mean", "std"} <= set(value) else None


def schedule_document(individual: Individual) -> dict[str, Any] | None:
    """``schedule.json``: the inference schedule its worker measured (searches with ``evaluation.latency``),
    with the device, batch size and latencies it was measured at; ``model.py``'s ``run_schedule`` reads it."""
    report = (individual.metrics or {}).get("schedule")
    if not isinstance(report, dict) or not isinstance(report.get("schedule"), dict):
        return None
    # the stages of the schedule the worker chose; the optimal one beside them where it did not pay
    return {**report["schedule"], **{key: report[key] for key in
                                     ("device", "batch", "chosen", "latency_ms", "measured_ms", "modelled_ms",
                                      "optimal") if key in report}}


def architecture_files(search: Search, individual: Individual) -> dict[str, bytes]:
    """What a download holds of one architecture, name -> bytes, from stored bytes only: ``genome.json``,
    ``model.py`` (the worker's when it kept the individual's files, else written here from the genome: text, no
    torch), and where kept ``weights.pt`` and ``model.onnx``. A genome that no longer builds gets an
    ``EXPORT_ERROR.txt`` instead of a ``model.py``."""
    files = {"genome.json": json.dumps(genome_document(search, individual), indent=2).encode()}
    stored = Weights.objects.filter(individual=individual).first()
    if stored is not None and stored.source:
        files["model.py"] = stored.source.encode()
    else:
        try:
            files["model.py"] = standalone_source(individual.genome, search.config["space"], dataset_argument(search.config),
                                                  normalization_of(individual)).encode()
        except Exception as error:  # one architecture that does not build must not spoil the download
            log.warning("no source for individual %s of search %s: %s", individual.number, search.pk, error)
            files["EXPORT_ERROR.txt"] = f"{type(error).__name__}: {error}\n".encode()
    schedule = schedule_document(individual)
    if schedule is not None:
        files["schedule.json"] = json.dumps(schedule, indent=2).encode()
    if stored is not None:
        files["weights.pt"] = bytes(stored.data)
        if stored.onnx:
            files["model.onnx"] = bytes(stored.onnx)
        files.update(prediction_files(search.config))  # a registered set: predict.py prints class names
    return files


def _scoring_script(search: Search, individual: Individual) -> str:
    """Ten lines that load the dataset's raw images as a user would, take the validation split the search held
    out, and print the accuracy the search reported (the network normalises its input itself)."""
    dataset, seed = search.config["dataset"], search.config["training"].get("seed", 0)
    load = LOADERS.get(dataset)
    if load is None or normalization_of(individual) is None:
        return ""
    accuracy = (individual.metrics or {}).get("accuracy")
    return SCRIPT.format(load=load.replace("\n", "\n    "), seed=seed, fraction=VALIDATION_FRACTION[dataset],
                         accuracy=accuracy)


#: How a user loads each dataset's raw training images as ``x`` (N, C, H, W floats) and labels ``y``.
LOADERS = {
    "digits": ("from sklearn.datasets import load_digits\n"
               "digits = load_digits()\n"
               "x, y = torch.tensor(digits.images[:, None], dtype=torch.float32), torch.tensor(digits.target)"),
    "cifar10": ("from torchvision import datasets, transforms\n"
                "data = datasets.CIFAR10(\"data\", train=True, transform=transforms.ToTensor())\n"
                "x, y = torch.stack([image for image, _ in data]), torch.tensor(data.targets)"),
    "fashion_mnist": ("from torchvision import datasets, transforms\n"
                      "data = datasets.FashionMNIST(\"data\", train=True, transform=transforms.ToTensor())\n"
                      "x, y = torch.stack([image for image, _ in data]), data.targets"),
}
SCRIPT = """
Score it on the raw images, as the search did (run in this folder; prints about {accuracy}):

    import numpy as np, torch
    from model import build
    net = build().eval()
    net.load_state_dict(torch.load("weights.pt", weights_only=True))
    {load}
    order = np.random.default_rng({seed}).permutation(len(y))  # the split the search used
    held_out = np.sort(order[:min(max(1, round(len(y) * {fraction})), len(y) - 1)])
    with torch.no_grad():
        print((net(x[held_out]).argmax(1) == y[held_out]).float().mean().item())
"""


def held_out_line(search: Search, individual: Individual) -> str:
    """What the README says of the individual's score on the search's held-out test set (``data.test``)."""
    test = (search.config.get("data") or {}).get("test")
    metrics = individual.metrics or {}
    if not test:
        return ""
    if "held_out_accuracy" not in metrics:
        return f"\nHeld-out test set {test}: not scored ({metrics.get('held_out_error', 'no result')}).\n"
    return (f"\nHeld-out test set {test} (never seen by the search): accuracy {metrics['held_out_accuracy']:.4f} "
            f"on {metrics['held_out_images']} images; python predict.py on its class folders prints the same.\n")


def _readme(search: Search, best: list[Individual]) -> str:
    lines = [f"The {len(best)} best architectures of search #{search.pk} {search.name!r}, best first.", ""]
    final = (search.config or {}).get("final")
    if any(i.role == Individual.Role.FINAL for i in best):
        lines += [f"Final runs first: the search's top {final['top']} genomes retrained from scratch for "
                  f"{final['epochs']} epochs once it ended; the best of them, rank01, is the search's result.", ""]
    for rank, individual in enumerate(best, start=1):
        what = f"final run of #{_retrained(search, individual)}, " if individual.role == Individual.Role.FINAL else ""
        lines.append(f"rank{rank:02d}_n{individual.number}: {what}fitness {individual.fitness:.6g}  "
                     f"{individual.description}")
        if held_out_line(search, individual):
            lines.append("    " + held_out_line(search, individual).strip())
    if not best:
        lines.append("No individual has a result yet.")
    lines += ["", "Each folder: genome.json (the genome and its results), model.py (a standalone PyTorch network:",
              "build() returns it; it takes the dataset's raw images and normalises them itself), and for the best",
              "whose files the search kept (evaluation.keep_weights) weights.pt, the trained weights, and",
              "model.onnx, the same network with them."]
    return "\n".join(lines) + "\n"


def _retrained(search: Search, run: Individual) -> str:
    """The number of the search's individual a final run retrained (the first of that genome)."""
    number = (Individual.objects.filter(search=search, key=run.key, role=Individual.Role.SEARCH)
              .order_by("number").values_list("number", flat=True).first())
    return "?" if number is None else str(number)


def best_zip(search: Search, k: int, out: BinaryIO) -> list[str]:
    """Write a zip of the ``k`` best architectures to ``out`` (``rank01_n<number>/`` folders of
    :func:`architecture_files`, each with a README.txt that scores it where weights are kept, plus a
    ``README.txt``); returns the names written."""
    best = best_individuals(search, k)
    names: list[str] = []
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for rank, individual in enumerate(best, start=1):
            names += _write_architecture(archive, f"rank{rank:02d}_n{individual.number}", search, individual)
        archive.writestr("README.txt", _readme(search, best))
        names.append("README.txt")
    log.info("search %s: zipped its %d best architectures (%d with their trained weights)", search.pk, len(best),
             sum(1 for name in names if name.endswith("/weights.pt")))
    return names


def _write_architecture(archive: zipfile.ZipFile, prefix: str, search: Search, individual: Individual) -> list[str]:
    files = architecture_files(search, individual)
    if "weights.pt" in files:
        script = _scoring_script(search, individual)
        if "predict.py" in files:
            script = ("\nPredict the class of each image under a folder (class folders also score it):\n\n"
                      "    python predict.py FOLDER\n" + held_out_line(search, individual))
        if script:
            files["README.txt"] = (f"{individual.description}\n" + script).encode()
    for name, data in files.items():
        archive.writestr(f"{prefix}/{name}", data)
    return [f"{prefix}/{name}" for name in files]


def zip_contents(individual: Individual) -> list[str]:
    """What an architecture's zip holds, in words (the individual page's download button says it)."""
    stored = Weights.objects.filter(individual=individual).values_list("onnx", flat=True).first()
    kept = Weights.objects.filter(individual=individual).exists()
    return ["genome", "PyTorch source", *(["trained weights"] if kept else []), *(["ONNX"] if stored else []),
            *(["inference schedule"] if schedule_document(individual) else [])]


def individual_zip(search: Search, individual: Individual, out: BinaryIO) -> list[str]:
    """One architecture as a zip (the files of :func:`architecture_files` under ``search<id>_n<number>/``)."""
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        return _write_architecture(archive, f"search{search.pk}_n{individual.number}", search, individual)
