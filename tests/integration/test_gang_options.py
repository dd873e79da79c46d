"""``evalworker --device ... --gang auto|N``: the devices and gang sizes of a gang worker, each mistake one line."""
from __future__ import annotations

import subprocess

import pytest

from tests.conftest import manage, manage_env
from webapp.stack.gang_options import resolve_gang


def test_cpu_ranks_may_repeat_and_auto_allows_every_equal_split():
    owned = resolve_gang("cpu,cpu,cpu,cpu", "auto")
    assert owned.devices == ("cpu",) * 4 and owned.sizes == (1, 2, 4) and owned.backend == "gloo"
    assert owned.environment() == {"NAS_GANG_DEVICES": "cpu,cpu,cpu,cpu", "NAS_GANG_SIZES": "1,2,4"}
    assert resolve_gang("cpu,cpu", "2").sizes == (2,)


@pytest.mark.parametrize("devices, gang, message", [
    ("cpu,cpu,cpu,cpu", "8", "--gang 8 is larger than the 4 device(s) this worker owns"),
    ("cpu,cpu,cpu,cpu", "3", "--gang 3 does not split 4 devices into equal gangs (choose 1, 2, 4 or auto)"),
    ("cuda:0,cuda:0", "auto", "--device names cuda:0 twice"),
    ("cpu,cuda:0", "auto", "all cpu or all cuda:N"),
    ("cuda:7,cuda:8", "auto", "--device cuda:7"),
    ("gpu0", "auto", "comma-separated list of cpu or cuda:N"),
    ("cpu,cpu", "lots", "--gang must be auto or a number"),
])
def test_bad_gang_options_are_one_line(devices, gang, message):
    with pytest.raises(ValueError) as error:
        resolve_gang(devices, gang)
    assert message in str(error.value) and "\n" not in str(error.value)


@pytest.mark.integration
@pytest.mark.parametrize("args, message", [
    (["--device", "cpu,cpu,cpu,cpu", "--gang", "3"], "--gang 3 does not split 4 devices"),
    (["--device", "cpu,cpu", "--gang", "4"], "--gang 4 is larger than the 2 device(s)"),
    (["--device", "cpu,cpu", "--gang", "auto", "--slots", "2"], "--slots applies to workers without --gang"),
])
def test_the_command_refuses_in_one_line(tmp_path, args, message):
    run = subprocess.run(manage("evalworker", *args), env=manage_env("redis://127.0.0.1:9/0", tmp_path),
                         capture_output=True, text=True, timeout=120)
    assert run.returncode != 0
    assert message in run.stderr and "Traceback" not in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1, run.stderr
