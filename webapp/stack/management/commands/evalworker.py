"""``python3 manage.py evalworker --device cuda:0 --slots K``: the evaluation worker(s) of one host.

One device: this process is the Celery worker pinned to it. Several (``--device all`` on a multi-GPU host, or
``--device cuda:0,cuda:1``): one such worker per device, supervised by this process. Workers need Redis and the
code only; no database settings.
"""
import atexit
import os
import socket
import sys

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from webapp.celery import app
from webapp.stack.privileges import quiet_root_warning
from webapp.searches.checks import POOL, POOL_RULE
from webapp.settings.env import redis_tls
from webapp.stack.evalnode import resolve_devices, supervise
from webapp.messaging import cluster_state, dispatch
from webapp.stack.gang_options import remove_ledger, resolve_gang
from webapp.stack.redis_server import ping_error, redact


class Command(BaseCommand):
    help = (
        "Run the evaluation worker(s) of this host: one per device, each pulling from the pool queue (default "
        "'eval') and from its own queue eval.<node>.<device>, one task per free slot."
    )
    requires_system_checks = []

    def add_arguments(self, parser):
        parser.add_argument("--device", default="cpu",
                            help="cpu, cuda:N, a comma-separated list, or all (every GPU, else the CPU); default cpu")
        parser.add_argument("--gang", help="train one candidate on several of the --device list at once (data "
                                           "parallel): auto (the allocator picks 1, 2, 4, ...) or a fixed size")
        parser.add_argument("--slots", type=int, default=1, help="evaluations run at once per device (default 1)")
        parser.add_argument("--threads", type=int, help="PyTorch CPU threads per slot (default: for --device cpu, this "
                                                         "host's cores divided by --slots; else PyTorch's default)")
        parser.add_argument("--pool", default="eval", help="the shared queue to pull from: eval (the default) or "
                                                           "eval.<name>, e.g. eval.a100")
        parser.add_argument("--node", default=socket.gethostname(), help="node name (default: the host name)")
        parser.add_argument("--redis", help="the cluster's Redis URL, redis:// or rediss:// (default: REDIS_URL)")
        parser.add_argument("--loglevel", default="INFO")
        parser.add_argument("--exit-when-drained", action="store_true",
                            help="exit once this node is drained (`manage.py node drain NODE`) and idle; by default "
                                 "a drained worker stays up, taking nothing, until `node resume`")

    def handle(self, *args, **options):
        if options["slots"] < 1:
            raise CommandError(f"--slots must be at least 1 (got {options['slots']})")
        if options["threads"] is not None and options["threads"] < 1:
            raise CommandError(f"--threads must be at least 1 (got {options['threads']})")
        if not POOL.match(options["pool"]):
            raise CommandError(f"--pool must be {POOL_RULE} (got {options['pool']!r})")
        if options["exit_when_drained"]:
            os.environ["NAS_EXIT_WHEN_DRAINED"] = "1"  # read by the worker's intake (webapp.worker.intake)
        if options["redis"]:
            self.use_redis(options["redis"])
        if options["gang"] is not None:
            if options["slots"] != 1:
                raise CommandError("--slots applies to workers without --gang (a gang worker runs one rank per device)")
            try:
                owned = resolve_gang(options["device"], options["gang"])
            except ValueError as error:
                raise CommandError(str(error)) from None
            os.environ.update(owned.environment(), NAS_GANG_OWNER=str(os.getpid()))
            atexit.register(remove_ledger, options["node"], os.getpid())
            # other hosts' allocators count this host's devices from now on (webapp.messaging.cluster_state)
            cluster_state.publish_host(options["node"], len(owned.devices), owned.sizes)
            self.run_worker(owned.name, {**options, "slots": len(owned.devices) // min(owned.sizes)})
            return
        try:
            devices = resolve_devices(options["device"])
        except ValueError as error:
            raise CommandError(str(error)) from None
        if len(devices) > 1:
            sys.exit(supervise(devices, lambda device: self.argv(device, options)))
        self.run_worker(devices[0], options)

    def use_redis(self, url: str) -> None:
        problem = ping_error(url, timeout=5)
        if problem:
            raise CommandError(f"--redis {redact(url)} is not reachable: {problem}")
        os.environ["REDIS_URL"] = url  # the per-device workers of --device all inherit it
        settings.REDIS_URL = url
        tls = redis_tls(url, settings.NAS_REDIS_CA)
        app.conf.update(broker_url=url, result_backend=url, broker_use_ssl=tls, redis_backend_use_ssl=tls)

    def argv(self, device: str, options) -> list[str]:
        argv = [sys.executable, sys.argv[0], "evalworker", "--device", device, "--slots", str(options["slots"]),
                "--pool", options["pool"], "--node", options["node"], "--loglevel", options["loglevel"]]
        return argv + (["--threads", str(options["threads"])] if options["threads"] else [])

    def run_worker(self, device: str, options) -> None:
        node, short = options["node"], device.replace(":", "")
        # Inherited by the pool's processes: each one is a slot announcing itself (webapp.worker.slots).
        os.environ.update(NAS_DEVICE=device, NAS_NODE=node, NAS_POOL=options["pool"], NAS_SLOTS=str(options["slots"]))
        threads = slot_threads(device, options["slots"], options["threads"])
        if threads:
            os.environ["NAS_THREADS"] = str(threads)  # each pool process sets it (webapp.worker.slots.start_slot)
        # SIGTERM must stop the worker within NAS_SOFT_SHUTDOWN_SECONDS (plus a few). Celery's own SIGTERM is a
        # warm shutdown, which waits for the running evaluations however long they take; with Redis gone that
        # was minutes, each of their Redis calls retrying (webapp.messaging.transport). Remapped, SIGTERM is
        # the soft shutdown: running tasks get worker_soft_shutdown_timeout, then are cancelled and requeued
        # (the engine re-sends what is lost anyway). Read by billiard when the worker starts, so set here.
        os.environ.setdefault("REMAP_SIGTERM", "SIGQUIT")
        quiet_root_warning()  # started as root by up (webapp.stack.privileges)
        app.worker_main([
            "worker",
            "--queues", f"{options['pool']},{dispatch.own_queue(node, device)}",
            "--include", "webapp.worker.tasks",  # this process's tasks only (the loop sends them by name)
            "--hostname", f"eval-{short}@{node}",
            "--concurrency", str(options["slots"]),
            "--prefetch-multiplier", "1",
            "--loglevel", options["loglevel"],
            "--without-gossip", "--without-mingle", "--without-heartbeat",
        ])


def slot_threads(device: str, slots: int, threads: int | None, environ: dict[str, str] | None = None) -> int | None:
    """PyTorch's CPU threads per slot: ``--threads`` when given; ``None`` (PyTorch's default, which honours it)
    when ``OMP_NUM_THREADS`` is set, or for a GPU slot or a gang worker (its ranks set their own); else, for a CPU
    worker, this host's cores shared out among its slots: two slots each running PyTorch's default, one thread
    per core, would run twice as many threads as cores and spin against each other."""
    if threads:
        return threads
    if (os.environ if environ is None else environ).get("OMP_NUM_THREADS") or device != "cpu":
        return None
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, cores // max(1, slots))
