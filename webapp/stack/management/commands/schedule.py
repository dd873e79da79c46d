"""``python3 manage.py schedule --genome FILE --device cpu --batch 1``: the inference schedule of one network.

Prints the optimal stage schedule (seed 002) of the genome's network, its measured latency against the sequential
and greedy schedules on the device, and how long the search took. ``--graph FILE`` schedules an operator graph
(``nas.schedule.OpGraph`` JSON) under the modelled device instead, without torch. Every error is one line and a
non-zero exit code. Imports torch only inside ``handle``.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError


def _read_json(path: str, option: str) -> Any:
    try:
        return json.loads(Path(path).read_text())
    except OSError as error:
        raise CommandError(f"{option}: cannot read {path} ({error.strerror or error})") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise CommandError(f"{option}: {path} is not JSON ({error})") from None


class Command(BaseCommand):
    help = "Schedule a genome's network (or an operator graph) by seed 002's DP and measure it against baselines."
    requires_system_checks = []

    def add_arguments(self, parser):
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument("--genome", help="a genome JSON: genome.json of an export ({genome, space, dataset}) "
                                             "or a bare genome of --space")
        source.add_argument("--graph", help="an operator graph JSON ({ops: [{name, inputs, work, merge_group}]}), "
                                            "scheduled under the modelled device")
        parser.add_argument("--space", default="cell", help="the space of a bare genome (default cell)")
        parser.add_argument("--dataset", default=None, help="the input shape's dataset (default: the file's, "
                                                            "else digits)")
        parser.add_argument("--device", default="cpu", help="cpu or cuda:N (default cpu)")
        parser.add_argument("--batch", type=int, default=1, help="images per inference (default 1)")
        parser.add_argument("--repeats", type=int, default=10, help="timed runs per measurement (default 10)")
        parser.add_argument("--max-stage-size", type=int, default=4, help="largest stage the DP tries (default 4)")
        parser.add_argument("--block-size", type=int, default=16, help="largest block the DP solves whole "
                                                                       "(default 16)")
        parser.add_argument("--json", action="store_true", help="print the report as JSON")

    def handle(self, *args, **options):
        if not 1 <= options["batch"] <= 4096:
            raise CommandError(f"--batch must be in [1, 4096] (got {options['batch']})")
        if not 1 <= options["repeats"] <= 1000:
            raise CommandError(f"--repeats must be in [1, 1000] (got {options['repeats']})")
        for name in ("max_stage_size", "block_size"):
            if options[name] < 1:
                raise CommandError(f"--{name.replace('_', '-')} must be at least 1 (got {options[name]})")
        if options["graph"]:
            report = self._graph(options)
        else:
            report = self._genome(options)
        self.stdout.write(json.dumps(report, indent=2) if options["json"] else self._text(report))

    def _graph(self, options: dict[str, Any]) -> dict[str, Any]:
        from nas.schedule import GraphError, ModelledCost, OpGraph, SearchStats, greedy_schedule
        from nas.schedule import optimal_schedule, sequential_schedule

        try:
            graph = OpGraph.from_dict(_read_json(options["graph"], "--graph"))
        except (GraphError, TypeError) as error:
            raise CommandError(f"--graph: {error}") from None
        cost = ModelledCost(peak=4.0, lanes=4, launch=0.05, batch=options["batch"])
        stats = SearchStats()
        optimal = optimal_schedule(graph, cost, max_stage_size=options["max_stage_size"],
                                   block_size=options["block_size"], stats=stats)
        return {"graph": len(graph), "optimal": optimal.to_dict(), "search": stats.to_dict(),
                "modelled": {"sequential": sequential_schedule(graph, cost).cost,
                             "greedy": greedy_schedule(graph, cost).cost, "optimal": optimal.cost}}

    def _genome(self, options: dict[str, Any]) -> dict[str, Any]:
        data = _read_json(options["genome"], "--genome")
        if isinstance(data, dict) and "genome" in data and "space" in data:
            genome, space, dataset = data["genome"], data["space"], data.get("dataset")
        else:
            genome, space, dataset = data, {"name": options["space"]}, None
        dataset = options["dataset"] or dataset or "digits"
        from evaluators.builders import architecture, as_space

        try:
            built_space = as_space(space)
            architecture(genome, built_space, dataset)
        except (ValueError, TypeError, KeyError) as error:
            raise CommandError(f"--genome: not a genome of the {space.get('name', '?') if isinstance(space, dict) else space} "
                               f"space: {error}") from None
        import torch

        from evaluators import measure
        from evaluators.blocks import Net
        from evaluators.catalog import dataset_shape
        from evaluators.inference.network import schedule_network

        try:
            device = measure.resolve_device(options["device"])
        except (ValueError, RuntimeError) as error:
            raise CommandError(f"--device: {error}") from None
        torch.manual_seed(0)
        model = Net(architecture(genome, built_space, dataset)).to(device)
        return schedule_network(model, dataset_shape(dataset)[0], device, options["batch"],
                                repeats=options["repeats"], max_stage_size=options["max_stage_size"],
                                block_size=options["block_size"])

    @staticmethod
    def _text(report: dict[str, Any]) -> str:
        from nas.schedule.report import format_report

        if "measured_ms" in report:
            return format_report(report)
        lines = [f"{report['graph']} operators, modelled device", *(
            f"{n:>4}. {s['strategy']:<10} {s['cost']:8.4f}  {', '.join(s['ops'])}"
            for n, s in enumerate(report["optimal"]["stages"], 1))]
        lines += [f"{name:<11} {value:10.4f}" for name, value in report["modelled"].items()]
        lines.append("search: {seconds:.4f} s, {states} DP states".format(**report["search"]))
        return "\n".join(lines)
