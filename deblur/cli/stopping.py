"""How the `deblur` command stops: SIGTERM (`kill`, a service manager, a container's stop) unwinds as Ctrl-C does,
the work in progress abandoned cleanly (no temporary file left; training saves a checkpoint) and what was finished
kept. Python raises a stop wherever the process is; four places needed care, each met on a 2-core Zen 4 stopping
`deblur evaluate` or `deblur train` at different moments."""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import sys
import threading

AGAIN_AFTER = 0.05  # s: a stop put off is sent again this soon


def stop_cleanly() -> None:
    """SIGTERM raises KeyboardInterrupt, as Ctrl-C does; either is put off inside an import or JAX's compiling
    until it ends, and SIGTERM is ignored after the exit handlers; a stop that Python swallowed is sent again."""

    said = False  # that this stop waits for JAX

    def interrupt(signum, frame):
        nonlocal said
        # Raised inside an import, a stop can leave a native library half set up: TensorFlow's then crashed the
        # process as it exited (exit 139, "Segmentation fault", one stop of three 2.5 s into an evaluate). Raised
        # inside JAX's tracing and compiling, it left a compilation running on XLA's threads, which crashed as the
        # process exited and its client was torn down (3 SIGTERMs of 4 and 4 Ctrl-Cs of 4, 5.5 s into
        # `deblur train` on JAX).
        inside = _put_off(frame)
        if inside:
            if inside == "jax" and not said:
                # Seconds on a CPU, longer for a GPU's first compile: without a word the stop looked ignored.
                # Written as is (a handler may interrupt a print to stderr); on a terminal over a progress bar's line.
                clear = b"\r\x1b[K" if _on_terminal() else b""
                with contextlib.suppress(OSError):
                    os.write(2, clear + b"stopping once JAX has finished compiling ...\n")
                said = True
            _again_soon(signum)
            return
        said = False
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # not where it is ignored (nohup, `cmd &`)
        signal.signal(signal.SIGINT, interrupt)
    sys.unraisablehook = _stops_not_swallowed(sys.unraisablehook)
    # Registered before any library's, so run after them: the run's threads have ended and its output is written.
    # What is left is the teardown of TensorFlow's and OpenVINO's native code (1.4 s after `deblur evaluate`),
    # during which Python has put SIGTERM's default back: a stop then ended a finished run as killed (exit 143,
    # two of six stops of an evaluate). It is ignored there; SIGKILL still ends a teardown that hangs.
    atexit.register(signal.signal, signal.SIGTERM, signal.SIG_IGN)


# JAX's tracing, lowering and compiling (a jitted call's fast path has no frame of its own)
_JAX = os.path.join("jax", "_src", "")


def _put_off(frame) -> str | None:
    """Where `frame` runs: "import" inside an import (below importlib's own frames; JAX's own imports too), "jax"
    inside JAX's own code, else None."""
    inside = None
    while frame is not None:
        name = frame.f_code.co_filename
        if name.startswith("<frozen importlib._bootstrap"):
            return "import"
        if _JAX in name:
            inside = "jax"
        frame = frame.f_back
    return inside


def _on_terminal() -> bool:
    """Whether stderr is a terminal (descriptor 2 itself may be the pipe that `deblur.console` filters)."""
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced, or closed
        return False


def _again_soon(signum: int = signal.SIGTERM) -> None:
    """The stop to this process again in `AGAIN_AFTER` s, from a thread: the handler then runs where it may raise."""
    timer = threading.Timer(AGAIN_AFTER, os.kill, (os.getpid(), signum))
    timer.daemon = True
    with contextlib.suppress(RuntimeError):  # the interpreter is shutting down: no thread starts, nor is needed
        timer.start()


def _stops_not_swallowed(previous):
    """An unraisable-exception hook that sends a swallowed stop again: a stop raised where Python ignores exceptions
    (a garbage-collection callback, such as the one JAX registers, or a __del__) was printed as "Exception ignored"
    and the run went on to its end (one stop of three 3 s into an evaluate)."""

    def hook(unraisable) -> None:
        if isinstance(unraisable.exc_value, KeyboardInterrupt):
            _again_soon()
            return
        previous(unraisable)

    return hook
