"""Downloads of a search, as services (no request objects): the dashboard's download views and the
``search export`` command call these.

- :func:`individuals_csv`: one row per individual, a stable header in the spirit of optuna-dashboard's export
  (``number, state, fitness, genome_*, metric_*, timing_*`` then where and when it ran, and its parents).
- :func:`events_jsonl`: the search's event log, one JSON object per line.
- :func:`best_zip`: the best k architectures, each as genome JSON, standalone PyTorch source, trained weights
  where kept (``evaluation.keep_weights``, see ``webapp.searches.weights``) and ONNX (with those weights); all
  but the genome from ``evaluators.export`` when it is installed.
"""
from __future__ import annotations

import csv
import datetime as dt
import hashlib
import io
import json
import logging
import shutil
import tempfile
import zipfile
from pathlib import Path
from typing import Any, BinaryIO, TextIO

from django.conf import settings

from nas.spaces import space_from_config
from webapp.searches import queries, weights
from webapp.searches.models import Event, Individual, Search

log = logging.getLogger(__name__)

#: Metrics first in this order when present; any other metric follows in alphabetical order.
KNOWN_METRICS = ("accuracy", "params", "flops", "latency_ms", "peak_memory_bytes")
TIMINGS = ("build", "train", "validate", "total")
TAIL = ("node", "device", "slot", "attempts", "generation", "operator", "parents", "parent_numbers", "key",
        "description", "failure", "message", "created", "dispatched", "started", "finished", "duration",
        "packet_bytes")
#: Bump when ``evaluators.export`` writes different files, so old cached exports are not served.
EXPORT_FORMAT = 1
#: The marker of a complete cached export (written last, before its folder is renamed into place).
DONE = ".complete"


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
            elif not isinstance(value, (dict, list)):
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
            "attempts": individual.attempts, "generation": individual.generation, "operator": individual.operator,
            "parents": ";".join(individual.parents),
            "parent_numbers": ";".join(str(number_by_key[k]) for k in individual.parents if k in number_by_key),
            "key": individual.key, "description": individual.description, "failure": individual.failure,
            "message": individual.message, "created": _iso(individual.created),
            "dispatched": _iso(individual.dispatched), "started": _iso(individual.started),
            "finished": _iso(individual.finished),
            "duration": "" if individual.duration is None else individual.duration,
            "packet_bytes": individual.packet_bytes,
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
        "genome": individual.genome, "space": search.config["space"], "dataset": search.config["dataset"],
        "training": search.config["training"], "description": individual.description,
        "fitness": individual.fitness, "metrics": individual.metrics, "node": individual.node,
        "device": individual.device,
    }


def standalone_source(search: Search, individual: Individual) -> str | None:
    """Standalone PyTorch source of the architecture, or ``None`` while ``evaluators.export`` is absent."""
    try:
        from evaluators.export import standalone_source as source
    except ImportError:
        return None
    return source(individual.genome, search.config["space"], search.config["dataset"])


def _exported_files(search: Search, individual: Individual, folder: Path) -> list[Path]:
    """``evaluators.export.export_files`` (genome, source, kept weights, ONNX) when installed; ``[]`` otherwise
    or on failure.

    The files are kept under ``STATE_DIR/exports``, named by a hash of what they are made from (space, dataset,
    genome, weights): the ONNX export takes seconds per architecture, so only the first download of one pays
    for it. ``folder`` is where a failed export's ``EXPORT_ERROR.txt`` goes."""
    try:
        from evaluators.export import export_files, load_weights
    except ImportError:
        return []
    kept = weights.digest(individual)
    cached = _export_cache(search, individual, kept)
    if (cached / DONE).is_file():
        return sorted(p for p in cached.iterdir() if p.name != DONE)
    scratch = Path(tempfile.mkdtemp(prefix=f".{cached.name}-", dir=_mkdir(cached.parent)))
    try:
        state = None if kept is None else load_weights(io.BytesIO(weights.of(individual)))
        export_files(individual.genome, search.config["space"], search.config["dataset"], scratch, state)
        (scratch / DONE).write_text("")
        try:
            scratch.rename(cached)
        except OSError:  # another request exported the same architecture meanwhile: theirs is as good
            pass
    except Exception as error:  # one architecture that does not export must not spoil the download
        log.warning("export of individual %s of search %s failed: %s", individual.number, search.pk, error)
        (folder / "EXPORT_ERROR.txt").write_text(f"{type(error).__name__}: {error}\n")
        return [folder / "EXPORT_ERROR.txt"]
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return sorted(p for p in cached.iterdir() if p.name != DONE)


