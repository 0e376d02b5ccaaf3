"""What the commands write to the terminal: progress bars that suit where they go, and TensorFlow's native
start-up lines kept off it (its real errors still reach it).

Progress: on a terminal, tqdm's bars. Under `nohup`, in CI or piped to a file, tqdm would write every update of
every bar (one training log reached megabytes of carriage returns), so there `progress_bar` writes a plain line
now and then instead (`LineProgress`).

Native lines:

TensorFlow's C++ libraries write to file descriptor 2 as they load, before its log level applies: "All log
messages before absl::InitializeLog()", "oneDNN custom operations are on", "Could not find cuda drivers",
"failed call to cuInit" on a machine without a GPU, and so on, twice or more per command. They read like
failures and are not. `hide_native_noise` routes descriptor 2 through a filter that drops those lines only; Python's
own `sys.stderr` (progress bars, tracebacks, the CLI's errors) is moved to a copy of the real descriptor first, so
it never passes through the filter. TensorFlow's Python warning that a function "triggered tf.function retracing"
is dropped too: predict traces once for each new size of photo, which is expected.
"""

from __future__ import annotations

import atexit
import logging
import os
import re
import sys
import threading
import time

from tqdm import tqdm


class Hint(str):
    """A line the library logs as advice, not as what it did (how to get a faster runtime, say): the command line
    shows it on stderr, and not at all under --quiet."""


NOISE = re.compile(
    "|".join(
        [
            r"All log messages before absl::InitializeLog\(\) is called are written to STDERR",
            r"oneDNN custom operations are on",
            r"Could not find cuda drivers on your machine",
            r"failed call to cuInit",
            r"oneDNN supports DT_UINT8 only on platforms with AVX-512",
            r"This TensorFlow binary is optimized to use available CPU instructions",
            r"To enable the following instructions: .* rebuild TensorFlow",
            r"Unable to register cu(DNN|FFT|BLAS) factory",
            r"TF-TRT Warning: Could not find TensorRT",
            # LiteRT's converter reading the graph TensorFlow itself wrote (an attribute it ignores, it says)
            r"NodeDef mentions attribute \w+ which is not in the op definition.* Unknown attributes will be ignored",
        ]
    )
)


def is_noise(line: str) -> bool:
    """True for a line of TensorFlow's native code that reports nothing wrong (most at start-up)."""
    return bool(NOISE.search(line))


class _NoRetracingWarning(logging.Filter):
    """TensorFlow's "N out of the last M calls to <function ...> triggered tf.function retracing" warning: Keras
    traces its predict function once for each new size of image, and photos come in every size. Each trace is
    expected, and the paragraph of advice about loops and tensors was printed among a folder's results."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "triggered tf.function retracing" not in record.getMessage()


def hide_native_noise() -> None:
    """Filter TensorFlow's start-up lines out of this process's descriptor 2 (call once, before importing it), and
    its retracing warning out of its Python log."""
    if os.environ.get("DEBLUR_NATIVE_LOGS"):  # to see everything, as it was
        return
    logging.getLogger("tensorflow").addFilter(_NoRetracingWarning())
    try:
        sys.stderr.flush()
        real = os.dup(2)
        read_end, write_end = os.pipe()
    except (OSError, AttributeError, ValueError):  # no usable descriptor 2: nothing to filter
        return
    sys.stderr = open(os.dup(real), "w", buffering=1, encoding="utf-8", errors="backslashreplace")  # noqa: SIM115
    os.dup2(write_end, 2)
    os.close(write_end)
    copier = threading.Thread(target=_copy_lines, args=(read_end, real), daemon=True)
    copier.start()

    def restore() -> None:
        # Native code may still write after this: point descriptor 2 back at the terminal, then drain the pipe.
        os.dup2(real, 2)
        copier.join(timeout=2)

    atexit.register(restore)


def _copy_lines(read_end: int, real: int) -> None:
    with open(read_end, "rb") as pipe:
        for raw in pipe:
            if not is_noise(raw.decode("utf-8", "replace")):
                os.write(real, raw)


# === Progress ===


class LineProgress(tqdm):
    """tqdm for a log: a whole line when the bar has moved on `step` of its total or `seconds` have passed since
    the last line (never two lines within `min_gap` seconds), and one at the end; no carriage returns."""

    step = 0.1
    seconds = 60.0
    min_gap = 2.0

    def __init__(self, *args, **kwargs) -> None:
        self._line_at = (-float("inf"), 0)  # (time, n) of the last line written
        self._lines = 0
        kwargs.setdefault("mininterval", self.min_gap)
        super().__init__(*args, **kwargs)
        self.sp = None  # no status printer: tqdm's close() then leaves the stream alone

    def display(self, msg=None, pos=None) -> bool:
        now = time.monotonic()
        when, done = self._line_at
        moved = bool(self.total) and self.n - done >= self.step * self.total
        if self.n and now - when >= self.min_gap and (moved or now - when >= self.seconds):
            self._write_line(now)
        return True

    def close(self) -> None:
        if not self.disable and (self.leave or self._lines) and self._line_at[1] != self.n:
            self._write_line(time.monotonic())
        super().close()

    def _write_line(self, now: float) -> None:
        self.fp.write(self.__str__().strip() + "\n")
        self.fp.flush()
        self._line_at = (now, self.n)
        self._lines += 1


def progress_bar(iterable=None, **kwargs) -> tqdm:
    """A tqdm bar on a terminal, else a `LineProgress` (tqdm's arguments, and its interface, either way)."""
    stream = kwargs.get("file") or sys.stderr
    interactive = hasattr(stream, "isatty") and stream.isatty()
    return (tqdm if interactive else LineProgress)(iterable, **kwargs)
