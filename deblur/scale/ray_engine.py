"""The tasks through Ray Data: a pool of `DeblurWorker` actors, each with its model loaded once, fed one task at a
time. Ray restarts a worker that dies and runs its task again; its finished outputs are already in place.

Without `address`, a local Ray is started with as many CPUs as the workers ask for, and stopped at the end; with
it, the job goes to that cluster (`ray://host:10001`, or "auto" on one of its machines).
"""

from __future__ import annotations

import logging
import signal
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict

from deblur import __version__
from deblur.errors import SettingError
from deblur.scale import ENGINE_INSTALL
from deblur.scale.plan import Task
from deblur.scale.worker import DeblurWorker, WorkerNotStarted, WorkerSettings

CONNECT_SECONDS = 10.0  # for a cluster's address to answer at all

# Tasks go to the workers in blocks: one task a block up to this many tasks, so that a dead worker's block, which
# Ray runs again, holds little; past it, a block of several tasks passes over the ones done before it died.
MAX_BLOCKS = 10_000


def ray_module():
    """Ray, or an error saying how to install it."""
    try:
        import ray
    except ImportError:
        raise SettingError(f"the ray engine needs Ray: {ENGINE_INSTALL}", settings=("engine",)) from None
    return ray


def check_address(address: str | None) -> None:
    """A cluster's address that nothing answers at, refused before any work, naming the setting. Ray would take
    30 s to say so of a `ray://` address, and retry a bare one (a head's `host:6379`) without end."""
    if address is not None and not address.strip():  # `--address $RAY_ADDRESS`, unset: a local Ray had started
        raise SettingError(
            "the address is empty: name the cluster's (host:6379, ray://host:10001, auto), or leave it out for a "
            "Ray of this machine's own",
            settings=("address",),
        )
    if address is not None and "://" in address and not address.startswith("ray://"):
        # the dashboard's http://head:8265, copied from Ray's start-up lines, had been "Name or service not known"
        raise SettingError(
            f"{address} is no address a driver joins a Ray cluster at: its head's host:6379, or ray://host:10001 "
            "(Ray Client; an http:// address is the dashboard's, for submitting jobs)",
            settings=("address",),
        )
    host, _, port = (address or "auto").removeprefix("ray://").rpartition(":")
    if address in (None, "auto", "local") or not port.isdigit():
        return  # Ray's own words, for what is not host:port (`auto` with no cluster on this machine included)
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_SECONDS).close()
    except OSError as err:
        reason = err.strerror or str(err) or type(err).__name__
        raise SettingError(f"no Ray cluster answers at {address}: {reason}", settings=("address",)) from None


def run_on_ray(
    tasks: list[Task],
    settings: WorkerSettings,
    *,
    workers: int,
    address: str | None = None,
    progress: bool = True,
) -> Iterator[dict]:
    """Each task's result row (`DeblurWorker.__call__`), as the workers finish them."""
    ray = ray_module()
    if not tasks:
        return
    started_here = not ray.is_initialized()
    with ray_lines(shown=progress):
        if started_here:
            try:
                sigterm = signal.getsignal(signal.SIGTERM)
                ray.init(
                    address=address or "local",  # a new local Ray, never one a `ray start` left on this machine
                    num_cpus=None if address else workers * settings.threads,
                    include_dashboard=False,
                    logging_level=logging.WARNING if progress else logging.ERROR,
                    log_to_driver=progress,
                )
            except (ConnectionError, ValueError) as err:  # no cluster there, or an address Ray cannot read
                if not address:
                    raise
                raise SettingError(f"cannot join the Ray cluster at {address}: {err}", settings=("address",)) from None
            _keep_sigterm(sigterm)
        try:
            context = ray.data.DataContext.get_current()
            context.enable_progress_bars = progress
            context.print_on_execution_start = progress
            blocks = min(len(tasks), MAX_BLOCKS)
            dataset = ray.data.from_items([asdict(task) for task in tasks], override_num_blocks=blocks)
            results = dataset.map(
                DeblurWorker,
                fn_constructor_kwargs={"settings": settings},
                compute=ray.data.ActorPoolStrategy(size=min(workers, len(tasks))),
                num_cpus=settings.threads,
            )
            try:
                yield from results.iter_rows()
            except ray.exceptions.ActorDiedError as err:
                if (why := _not_started(err)) is None:
                    raise
                raise why from None
        finally:
            if started_here:
                ray.shutdown()


def _keep_sigterm(handler) -> None:
    """The SIGTERM handler that was there before `ray.init`, put back: Ray's core worker puts in its own, which
    ended a `kill` of `deblur predict --engine ray` with native stack lines and exit 15, where the command's own
    (`deblur.cli.stopping.stop_cleanly`) says what was written and how to go on, as Ctrl-C does."""
    if callable(handler) and threading.current_thread() is threading.main_thread():  # the CLI's; with none set, Ray's
        signal.signal(signal.SIGTERM, handler)


def _not_started(err: Exception) -> Exception | None:
    """Why a worker died as it started (Ray's ActorDiedError; Ray Data then ends the job): a machine that cannot
    load deblur's code (the worker's own errors come back as its tasks' rows); None for anything else (a bug,
    which keeps its traceback)."""
    import ray

    causes = [getattr(arg, "cause", None) for arg in err.args]
    cause = next((found for found in causes if found is not None), None)
    if not isinstance(cause, (ray.exceptions.RaySystemError, ImportError)):
        return None
    reason = str(cause).removeprefix("System error: ").splitlines()[0]
    return WorkerNotStarted(
        f"the workers could not load deblur ({reason}): each machine of the cluster needs deblur {__version__} "
        f"installed, as this one has ({ENGINE_INSTALL})"
    )


@contextmanager
def ray_lines(*, shown: bool) -> Iterator[None]:
    """With `shown` False (`predict -q`), Ray's Python lines to the terminal are kept to its errors (its log files
    keep everything). Its native core worker still writes its own errors there: one on a worker pool whose actors
    restart, which `RAY_BACKEND_LOG_LEVEL` would hide only by printing a line saying so."""
    if shown:
        yield
        return
    import ray.data  # noqa: F401  (its console handler is made on import)

    consoles = [
        handler
        for handler in logging.getLogger("ray.data").handlers
        if isinstance(handler, logging.StreamHandler) and not isinstance(handler, logging.FileHandler)
    ]
    levels = [handler.level for handler in consoles]
    for handler in consoles:
        handler.setLevel(logging.ERROR)
    try:
        yield
    finally:
        for handler, level in zip(consoles, levels, strict=True):
            handler.setLevel(level)
