"""``evalworker --device a,b,... --gang auto|N``: one worker that owns several devices of this host and trains
one candidate on a gang of them (``evaluators.data_parallel``). Checked before anything starts, each problem in
one line that names the option."""
from __future__ import annotations

import dataclasses
import shutil

from nas.allocation.efficiency import gang_sizes
from webapp.stack.devices import device_error
from webapp.stack.evalnode import DEVICE
from webapp.worker.device_claims import ledger_folder


@dataclasses.dataclass(frozen=True)
class GangDevices:
    """The devices a gang worker owns and the gang sizes it accepts."""

    devices: tuple[str, ...]
    sizes: tuple[int, ...]
    gang: str  #: as given: ``auto`` or a number

    @property
    def name(self) -> str:
        """The worker's device name on the nodes page and in its queue: ``cpux4``, ``cudax8``."""
        return f"{self.devices[0].split(':')[0]}x{len(self.devices)}"

    @property
    def backend(self) -> str:
        """The collective backend of its gangs: NCCL between GPUs, gloo between CPU ranks."""
        return "gloo" if self.devices[0] == "cpu" else "nccl"

    def environment(self) -> dict[str, str]:
        """What its evaluation processes read (``webapp.worker.device_claims``)."""
        return {"NAS_GANG_DEVICES": ",".join(self.devices), "NAS_GANG_SIZES": ",".join(map(str, self.sizes))}


def resolve_gang(device_spec: str, gang: str) -> GangDevices:
    """The devices of ``--device`` (``cpu`` may be repeated: one CPU rank each; a GPU may not) and the sizes of
    ``--gang`` (``auto``: every size that splits them into equal gangs). ``ValueError`` in one line otherwise."""
    devices = [part.strip() for part in device_spec.split(",") if part.strip()]
    if not devices:
        raise ValueError("--device must name the gang's devices: cpu,cpu or cuda:0,cuda:1,...")
    for device in devices:
        if not DEVICE.match(device):
            raise ValueError(f"--device must be a comma-separated list of cpu or cuda:N (got {device!r})")
    kinds = {device.split(":")[0] for device in devices}
    if len(kinds) > 1:
        raise ValueError(f"--device {device_spec}: a gang's devices must be all cpu or all cuda:N, not both")
    twice = sorted({device for device in devices if device != "cpu" and devices.count(device) > 1})
    if twice:
        raise ValueError(f"--device names {', '.join(twice)} twice: each GPU serves one rank of a gang")
    for device in dict.fromkeys(devices):
        problem = device_error(device)
        if problem:
            raise ValueError(problem)
    return GangDevices(tuple(devices), gang_sizes(len(devices), gang), gang)


def remove_ledger(node: str, owner: int) -> None:
    """Remove the device claims folder of the gang worker ``owner`` (``webapp.worker.device_claims.ledger``) as it exits."""
    shutil.rmtree(ledger_folder(node, owner), ignore_errors=True)
