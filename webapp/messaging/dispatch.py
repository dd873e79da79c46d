"""The engine's two Celery tasks by name, and how each is sent.

Senders never import a task's module: the web and the reaper start a search's loop by name, the loop sends
evaluation packets by name, and only the worker that runs a task imports it (the control worker
``webapp.control.tasks``, evaluation workers ``webapp.worker.tasks``). So no process loads another's code and
no module needs a function-level import to dodge a circle.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from celery import current_app

#: One search's whole evolutionary loop (queue ``control``).
RUN_SEARCH = "webapp.control.tasks.run_search"
#: One packet of individuals to evaluate (an evaluation pool's queue, ``eval`` by default).
EVALUATE_BATCH = "webapp.worker.tasks.evaluate_batch"
#: One part of one generation of a weight search (an evaluation pool's queue; ``webapp.worker.weights``).
EVOLVE_PART = "webapp.worker.tasks.evolve_part"
CONTROL_QUEUE = "control"
#: ``send(message, signature, task_id, queue, first=False)``: hands one signed task message to an evaluation pool;
#: ``first``: ahead of the packets queued there (a packet sent again: it was asked before them).
Send = Callable[..., None]
#: The Celery priority of a packet sent again (``first``) and of every other one. Celery's Redis transport keeps one
#: list per priority step (0, 3, 6, 9; a queue's own name is step 0) and a worker takes from the lowest step that
#: holds a message, so a packet of priority 0 is pulled before every packet of priority 3, in the order sent.
FIRST_PRIORITY = 0
NEXT_PRIORITY = 3


def own_queue(node: str, device: str) -> str:
    """The queue only the worker of ``device`` on ``node`` consumes (besides its pool's): ``eval.<node>.<device>``,
    the device without its colon (``eval.alpha.cuda0``). The loop sends here what must run on that worker."""
    return f"eval.{node}.{device.replace(':', '')}"


def start_loop(search_id: int) -> None:
    """Ask a control worker to run (or take over) the loop of ``search_id``."""
    current_app.send_task(RUN_SEARCH, args=[search_id], queue=CONTROL_QUEUE)


def sender(task: str) -> Send:
    """``send(message, signature, task_id, queue, first=False)``: hands one signed message to the evaluation pool
    ``queue`` as the task ``task`` (:data:`EVALUATE_BATCH`, a packet; :data:`EVOLVE_PART`, a part of a weight
    search); ``first``: it is pulled before the messages queued there (:data:`FIRST_PRIORITY`)."""

    def send(data: dict[str, Any], signature: str, task_id: str, queue: str, first: bool = False) -> None:
        current_app.send_task(task, args=[data, signature], task_id=task_id, queue=queue,
                              priority=FIRST_PRIORITY if first else NEXT_PRIORITY)

    return send


send_packet = sender(EVALUATE_BATCH)
