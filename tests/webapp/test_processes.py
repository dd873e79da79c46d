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


def test_backoff_doubles_while_a_child_keeps_dying_and_resets_after_a_healthy_run():
    from webapp.stack.backoff import Backoff, RestartPolicy

    backoff = Backoff(RestartPolicy(first=1, cap=8, healthy=60))
    assert [backoff.next_delay(ran_for=0.5) for _ in range(6)] == [1, 2, 4, 8, 8, 8]
    assert backoff.next_delay(ran_for=61) == 1  # it ran fine for a while: back to the first delay
    assert backoff.next_delay(ran_for=2) == 2


def _tend_until(supervisor: Supervisor, condition, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition never met"
        supervisor.tend()
        time.sleep(0.02)


def test_a_dead_child_is_restarted_with_back_off_and_the_others_go_on():
    from webapp.stack.backoff import RestartPolicy

    out = io.StringIO()
    supervisor = Supervisor(out=out, colour=False, policy=RestartPolicy(first=0.1, cap=0.4, healthy=600))
    flaky = supervisor.start("flaky", ["sh", "-c", "exit 3"])
    steady = supervisor.start("steady", ["sleep", "300"])
    steady_pid = steady.process.pid
    try:
        _tend_until(supervisor, lambda: out.getvalue().count("flaky    | started") >= 5)
    finally:
        supervisor.stop_all(grace=5)
    lines = [line for line in out.getvalue().splitlines() if "restarting in" in line]
    assert lines[:4] == [
        "flaky    | exited with exit code 3; restarting in 0.1 s",
        "flaky    | exited with exit code 3, 2 times in a row; restarting in 0.2 s",
        "flaky    | exited with exit code 3, 3 times in a row; restarting in 0.4 s",
        "flaky    | exited with exit code 3, 4 times in a row; restarting in 0.4 s",  # the cap
    ]
    assert steady.process.pid == steady_pid and "steady   | exited" not in out.getvalue()
    assert flaky.process.returncode is not None


def test_a_child_killed_by_a_signal_is_named_with_the_signal_and_its_group_is_reaped():
    import os
    import signal

    from webapp.stack.backoff import RestartPolicy

    out = io.StringIO()
    supervisor = Supervisor(out=out, colour=False, policy=RestartPolicy(first=0.1, cap=0.1))
    # A child with a grandchild (as a Celery worker has its pool): kill -9 of the child alone.
    child = supervisor.start("parent", ["sh", "-c", "sleep 300 & wait"])
    try:
        _tend_until(supervisor, lambda: psutil.Process(child.process.pid).children())
        grandchild = psutil.Process(child.process.pid).children()[0]
        first_pid = child.process.pid
        os.kill(first_pid, signal.SIGKILL)
        _tend_until(supervisor, lambda: child.process.pid != first_pid)
        assert "parent   | exited with exit code -9 (SIGKILL); restarting in 0.1 s" in out.getvalue()
        grandchild.wait(timeout=10)  # the orphaned pool process does not serve on beside the new one
        assert child.running
    finally:
        supervisor.stop_all(grace=5)
