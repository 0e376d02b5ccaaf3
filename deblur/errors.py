"""The one family of user errors: bad input, a bad setting, a file that cannot be used.

Every error a user can fix is a `DeblurError`; its message names the file or the value and speaks of the library's
own names (`tile`, `overwrite`). The CLI has one handler for them: it prints the message on one line, adds the
flags of the `settings` concerned, and exits with `exit_code`. Anything else is a bug and keeps its traceback.
Each subclass also derives from the built-in error it used to be, so `except ValueError` in callers still works.
"""

from __future__ import annotations

import errno
import math
import numbers
import os
from collections.abc import Callable, Iterable

import numpy as np


class DeblurError(Exception):
    """A user error. `settings` are the names of the options concerned, e.g. ("tile",) or ("out", "overwrite")."""

    exit_code = 1

    def __init__(self, message: str, *, settings: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.settings = settings


class SettingError(DeblurError, ValueError):
    """A setting's value is not allowed."""


def is_whole_number(value: object) -> bool:
    """Whether a setting's value is a whole number (Python's int or NumPy's), bool not among them: a string had
    failed in the comparison after it, as a TypeError, and True passed as 1."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def is_real_number(value: object) -> bool:
    """Whether a setting's value is a real number (Python's or NumPy's, NaN among them), bool not among them: a
    string had failed in the comparison after it, as a TypeError, or deep inside NumPy."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def is_positive_number(value: object) -> bool:
    """Whether a setting's value is a real number above 0 and finite (NaN and inf not among them)."""
    return is_real_number(value) and 0 < value < math.inf


def is_list_of_strings(value: object) -> bool:
    """Whether a setting's value is a list or tuple of strings (names, overrides): one string had been read letter
    by letter, a number had ended on "not iterable"."""
    return isinstance(value, list | tuple) and all(isinstance(item, str) for item in value)


def check_switches(**switches: object) -> None:
    """Refuse switches that are not True or False (NumPy's bool is one), naming each: a string is true, so
    overwrite="no" had replaced outputs, and float16="no" asked for float16 weights."""
    wrong = {name: value for name, value in switches.items() if not isinstance(value, bool | np.bool_)}
    if wrong:
        given = ", ".join(f"{name}={value!r}" for name, value in wrong.items())
        raise SettingError(f"{', '.join(wrong)} must be True or False; got {given}", settings=tuple(wrong))


def check_choice(name: str, value: object, choices: Iterable[str], *, setting: str | None = None) -> None:
    """Refuse a value that is not one of the strings `choices`, naming `name` (its setting `setting`, default the
    same) and the choices: the one way deblur says it, where it had been said five ways, and a list given had ended
    on "unhashable type" where the choices were a dict's keys."""
    choices = tuple(choices)
    if not isinstance(value, str) or value not in choices:
        raise SettingError(f"{name} must be one of {', '.join(choices)}; got {value!r}", settings=(setting or name,))


def given_log(log: object) -> Callable[[str], None]:
    """The function to say things through: `log`, or one that says nothing for None; anything else is refused before
    any work (a `logging.Logger` given as log had ended on "'Logger' object is not callable" at the first line said:
    after the model had loaded, or after the pairs `synthesize_pairs` had made, its report lost)."""
    if log is None:
        return _say_nothing
    if not callable(log):
        raise SettingError(
            f"log must be a function of one string (print, a logger's info) or None for none; got {type(log).__name__}",
            settings=("log",),
        )
    return log


def _say_nothing(_: str) -> None:
    pass


def check_reporter(progress: object, calls: tuple[str, ...], protocol: str) -> None:
    """Refuse a progress reporter (`protocol` names its kind) that lacks a method it will be called by, before
    anything runs: progress=True had ended on "'bool' object has no attribute 'start'" once the model had loaded."""
    missing = [name for name in calls if not callable(getattr(progress, name, None))]
    if progress is not None and missing:
        raise SettingError(
            f"progress must be None (no reports) or a {protocol}, with the methods {', '.join(calls)}; "
            f"{type(progress).__name__} has no {', '.join(missing)}",
            settings=("progress",),
        )


def check_threads(threads: object) -> None:
    """Refuse a thread count that is neither None (every core) nor a whole number of at least 1."""
    if threads is not None and (not is_whole_number(threads) or threads < 1):
        raise SettingError(f"threads must be None (all) or a whole number of at least 1; got {threads!r}")


class Interrupted(DeblurError):
    """Stopped by Ctrl-C or SIGTERM; the message says what was kept for the next run."""

    exit_code = 130  # as a shell reports Ctrl-C


class OutputExistsError(DeblurError, FileExistsError):
    """An output would replace an existing file or folder the user did not ask to replace."""


class OutputBusyError(OutputExistsError):
    """Another deblur run is writing the output (`deblur.files.one_run_at_a_time`)."""


class MissingFileError(DeblurError, FileNotFoundError):
    """A file a setting names is not there."""


# === TensorFlow's errors as one line ===

_NOISE = ("File ", "Detected at node", "[[", "Cf. ")


def error_reason(err: Exception, limit: int = 200) -> str:
    """The informative line of a TensorFlow error (a `tf.errors.OpError`): its first line is often just "Graph
    execution error:", followed by a traceback of where the graph was built."""
    lines = [line.strip() for line in (getattr(err, "message", None) or str(err)).splitlines() if line.strip()]
    for line in lines:
        if "unhealthy" in line or "aborted" in line:  # a lost worker: the line that says so
            return line[:limit]
    meaningful = [line for line in lines if not line.endswith(":") and not line.startswith(_NOISE)]
    return (meaningful or lines or [""])[0][:limit]


class NothingFoundError(DeblurError, FileNotFoundError):
    """The inputs name folders only, and none holds a photo or a clip."""


# === A full disk ===

FULL_DISK = (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC))  # no EDQUOT on Windows


def full_disk_message(err: OSError) -> str | None:
    """One line for a write that found the disk, or the user's quota, full; None for any other OSError (a bug or the
    machine's: it keeps its traceback). Writes are atomic and long jobs resume, so running the command again goes on
    from what was finished."""
    if err.errno not in FULL_DISK:
        return None
    where = f"{err.filename}: " if err.filename else ""
    return f"{where}{err.strerror}: free some space, then run the same command again (what was finished is kept)"


def full_disk_at(err: OSError, path: str | os.PathLike) -> OSError:
    """`err`, a full disk, as an OSError naming `path` (PyAV's errors hold their file name read-only: a new one)."""
    return OSError(err.errno, err.strerror, str(path))


def full_disk_from_tensorflow(err: Exception, path: str | os.PathLike) -> OSError | None:
    """TensorFlow's error for a full disk (a ResourceExhaustedError with the OS's words in it) as the OSError it is,
    naming `path`; None for any other error."""
    if getattr(err, "error_code", None) != 8:  # tf.errors.RESOURCE_EXHAUSTED, read without importing TensorFlow
        return None
    for code in FULL_DISK:
        if os.strerror(code) in str(err):
            return OSError(code, os.strerror(code), str(path))
    return None