def _export_cache(search: Search, individual: Individual, weights_digest: str | None) -> Path:
    made_of = json.dumps([EXPORT_FORMAT, search.config["space"], search.config["dataset"], individual.genome,
                          weights_digest], sort_keys=True)
    return settings.STATE_DIR / "exports" / hashlib.sha256(made_of.encode()).hexdigest()[:32]


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def best_zip(search: Search, k: int, out: BinaryIO) -> list[str]:
    """Write a zip of the ``k`` best architectures to ``out``: ``rank01_n<number>/genome.json``, ``model.py``,
    ``weights.pt`` where kept and ``model.onnx`` (all but the first when ``evaluators.export`` is installed),
    plus ``README.txt``.
    Returns the names written."""
    best = queries.best_individuals(search, k)
    names: list[str] = []
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive, \
            tempfile.TemporaryDirectory() as scratch:
        lines = [f"The {len(best)} best architectures of search #{search.pk} {search.name!r}, best first.", ""]
        for rank, individual in enumerate(best, start=1):
            prefix = f"rank{rank:02d}_n{individual.number}"
            lines.append(f"{prefix}: fitness {individual.fitness:.6g}  {individual.description}")
            folder = Path(scratch) / prefix
            folder.mkdir()
            files = {p.name: p for p in _exported_files(search, individual, folder)}
            # Our genome.json (with the search's context) replaces the exporter's bare one.
            archive.writestr(f"{prefix}/genome.json", json.dumps(genome_document(search, individual), indent=2))
            names.append(f"{prefix}/genome.json")
            if "model.py" not in files:
                source = standalone_source(search, individual) if not files else None
                if source:
                    archive.writestr(f"{prefix}/model.py", source)
                    names.append(f"{prefix}/model.py")
            for name, path in sorted(files.items()):
                if name != "genome.json" and path.is_file():
                    archive.write(path, f"{prefix}/{name}")
                    names.append(f"{prefix}/{name}")
        if not names:
            lines.append("No individual has a result yet.")
        archive.writestr("README.txt", "\n".join(lines) + "\n")
        names.append("README.txt")
    return names


def standalone_source_available() -> bool:
    """Whether ``evaluators.export`` is installed (the PyTorch source and ONNX downloads need it)."""
    try:
        from evaluators.export import standalone_source  # noqa: F401
    except ImportError:
        return False
    return True


def zip_contents(individual: Individual) -> list[str]:
    """What an architecture's zip holds, in words (the individual page's download button says it)."""
    if not standalone_source_available():
        return ["genome"]
    kept = weights.digest(individual) is not None
    return ["genome", "PyTorch source", *(["trained weights"] if kept else []), "ONNX"]


def individual_zip(search: Search, individual: Individual, out: BinaryIO) -> list[str]:
    """One architecture as a zip: genome.json, model.py, weights.pt where kept and model.onnx (all but the
    first when exportable)."""
    names = []
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive, \
            tempfile.TemporaryDirectory() as scratch:
        prefix = f"search{search.pk}_n{individual.number}"
        archive.writestr(f"{prefix}/genome.json", json.dumps(genome_document(search, individual), indent=2))
        names.append(f"{prefix}/genome.json")
        for path in _exported_files(search, individual, Path(scratch)):
            if path.name != "genome.json" and path.is_file():
                archive.write(path, f"{prefix}/{path.name}")
                names.append(f"{prefix}/{path.name}")
    return names
