"""One deblur at a time, with a bounded line of requests waiting for it.

The CPU runs one model call at a time well and two badly, so jobs run one after another on a single worker
thread (the event loop stays free to take uploads, answer health checks and refuse work). At most `waiting`
jobs wait behind the running one; beyond that `admit` refuses at once. A job whose client has gone before it
started is dropped and frees its place; a job already running finishes, and its result is thrown away.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")

POLL_SECONDS = 0.2  # how often a waiting request checks that its client is still there


class Busy(Exception):
    """The line is full, or the server is shutting down: come back later."""

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


NO_ROOM = "the server's disk is full: try again later"  # an upload or a clip's result found no room


class ClientGone(Exception):
    """The client disconnected before its result was ready."""


class WorkQueue:
    """Runs jobs one at a time on a worker thread; `waiting` more may queue behind the running one."""

    def __init__(self, waiting: int) -> None:
        self.capacity = waiting + 1
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="deblur-worker")
        self._lock = threading.Lock()
        self._admitted = 0  # admitted and not yet finished or dropped
        self._running = False
        self._closing = False
        self._seconds = 2.0  # the last job's duration: a job's expected time when none is given
        self._started = 0.0  # when the running job started
        self._queued: dict[Future, float] = {}  # the jobs not finished, with their expected seconds

    # === Admission ===

    def admit(self) -> None:
        """Take a place in the line, or raise Busy at once."""
        with self._lock:
            self._refuse_if_full()
            self._admitted += 1

    def check(self) -> None:
        """Raise Busy if `admit` would, without taking a place (to refuse before reading an upload)."""
        with self._lock:
            self._refuse_if_full()

    def _refuse_if_full(self) -> None:
        if self._closing:
            raise self._shutting_down()
        if self._admitted >= self.capacity:
            raise Busy(
                f"busy: {self._admitted} requests are in line (at most {self.capacity})",
                retry_after=self._retry_after(),
            )

    @property
    def closing(self) -> bool:
        return self._closing

    def status(self) -> dict[str, int | bool]:
        with self._lock:
            running = int(self._running)
            return {"running": running, "waiting": self._admitted - running, "capacity": self.capacity}

    def _shutting_down(self) -> Busy:
        return Busy("the server is shutting down", retry_after=max(1, round(self._seconds)))

    def _retry_after(self) -> int:
        """The seconds of work in line: each waiting job's expected time, and what the running one has left (a
        tiny photo just done says nothing of the large ones waiting)."""
        elapsed = time.perf_counter() - self._started
        left = sum(max(s - elapsed, 0.0) if f.running() else s for f, s in self._queued.items())
        return max(1, round(left))

    # === Running ===

    async def run(
        self, job: Callable[[], T], client_gone: Callable[[], Awaitable[bool]], seconds: float | None = None
    ) -> T:
        """Run `job` (after `admit`) when its turn comes; raise ClientGone if the client leaves first, Busy if the
        server shuts down before the job started. `seconds`: how long it is expected to take (by default as long
        as the last job), for Retry-After."""
        try:
            future = self._executor.submit(self._timed, job)
        except RuntimeError:  # the worker has stopped: shutting down
            with self._lock:
                self._admitted -= 1
            raise self._shutting_down() from None
        with self._lock:
            self._queued[future] = self._seconds if seconds is None else seconds
        future.add_done_callback(self._finished)
        waiting = asyncio.wrap_future(future)
        while True:
            done, _ = await asyncio.wait({waiting}, timeout=POLL_SECONDS)
            if done:
                if waiting.cancelled():
                    raise self._shutting_down()
                return waiting.result()
            if await client_gone():
                future.cancel()  # frees the place if it has not started; a running job finishes unread
                raise ClientGone

    def _timed(self, job: Callable[[], T]) -> T:
        with self._lock:
            self._running = True
            self._started = started = time.perf_counter()
        try:
            return job()
        finally:
            with self._lock:
                self._running = False
                self._seconds = time.perf_counter() - started

    def _finished(self, future: Future) -> None:
        with self._lock:
            self._queued.pop(future, None)
            self._admitted -= 1

    # === Shutting down ===

    def close(self) -> None:
        """Refuse new work and drop the jobs that have not started; the running one finishes."""
        with self._lock:
            self._closing = True
            queued = list(self._queued)
        for future in queued:
            future.cancel()

    def join(self) -> None:
        """Wait for the running job to finish."""
        self._executor.shutdown(wait=True, cancel_futures=True)
