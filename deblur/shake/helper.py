"""A helper process for the camera-shake estimate tried beside the first (`estimate_kernel`'s second L0 weight).

Two estimates on two threads of one process had taken 1.2x to 1.7x one estimate's time on a 2-core Zen 4, where two
processes take about 1.2x: between its FFTs the estimate makes thousands of small NumPy and SciPy calls that hold
the GIL, so its threads wait on each other. The second job runs in a helper process instead, started at the first
photo that needs it (its imports overlap the first job here) and kept for the next photos. It is a plain `python -m
deblur.shake.helper` reading pickled jobs from its stdin and answering on its stdout, not a multiprocessing child:
those re-import the caller's main script, and a script without a `__main__` guard would run again. It ignores
Ctrl-C (the caller stops it) and ends when its caller closes the pipe or exits.

Where the helper is busy (another thread's photo), cannot start or is lost, its job runs here, on a thread, as it
did before: the results are the same either way (tests/test_shake_helper.py).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import pickle
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

_LOST = object()  # a reply that never came: the helper ended or its pipe broke


class _Helper:
    """One helper process and the lock of its one job at a time."""

    def __init__(self) -> None:
        package_root = str(Path(__file__).resolve().parents[2])  # importable as the caller imports it
        path = os.environ.get("PYTHONPATH")
        environment = {**os.environ, "PYTHONPATH": package_root + (os.pathsep + path if path else "")}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "deblur.shake.helper"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=environment,
        )
        self.busy = threading.Lock()
        self.answered = False  # one that ends before its first answer is not started again (`_take`)

    def alive(self) -> bool:
        return self.process.poll() is None

    def send(self, function: Callable[..., Any], job: Sequence[Any]) -> bool:
        try:
            pickle.dump((function, tuple(job)), self.process.stdin, pickle.HIGHEST_PROTOCOL)
            self.process.stdin.flush()
            return True
        except (OSError, pickle.PicklingError):
            self.stop()
            return False

    def receive(self) -> tuple[bool, Any]:
        """(True, the job's result) or (False, its exception); (False, `_LOST`) if the helper ended first."""
        try:
            reply = pickle.load(self.process.stdout)
        except (OSError, EOFError, pickle.UnpicklingError):
            self.stop()
            return False, _LOST
        self.answered = True
        return reply

    def stop(self) -> None:
        if self.alive():
            self.process.kill()
        self.process.wait()
        for pipe in (self.process.stdin, self.process.stdout):
            with contextlib.suppress(OSError):
                pipe.close()


_helper: _Helper | None = None
_starting = threading.Lock()


def _take() -> _Helper | None:
    """The helper, its lock held, started if need be; None where it is busy or cannot start."""
    global _helper
    if getattr(sys, "frozen", False) or not sys.executable:  # a bundled app's executable is the app, not Python
        return None
    with _starting:
        if _helper is not None and not _helper.alive() and not _helper.answered:
            return None  # it cannot run here (deblur not importable by that Python, say): threads from now on
        if _helper is None or not _helper.alive():
            try:
                _helper = _Helper()
            except (OSError, ValueError):
                return None
        return _helper if _helper.busy.acquire(blocking=False) else None


def peak_kb() -> int | None:
    """The helper's peak resident memory in kB (Linux), None where none runs or it cannot be read: a benchmark's
    peak memory adds it to its own process's."""
    if _helper is None or not _helper.alive():
        return None
    try:
        status = Path(f"/proc/{_helper.process.pid}/status").read_text()
    except OSError:
        return None
    return next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:")), None)


@atexit.register
def _stop_at_exit() -> None:
    if _helper is not None:
        _helper.stop()


def side_by_side(function: Callable[..., Any], jobs: Sequence[Sequence[Any]], cores: int) -> list[Any]:
    """`[function(*job) for job in jobs]` on up to `cores` cores: the second job in the helper process, the others
    here (on threads where cores are left). `function` must be importable by name (pickled so), and so must its
    arguments and result."""
    helper = _take() if len(jobs) > 1 and cores > 1 else None
    if helper is None:
        return _on_threads(function, jobs, cores)
    try:
        # sent from a thread: a helper still starting reads its job only after its imports (half a second)
        with ThreadPoolExecutor(1) as sender:
            sending = sender.submit(helper.send, function, jobs[1])
            done = _on_threads(function, [jobs[0], *jobs[2:]], cores - 1)
            sent = sending.result()
        ok, beside = helper.receive() if sent else (False, _LOST)
    except BaseException:  # Ctrl-C or an error here: its reply would be read as the next job's
        helper.stop()
        raise
    finally:
        helper.busy.release()
    if beside is _LOST:
        beside = function(*jobs[1])
    elif not ok:  # raised only now: its reply was read whole, so the helper is kept for the next photo
        raise beside
    return [done[0], beside, *done[1:]]


def _on_threads(function: Callable[..., Any], jobs: Sequence[Sequence[Any]], cores: int) -> list[Any]:
    if len(jobs) < 2 or cores < 2:
        return [function(*job) for job in jobs]
    with ThreadPoolExecutor(min(len(jobs), cores)) as pool:
        return list(pool.map(lambda job: function(*job), jobs))


def _serve() -> None:
    """The helper's loop: a job from stdin, its (ok, result or exception) to stdout, until stdin closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    jobs = sys.stdin.buffer
    replies = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # a stray print must not corrupt the replies
    while True:
        try:
            function, job = pickle.load(jobs)
        except EOFError:
            return
        try:
            reply = (True, function(*job))
        except Exception as error:  # noqa: BLE001 - raised again in the caller
            reply = (False, error)
        try:  # whole, before writing: a reply that fails half-way must not leave half a pickle in the pipe
            data = pickle.dumps(reply, pickle.HIGHEST_PROTOCOL)
        except (pickle.PicklingError, TypeError, AttributeError):
            data = pickle.dumps((False, RuntimeError(f"{reply[1]!r}")), pickle.HIGHEST_PROTOCOL)
        replies.write(data)
        replies.flush()


if __name__ == "__main__":
    _serve()
