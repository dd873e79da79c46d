"""``python manage.py search create|edit|launch|watch|stop|resume|rerun|clone|list|export``: searches from a terminal.

    python manage.py search create --name digits-chain --config search.json --set strategy.params.max_evaluations=30
    python manage.py search edit 7 --set training.epochs=1   # a draft (a clone too), until it is launched
    python manage.py search launch 7 --watch
    python manage.py search watch 7          # live progress bar until the search ends (Ctrl-C leaves it running)
    python manage.py search stop 7
    python manage.py search resume 7
    python manage.py search rerun 7 --individual 12   # a failed individual again (every failed one without it)
    python manage.py search export 7 --out results/7 --best 5

A thin layer over ``webapp.services.lifecycle`` and ``webapp.services.exports``: the same services the web pages
call. Every error is one line on stderr and a non-zero exit code; nothing is changed then. Libraries log
WARNING and above only (``-v`` after the action shows INFO too), and a reader that closes the pipe early
(``search list | head``) ends the command quietly.
"""
from __future__ import annotations

import copy
import json
import logging
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError

from webapp.searches import accounting, final_runs
from webapp.services import lifecycle, reruns
from webapp.searches.config import ConfigError
from webapp.searches.pruning_stats import describe as describe_pruning
from webapp.searches.models import Search
from webapp.services.progress_line import final_text, progress_line
from webapp.stack.users import acting_user

ENDED = (Search.Status.FINISHED, Search.Status.STOPPED, Search.Status.FAILED)


def parse_overrides(pairs: list[str]) -> list[tuple[list[str], Any]]:
    """``a.b.c=value`` pairs; the value is JSON when it parses (numbers, booleans, lists), a string otherwise."""
    overrides = []
    for pair in pairs:
        path, sep, raw = pair.partition("=")
        if not sep or not path:
            raise CommandError(f"--set takes FIELD=VALUE (got {pair!r}), e.g. strategy.params.population=10")
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        overrides.append((path.split("."), value))
    return overrides


