"""The helper process the second camera-shake estimate runs in (`deblur.shake.helper`)."""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

import numpy as np
import pytest
from scipy.signal import fftconvolve

from deblur.shake import deconvolve, helper
from deblur.shake.estimate import estimate_kernel, tried


def _pid_or_exit(pid: int, leave: bool) -> int:
    """A job giving its process's id, or with `leave` ending any process but `pid`: the helper lost in its job."""
    if leave and os.getpid() != pid:
        os._exit(1)
    return os.getpid()


def test_the_second_job_runs_in_the_helper_and_the_rest_here():
    pids = helper.side_by_side(os.getpid, [(), (), ()], cores=2)
    assert pids[0] == pids[2] == os.getpid()
    assert pids[1] != os.getpid() and pids[1] == helper._helper.process.pid
    # kept for the next photo
    assert helper.side_by_side(os.getpid, [(), ()], cores=2)[1] == pids[1]


def test_the_job_here_does_not_wait_for_the_helper_to_read_its_own(monkeypatch):
    here = threading.Event()  # a helper still starting reads its job after its imports: half a second at first
    send, on_threads = helper._Helper.send, helper._on_threads
    monkeypatch.setattr(helper, "_on_threads", lambda *args: here.set() or on_threads(*args))
    monkeypatch.setattr(helper._Helper, "send", lambda *args: here.wait(timeout=10) and send(*args))
    assert helper.side_by_side(os.getpid, [(), ()], cores=2)[1] != os.getpid()


def test_one_core_or_one_job_starts_no_helper(monkeypatch):
    monkeypatch.setattr(helper, "_helper", None)
    assert helper.side_by_side(os.getpid, [(), ()], cores=1) == [os.getpid()] * 2
    assert helper.side_by_side(os.getpid, [()], cores=2) == [os.getpid()]
    assert helper._helper is None


def test_a_jobs_error_is_raised_here_and_the_helper_goes_on():
    with pytest.raises(ValueError, match="'x'"):
        helper.side_by_side(int, [("1",), ("x",)], cores=2)
    started = helper._helper.process.pid
    assert helper.side_by_side(int, [("1",), ("2",)], cores=2) == [1, 2]
    assert helper._helper.process.pid == started  # the same one: it had been stopped and another started


def test_a_lost_helper_s_job_runs_here_and_the_next_call_starts_another(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).parent))  # the helper imports this module's job by name
    if helper._helper is not None:
        helper._helper.stop()
    monkeypatch.setattr(helper, "_helper", None)
    me = os.getpid()
    first = helper.side_by_side(_pid_or_exit, [(me, False), (me, False)], cores=2)[1]
    assert first != me  # the job ran in the helper
    assert helper.side_by_side(_pid_or_exit, [(me, True), (me, True)], cores=2) == [me, me]
    assert not helper._helper.alive()
    again = helper.side_by_side(os.getpid, [(), ()], cores=2)[1]
    assert again not in (first, me)


def test_a_helper_that_cannot_run_here_leaves_its_jobs_to_threads_and_is_not_started_again(monkeypatch):
    monkeypatch.setattr(helper, "_helper", None)
    monkeypatch.setattr(helper.sys, "executable", shutil.which("false"))  # ends at once, answering nothing
    for _ in range(2):
        assert helper.side_by_side(os.getpid, [(), ()], cores=2) == [os.getpid()] * 2
    assert helper._helper.process.args[0] == shutil.which("false") and not helper._helper.alive()
    assert helper._take() is None


def test_a_busy_helper_leaves_the_job_to_a_thread_here():
    together = threading.Barrier(2)

    def met() -> int:  # returns only when two threads run it at once
        together.wait(timeout=30)
        return threading.get_ident()

    taken = helper._take()
    assert taken is not None
    try:
        seen = helper.side_by_side(met, [(), ()], cores=2)
        assert os.getpid() == helper.side_by_side(os.getpid, [(), ()], cores=2)[1]
    finally:
        taken.busy.release()
    assert seen[0] != seen[1]


def test_the_estimate_is_the_same_with_the_helper_and_without(monkeypatch):
    monkeypatch.setattr(deconvolve, "THREADS", 2)  # the cores the estimates may use
    rng = np.random.default_rng(3)
    sharp = np.clip(fftconvolve(rng.random((96, 128)), np.ones((5, 5)) / 25, mode="same") * 1.4 - 0.2, 0, 1)
    kernel = np.zeros((9, 9), np.float32)
    kernel[4, 1:8] = 1 / 7
    blurry = np.clip(fftconvolve(sharp, kernel, mode="same"), 0, 1).astype(np.float32)
    photo = np.repeat(blurry[:, :, None], 3, axis=2)
    beside = estimate_kernel(photo, tried(3))
    assert helper._helper is not None and helper._helper.alive()
    monkeypatch.setattr(helper, "_take", lambda: None)
    alone = estimate_kernel(photo, tried(3))
    np.testing.assert_array_equal(beside.kernel, alone.kernel)
