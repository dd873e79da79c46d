"""A sampling profiler for a server process, in the spirit of py-spy (which is not installed here): a thread
takes the Python stack of every other thread every ``interval`` seconds and, when the process exits, writes
per thread how often each function was on the stack (inclusive) and at its top (self).

cProfile sees one thread only, and daphne runs Django's views in a thread of their own beside its reactor;
sampling sees both, and also where they wait (a lock, the database, the network). Usage::

    python benchmarks/sampler.py OUT.json [--interval 0.005] -m daphne ARGS...
"""
from __future__ import annotations

import atexit
import collections
import json
import re
import runpy
import sys
import threading
import time
from pathlib import Path


class Sampler:
    def __init__(self, out: Path, interval: float) -> None:
        self.out, self.interval = out, interval
        self.samples: collections.Counter[str] = collections.Counter()
        self.inclusive: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
        self.leaf: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
        self.stacks: collections.Counter[str] = collections.Counter()  #: "thread;root;...;leaf" (flame-graph input)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sampler", daemon=True)

    def start(self) -> None:
        self._thread.start()
        atexit.register(self.write)

    def _run(self) -> None:
        me = threading.get_ident()
        while not self._stop.wait(self.interval):
            names = {thread.ident: thread.name for thread in threading.enumerate()}
            for ident, frame in sys._current_frames().items():
                if ident == me:
                    continue
                # Threads are numbered by creation; one role, one name.
                name = re.sub(r"[-_]\d+", "", names.get(ident, "?"))
                self.samples[name] += 1
                seen, stack = set(), []
                top = True
                while frame is not None:
                    code = frame.f_code
                    where = f"{code.co_filename.split('site-packages/')[-1]}:{code.co_firstlineno} {code.co_name}"
                    if top:
                        self.leaf[name][where] += 1
                        top = False
                    if where not in seen:
                        seen.add(where)
                        self.inclusive[name][where] += 1
                    stack.append(where)
                    frame = frame.f_back
                self.stacks[";".join([name, *reversed(stack)])] += 1

    def write(self) -> None:
        self._stop.set()
        report = {"interval": self.interval, "threads": {
            name: {"samples": total, "inclusive": self.inclusive[name].most_common(60),
                   "self": self.leaf[name].most_common(30)}
            for name, total in self.samples.items()}}
        self.out.write_text(json.dumps(report, indent=1))
        self.out.with_suffix(".folded").write_text("".join(f"{stack} {n}\n" for stack, n in self.stacks.items()))


def summary(path: Path, top: int = 25) -> str:
    """The profile written by a sampled process, as text: per thread, the functions most often on the stack."""
    data = json.loads(path.read_text())
    lines = []
    for name, thread in sorted(data["threads"].items(), key=lambda item: -item[1]["samples"]):
        total = thread["samples"]
        lines.append(f"thread {name}: {total} samples ({total * data['interval']:.0f} s)")
        lines.append("  on the stack (inclusive):")
        lines += [f"    {100 * n / total:5.1f}%  {where}" for where, n in thread["inclusive"][:top]]
        lines.append("  at the top (self):")
        lines += [f"    {100 * n / total:5.1f}%  {where}" for where, n in thread["self"][:10]]
    return "\n".join(lines)


def main() -> None:
    args = sys.argv[1:]
    out, interval = Path(args.pop(0)), 0.005
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
