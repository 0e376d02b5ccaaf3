"""The server's line of work: one job at a time, a bounded line, places freed by clients that leave."""

import asyncio
import threading

import pytest

from deblur.serve.work import Busy, ClientGone, WorkQueue


class Gate:
    """A job that runs until the test opens the gate."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.open = threading.Event()
        self.runs = 0

    def __call__(self) -> str:
        self.runs += 1
        self.started.set()
        assert self.open.wait(10)
        return "done"


async def never_gone() -> bool:
    return False


def enqueue(queue: WorkQueue, job, client_gone=never_gone) -> asyncio.Task:
    """Admit a request and start waiting for its job, as the route does."""
    queue.admit()
    return asyncio.create_task(queue.run(job, client_gone))


async def occupy(queue: WorkQueue) -> tuple[asyncio.Task, Gate]:
    """A job that holds the worker until its gate opens, once it has started."""
    gate = Gate()
    task = enqueue(queue, gate)
    await asyncio.to_thread(gate.started.wait, 5)
    return task, gate


def test_one_at_a_time_and_a_full_line_refuses_at_once():
    async def scenario():
        queue = WorkQueue(waiting=1)
        first, gate = await occupy(queue)
        second = enqueue(queue, lambda: "second")
        await asyncio.sleep(0.05)
        assert queue.status() == {"running": 1, "waiting": 1, "capacity": 2}
        with pytest.raises(Busy) as refused:
            queue.admit()
        assert refused.value.retry_after >= 1 and "2 requests are in line (at most 2)" in str(refused.value)
        with pytest.raises(Busy):
            queue.check()
        gate.open.set()
        assert await first == "done" and await second == "second"
        assert queue.status() == {"running": 0, "waiting": 0, "capacity": 2}
        queue.check()  # room again

    asyncio.run(scenario())


def test_a_client_that_leaves_frees_its_place_and_its_job_never_runs():
    async def scenario():
        queue = WorkQueue(waiting=1)
        first, gate = await occupy(queue)
        left = Gate()
        gone = asyncio.Event()
        waiting = enqueue(queue, left, lambda: _is_set(gone))
        await asyncio.sleep(0.05)
        gone.set()
        with pytest.raises(ClientGone):
            await waiting
        assert queue.status()["waiting"] == 0
        third = enqueue(queue, lambda: "third")  # its place is free
        gate.open.set()
        assert await first == "done" and await third == "third"
        assert left.runs == 0

    asyncio.run(scenario())


async def _is_set(event: asyncio.Event) -> bool:
    return event.is_set()


def test_closing_drops_the_waiting_jobs_and_lets_the_running_one_finish():
    async def scenario():
        queue = WorkQueue(waiting=2)
        running, gate = await occupy(queue)
        waiting = enqueue(queue, lambda: "never")
        await asyncio.sleep(0.05)
        queue.close()
        with pytest.raises(Busy, match="shutting down"):
            await waiting
        with pytest.raises(Busy, match="shutting down"):
            queue.admit()
        gate.open.set()
        assert await running == "done"
        queue.join()

    asyncio.run(scenario())


def test_a_failing_job_frees_its_place():
    async def scenario():
        queue = WorkQueue(waiting=0)

        def broken():
            raise RuntimeError("inference failed")

        queue.admit()
        with pytest.raises(RuntimeError, match="inference failed"):
            await queue.run(broken, never_gone)
        queue.admit()
        assert await queue.run(lambda: "fine", never_gone) == "fine"

    asyncio.run(scenario())
