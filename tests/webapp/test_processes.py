"""The supervisor prefixes each child's lines and leaves no process behind, grandchildren included."""
import io
import time

import psutil

from webapp.stack.processes import Supervisor


def test_output_is_prefixed_with_the_child_name():
    out = io.StringIO()
    supervisor = Supervisor(out=out, colour=False)
    child = supervisor.start("hello", ["sh", "-c", "echo one; echo two"])
    child.process.wait(timeout=10)
    supervisor.stop_all(grace=5)
    lines = out.getvalue().splitlines()
    assert "hello    | one" in lines and "hello    | two" in lines


def test_stop_all_kills_grandchildren_and_stops_servers_last():
    out = io.StringIO()
    supervisor = Supervisor(out=out, colour=False)
    # A child that ignores SIGTERM and has a grandchild: only the group SIGKILL ends both.
    stubborn = supervisor.start("stubborn", ["sh", "-c", "trap '' TERM; sleep 300 & wait"])
    server = supervisor.start("server", ["sleep", "300"], stop_last=True)
    time.sleep(0.3)
    family = psutil.Process(stubborn.process.pid).children(recursive=True) + [psutil.Process(stubborn.process.pid)]
    started = time.monotonic()
    supervisor.stop_all(grace=1)
    assert time.monotonic() - started < 10
    _, alive = psutil.wait_procs(family, timeout=5)
    assert alive == []
    assert server.process.returncode is not None
    text = out.getvalue()
    assert text.index("stubborn | stopped") < text.index("server   | stopped")


def test_children_die_when_the_supervisor_is_killed(tmp_path):
    import signal
    import subprocess
    import sys

    script = (
        "import sys, time\n"
        "from webapp.stack.processes import Supervisor\n"
        "child = Supervisor(colour=False).start('sleeper', ['sleep', '300'])\n"
        "print(child.process.pid, flush=True)\n"
        "time.sleep(300)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    pid = _first_int(parent.stdout)
    sleeper = psutil.Process(pid)
    parent.send_signal(signal.SIGKILL)
    parent.wait(timeout=10)
    sleeper.wait(timeout=10)
    assert not sleeper.is_running()


def _first_int(stream) -> int:
    for line in stream:  # skip the supervisor's own "started (pid N): ..." line
        if line.strip().isdigit():
            return int(line)
    raise AssertionError("the supervisor printed no pid")
