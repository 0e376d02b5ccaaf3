"""What training does when data that passed the pre-flight check breaks later: name the files, or leave them out."""

from __future__ import annotations

import tensorflow as tf

from deblur.data.pairs import Pair, check_pairs, problem_listing, split_unreadable
from deblur.training.errors import TrainingError


def leave_out_unreadable(
    err: tf.errors.OpError, pairs: list[Pair], skip: bool, step: int, last_checkpoint: str | None
) -> tuple[list[Pair], list[str]]:
    """After a read error: with `skip`, the pairs still readable and the files that are not; otherwise, or when
    nothing (or everything) turns out unreadable, a TrainingError naming the files."""
    if skip:
        readable, broken = split_unreadable(pairs, deep=True, progress=False)
        if broken and readable:
            return readable, broken
    raise data_error(err, pairs, step, last_checkpoint) from None


def data_error(err: tf.errors.OpError, pairs: list[Pair], step: int, last_checkpoint: str | None) -> TrainingError:
    """A clear error for data that broke after the pre-flight check: decode every file again to name them."""
    broken = check_pairs(pairs, deep=True, progress=False)
    listing = problem_listing(broken) or "  (all files decode now; see the error)"
    first_line = (err.message or str(err)).strip().splitlines()[0]
    if "transformation with iterator" in first_line:  # tf.data's wrapper; what went wrong is the last part
        first_line = first_line.rsplit(": ", 1)[-1]
    return TrainingError(
        f"reading the data failed at step {step}: {first_line}\n{listing}\nThe last checkpoint "
        f"({last_checkpoint or 'none yet'}) is kept: fix or remove these files and run the same command to resume."
    )