def apply_overrides(config: dict[str, Any], overrides: list[tuple[list[str], Any]]) -> dict[str, Any]:
    for path, value in overrides:
        node = config
        for part in path[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise CommandError(f"--set {'.'.join(path)}: {part} is not an object in the configuration")
        node[path[-1]] = value
    return config


@contextmanager
def library_logging(verbose: bool) -> Iterator[None]:
    """WARNING and above from every logger (the ONNX exporter alone logs some 30 INFO lines per architecture),
    INFO too when ``verbose``; the levels are put back afterwards (``call_command`` runs in a caller's process)."""
    root = logging.getLogger()
    saved = [(root, root.level)] + [(handler, handler.level) for handler in root.handlers]
    level = logging.INFO if verbose else logging.WARNING
    for item, _ in saved:
        item.setLevel(level)
    try:
        yield
    finally:
        for item, previous in saved:
            item.setLevel(previous)


def end_quietly_on_closed_pipe() -> None:
    """The reader of our output went away (``search list | head -1``): stop as a Unix tool does, without a
    traceback, and without Python's own complaint when it flushes stdout at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # no real stdout (captured in a test)
        pass
    raise SystemExit(1)


class Command(BaseCommand):
    help = ("Create, launch, watch, stop, resume, clone, list and export searches (see the README); "
            "ACTION -v shows the libraries' INFO messages.")

    def add_arguments(self, parser):
        commands = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
        create = commands.add_parser("create", help="create a draft search from a JSON configuration")
        create.add_argument("--name", required=True)
        create.add_argument("--config", help="a JSON file ('-' reads stdin); defaults apply to what it leaves out")
        create.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                            help="override one field, e.g. strategy.params.max_evaluations=30 (repeatable)")
        create.add_argument("--owner", help="username (default: the first superuser)")
        create.add_argument("--launch", action="store_true", help="launch it at once")
        create.add_argument("--watch", action="store_true", help="launch it and watch it to the end")
        for name, text in (("launch", "launch a draft search"), ("resume", "resume a stopped search")):
            action = commands.add_parser(name, help=text)
            action.add_argument("id", type=int)
            action.add_argument("--watch", action="store_true", help="then watch it to the end")
        commands.add_parser("stop", help="stop a running search (resumable)").add_argument("id", type=int)
        rerun = commands.add_parser("rerun", help="re-run a failed individual, or every failed one")
        rerun.add_argument("id", type=int)
        rerun.add_argument("--individual", type=int, help="its number (default: every failed individual)")
        rerun.add_argument("--extend", action="store_true",
                           help="reopen a finished search to run them, past its spent budget")
        rerun.add_argument("--watch", action="store_true", help="then watch it to the end")
        watch = commands.add_parser("watch", help="a live progress bar until the search ends")
        watch.add_argument("id", type=int)
        watch.add_argument("--interval", type=float, default=1.0, help="seconds between updates (default 1)")
        watch.add_argument("--timeout", type=float, default=None, help="give up watching after this many seconds")
        edit = commands.add_parser("edit", help="change a draft's name or configuration before it is launched")
        edit.add_argument("id", type=int)
        edit.add_argument("--name")
        edit.add_argument("--config", help="a whole new JSON configuration ('-' reads stdin); default: the draft's")
        edit.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                          help="override one field of it, e.g. training.epochs=1 (repeatable)")
        clone = commands.add_parser("clone", help="a new draft with the same configuration")
        clone.add_argument("id", type=int)
        clone.add_argument("--name")
        commands.add_parser("list", help="every search, newest first")
        export = commands.add_parser("export", help="individuals.csv, events.jsonl and best.zip into a folder")
        export.add_argument("id", type=int)
        export.add_argument("--out", required=True, help="the folder to write (created if needed)")
        export.add_argument("--best", type=int, default=5, help="how many of the best architectures (default 5)")
        for action in commands.choices.values():
            action.add_argument("-v", "--verbose", action="store_true",
                                help="also show the libraries' INFO messages (default: warnings and errors only)")

    def execute(self, *args, **options):
        verbose = options.get("verbose", False) or options.get("verbosity", 1) >= 2
        try:
            with library_logging(verbose):
                output = super().execute(*args, **options)
                self.stdout.flush()
            return output
        except BrokenPipeError:
            end_quietly_on_closed_pipe()

    def handle(self, *args, **options):
        action = options["action"]
        try:
            return getattr(self, f"do_{action}")(options)
        except (ConfigError, lifecycle.ActionError, reruns.RerunError) as error:
            raise CommandError(str(error)) from None
        except DatabaseError as error:
            raise CommandError(f"the database is not ready ({error}): run `python3 manage.py migrate`, "
                               "or `python3 manage.py up` once") from None

    # --- actions -------------------------------------------------------------------------------------------

    def do_create(self, options) -> None:
        config = self.read_config(options["config"])
        config = apply_overrides(config, parse_overrides(options["set"]))
        search = lifecycle.create_search(self.owner(options["owner"]), options["name"], config)
        self.stdout.write(f"created search {search.pk} ({search.name}): {search.evaluations_total} evaluations planned")
        if options["launch"] or options["watch"]:
            lifecycle.launch(search)
            self.stdout.write(f"launched search {search.pk}")
        if options["watch"]:
            self.watch(search.pk, 1.0, None)

    def do_launch(self, options) -> None:
        self.start(lifecycle.launch, "launched", options)

    def do_resume(self, options) -> None:
        self.start(lifecycle.resume, "resumed", options)

    def start(self, action, done: str, options) -> None:
        search = action(self.search(options["id"]))
        self.stdout.write(f"{done} search {search.pk}")
        if options["watch"]:
            self.watch(search.pk, 1.0, None)

    def do_stop(self, options) -> None:
        search = lifecycle.stop(self.search(options["id"]))
        self.stdout.write(f"search {search.pk} is {search.status}: running evaluations finish and are kept")

    def do_rerun(self, options) -> None:
        search = self.search(options["id"])  # a terminal acts as the search's owner
        done = reruns.rerun(search.owner, search, options["individual"], extend=options["extend"])
        self.stdout.write(done.message)
        if options["watch"]:
            self.watch(search.pk, 1.0, None)

    def do_edit(self, options) -> None:
        search = self.search(options["id"])
        config = self.read_config(options["config"]) if options["config"] else copy.deepcopy(search.config)
        config = apply_overrides(config, parse_overrides(options["set"]))
        search = lifecycle.update_draft(search, options["name"] or search.name, config)
        self.stdout.write(f"edited draft {search.pk} ({search.name}): {search.evaluations_total} evaluations planned")

    def do_clone(self, options) -> None:
        original = self.search(options["id"])
        copy = lifecycle.clone(original, original.owner, options["name"])
        self.stdout.write(f"created search {copy.pk} ({copy.name}) as a draft copy of {original.pk}")

    def do_list(self, options) -> None:
        rows = Search.objects.select_related("owner").order_by("-created")
        self.stdout.write(f"{'id':>5}  {'status':<9} {'done':>9}  {'best':>7}  {'owner':<12} name")
        for s in rows:
            best = "-" if s.best_fitness is None else f"{s.best_fitness:.4f}"
            done = f"{s.evaluations_done}/{s.evaluations_total}"
            self.stdout.write(f"{s.pk:>5}  {s.status:<9} {done:>9}  {best:>7}  {s.owner.username:<12} {s.name}")

    def do_watch(self, options) -> None:
        self.search(options["id"])
        self.watch(options["id"], options["interval"], options["timeout"])

    def do_export(self, options) -> None:
        from webapp.services import exports

        search = self.search(options["id"])
        if options["best"] < 1:
            raise CommandError("--best must be at least 1")
        folder = Path(options["out"])
        folder.mkdir(parents=True, exist_ok=True)
        with open(folder / "individuals.csv", "w", newline="", encoding="utf-8") as out:
            exports.individuals_csv(search, out)
        with open(folder / "events.jsonl", "w", encoding="utf-8") as out:
            exports.events_jsonl(search, out)
        with open(folder / "best.zip", "wb") as out:
            exports.best_zip(search, options["best"], out)
        for name in ("individuals.csv", "events.jsonl", "best.zip"):
            self.stdout.write(f"wrote {folder / name} ({(folder / name).stat().st_size} bytes)")

    # --- helpers -------------------------------------------------------------------------------------------

    def watch(self, search_id: int, interval: float, timeout: float | None) -> None:
        """Redraw the progress line until the search ends; a failed search exits non-zero."""
        live = self.stdout.isatty()
        deadline = None if timeout is None else time.monotonic() + timeout
        last = ""
        try:
            while True:
                search = Search.objects.get(pk=search_id)
                line = progress_line(search.status, search.evaluations_done, search.evaluations_total,
                                     search.best_fitness, accounting.summary(search.stats))
                pruned = describe_pruning(search.stats)  # early stopping: what it saved
                line = f"{line} · {pruned}" if pruned else line
                final = final_text(final_runs.summary(search))  # the final training, when it has one
                line = f"{line} · {final}" if final else line
                if line != last:
                    self.stdout.write(("\r" + line.ljust(len(last))) if live else line, ending="" if live else "\n")
                    self.stdout.flush()
                    last = line
                if search.status in ENDED:
                    break
                if deadline is not None and time.monotonic() > deadline:
                    raise CommandError(f"search {search_id} still {search.status} after {timeout:g} s (it goes on)")
                time.sleep(interval)
        except KeyboardInterrupt:
            self.stdout.write("\nstopped watching; the search goes on (stop it with `search stop`)")
            return
        if live:
            self.stdout.write("")
        reason = f": {search.status_reason}" if search.status_reason else ""
        self.stdout.write(f"search {search_id} {search.status}{reason}")
        if search.status == Search.Status.FAILED:
            raise CommandError(f"search {search_id} failed{reason}")

    def read_config(self, source: str | None) -> dict[str, Any]:
        if source is None:
            return {}
        try:
            text = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
        except OSError as error:
            raise CommandError(f"cannot read the configuration {source}: {error.strerror}") from None
        try:
            config = json.loads(text)
        except json.JSONDecodeError as error:
            raise CommandError(f"the configuration {source} is not JSON: {error}") from None
        if not isinstance(config, dict):
            raise CommandError(f"the configuration {source} must be a JSON object")
        return config

    def search(self, search_id: int) -> Search:
        try:
            return Search.objects.get(pk=search_id)
        except Search.DoesNotExist:
            raise CommandError(f"no search {search_id} (see `manage.py search list`)") from None

    def owner(self, username: str | None):
        return acting_user(username, "--owner")
