"""tf.data's cache in files (`data.cache` a path prefix), made safe to keep from run to run.

tf.data reads a finished cache whatever pairs it is given, so a run on other pairs under the same prefix trained
on the old ones without a word; and a run killed while writing one left a lockfile that the next run took for a
live writer, failing where it should have resumed. Here each set of pairs gets files of its own, named by the
pairs, and the run writing them holds a lock (the kernel's, gone with its process, kill -9 included): what a dead
run left is then known to be dead, and cleared."""

from __future__ import annotations

import contextlib
import glob
import hashlib
import os
from collections.abc import Iterator
from pathlib import Path

from deblur.data.pairs import Pair
from deblur.errors import OutputBusyError, SettingError
from deblur.files import check_parent, make_folder, one_run_at_a_time

NOT_FILES = ("memory", "none")  # the data.cache choices that are not a path prefix


def check_file_cache(cache: str) -> None:
    """Refuse, before the data is checked, a cache prefix whose folder cannot be made or written in (tf.data
    failed on it at the first step, naming a lockfile)."""
    if cache in NOT_FILES:
        return
    try:
        check_parent(cache)
    except SettingError as err:
        raise SettingError(f"data.cache: {err}") from None


def claim_file_cache(cache: str, pairs: list[Pair], held: contextlib.ExitStack, part: str = "") -> str:
    """The prefix tf.data caches `pairs` under for this run: `cache`-<their fingerprint><part> (`part` tells apart
    the input pipelines of one run). Unless that cache is finished, it is locked for this run in `held`, and what a
    killed run left of it is removed; `cache` itself is returned for "memory" and "none"."""
    if cache in NOT_FILES:
        return cache
    named = f"{cache}-{pairs_fingerprint(pairs)}{part}"
    if not Path(f"{named}.index").exists():  # finished: only read, by any number of runs
        held.enter_context(_writing(named))
    return named


def pairs_fingerprint(pairs: list[Pair]) -> str:
    """16 hex digits that change with the set of pairs: their files' paths, sizes and modification times."""
    digest = hashlib.sha256()
    for pair in sorted(pairs, key=lambda p: (str(p.blurry), str(p.sharp))):
        for path in (pair.blurry, pair.deconvolved, pair.sharp):
            if path is None:
                digest.update(b"-\0")
                continue
            try:
                stat = os.stat(path)
                stamp = f"{stat.st_size}:{stat.st_mtime_ns}"
            except OSError:  # the pipeline names a file it cannot read
                stamp = "?"
            digest.update(f"{Path(path).resolve()}\0{stamp}\0".encode())
    return digest.hexdigest()[:16]


@contextlib.contextmanager
def _writing(named: str) -> Iterator[None]:
    make_folder(Path(named).parent)
    with contextlib.ExitStack() as held:
        try:  # `--set data.cache=...` is where the command line changes it
            held.enter_context(one_run_at_a_time(Path(named), Path(named), "set", lock=Path(f"{named}.lock")))
        except OutputBusyError:
            raise OutputBusyError(
                f"another deblur run is writing the cache {named} (data.cache): let it finish its first pass over "
                "the pairs (this run then reads what it wrote), or give this run another data.cache"
            ) from None
        # Held: a lockfile or half-written data here is a dead run's (tf.data would refuse to start over it).
        for left in glob.glob(f"{glob.escape(named)}_*.lockfile") + glob.glob(f"{glob.escape(named)}_*.tempstate*"):
            Path(left).unlink(missing_ok=True)
        yield
