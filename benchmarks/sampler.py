"""A sampling CPU profiler for a server process, in the spirit of py-spy (which is not installed here).

A thread of the profiled process wakes every ``interval`` seconds, reads how much CPU each other thread used
since its last look (``/proc/self/task/<tid>/stat``, Linux) and charges it to that thread's Python stack of the
moment. Time a thread spends waiting (for a request, a lock, the GIL, the database's answer) costs no CPU and
so is charged nothing; time in C code (SQLite, zlib, the JSON encoder) is charged to the Python function that
called it. cProfile could not do this: it sees one thread, and daphne runs Django's views in threads beside its
event loop. When the process exits it writes per thread role the CPU seconds spent with each function on the
stack (inclusive) and at its top (self), and the whole stacks (``.folded``, a flame graph's input). Usage::

    python benchmarks/sampler.py OUT.json [--interval 0.01] -m daphne ARGS...
    python benchmarks/sampler.py --summary OUT.json
"""
from __future__ import annotations

import atexit
import collections
import json
import os
import re
import runpy
import sys
import threading
from pathlib import Path

TICK = 1.0 / os.sysconf("SC_CLK_TCK")


def thread_cpu(native_id: int) -> float | None:
    """CPU seconds (user + system) a thread of this process used so far; None once it is gone."""
    try:
        fields = Path(f"/proc/self/task/{native_id}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) * TICK  # utime and stime, fields 14 and 15 of stat


def role(name: str) -> str:
    """A thread's role: its name without the numbers threads are given in order of creation."""
    return re.sub(r"[-_]\d+", "", name)


class Sampler:
    def __init__(self, out: Path, interval: float) -> None:
        self.out, self.interval = out, interval
        self.cpu: collections.Counter[str] = collections.Counter()
        self.inclusive: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
        self.leaf: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
        self.stacks: collections.Counter[str] = collections.Counter()  #: "role;root;...;leaf" -> CPU seconds
        self._used: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sampler", daemon=True)

    def start(self) -> None:
        self._thread.start()
        atexit.register(self.write)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            threads = {t.ident: t for t in threading.enumerate() if t is not self._thread}
            for ident, frame in sys._current_frames().items():
                thread = threads.get(ident)
                if thread is None or thread.native_id is None:
                    continue
                used = thread_cpu(thread.native_id)
                if used is None:
                    continue
                spent = used - self._used.get(thread.native_id, used)
                self._used[thread.native_id] = used
                if spent > 0:
                    self._charge(role(thread.name), frame, spent)

    def _charge(self, name: str, frame, spent: float) -> None:
        self.cpu[name] += spent
        seen, stack = set(), []
        while frame is not None:
            code = frame.f_code
            where = f"{code.co_filename.split('site-packages/')[-1]}:{code.co_firstlineno} {code.co_name}"
            if not stack:
                self.leaf[name][where] += spent
            if where not in seen:
                seen.add(where)
                self.inclusive[name][where] += spent
            stack.append(where)
            frame = frame.f_back
        self.stacks[";".join([name, *reversed(stack)])] += spent

    def write(self) -> None:
        self._stop.set()
        report = {"interval": self.interval, "threads": {
            name: {"cpu": total, "inclusive": self.inclusive[name].most_common(80),
                   "self": self.leaf[name].most_common(30)}
            for name, total in self.cpu.items()}}
        self.out.write_text(json.dumps(report, indent=1))
        self.out.with_suffix(".folded").write_text(
            "".join(f"{stack} {round(seconds * 1000)}\n" for stack, seconds in self.stacks.items()))


def summary(path: Path, top: int = 30, skip: tuple[str, ...] = ("threading.py", "concurrent/futures", "runpy",
                                                                 "asgiref/sync.py", "sampler.py")) -> str:
    """The profile written by a sampled process, as text: per thread role, its CPU seconds and the functions
    most of them were spent under (plumbing that every stack goes through left out)."""
    data = json.loads(path.read_text())
    lines = []
    for name, thread in sorted(data["threads"].items(), key=lambda item: -item[1]["cpu"]):
        total = thread["cpu"]
        if total < 0.01:
            continue
        lines.append(f"thread {name}: {total:.1f} s of CPU")
        shown = [(where, s) for where, s in thread["inclusive"] if not any(part in where for part in skip)]
        lines += [f"  {100 * s / total:5.1f}%  {where}" for where, s in shown[:top]]
        lines.append("  at the top of the stack:")
        lines += [f"  {100 * s / total:5.1f}%  {where}" for where, s in thread["self"][:8]]
    return "\n".join(lines)


def main() -> None:
    args = sys.argv[1:]
    out, interval = Path(args.pop(0)), 0.01
    if args[:1] == ["--interval"]:
        interval = float(args[1])
        args = args[2:]
    if args[:1] != ["-m"] or len(args) < 2:
        raise SystemExit("usage: sampler.py OUT.json [--interval S] -m MODULE ARGS...")
    module = args[1]
    sys.argv = [module, *args[2:]]
    Sampler(out, interval).start()
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--summary"]:
        print(summary(Path(sys.argv[2])))
    else:
        main()
