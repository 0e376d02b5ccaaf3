"""The JAX loop's checkpoints: every variable of the model and the optimizer, and the step, in one `.npz` file.

OUT/checkpoints/step-00000100.npz, written atomically (a kill -9 leaves the previous files whole), the newest
`keep` of them kept. TensorFlow's loop writes `tf.train.Checkpoint` files there instead; a run folder holds one
kind, and the other backend refuses it by name rather than starting over (`run_folder.refuse_other_backend`).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from deblur.files import atomic_path
from deblur.training.errors import RunFolderError
from deblur.training.run_folder import JAX_CHECKPOINT

PATTERN = re.compile(JAX_CHECKPOINT)
GROUPS = ("trainable", "non_trainable", "optimizer")


def checkpoint_path(folder: Path, step: int) -> Path:
    return folder / f"step-{step:08d}.npz"


def saved_steps(folder: Path) -> list[int]:
    """The steps of the checkpoints in `folder`, oldest first."""
    if not folder.is_dir():
        return []
    return sorted(int(match[1]) for path in folder.iterdir() if (match := PATTERN.fullmatch(path.name)))


def save_checkpoint(folder: Path, step: int, state: dict[str, list], keep: int) -> Path:
    """Write `state` (lists of arrays under GROUPS) at `step`, then remove all but the newest `keep`."""
    arrays = {"step": np.asarray(step, dtype=np.int64)}
    for group in GROUPS:
        arrays |= {f"{group}/{index}": np.asarray(value) for index, value in enumerate(state[group])}
    path = checkpoint_path(folder, step)
    with atomic_path(path, suffix=".npz") as tmp, tmp.open("wb") as file:
        np.savez(file, **arrays)
    for old in saved_steps(folder)[:-keep]:
        checkpoint_path(folder, old).unlink(missing_ok=True)
    return path


def load_checkpoint(path: Path, expected: dict[str, int]) -> tuple[int, dict[str, list[np.ndarray]]]:
    """The step and the arrays of `path`, checked against `expected` (how many arrays each group must hold)."""
    try:
        with np.load(path) as stored:
            contents = {name: stored[name] for name in stored.files}
    except (OSError, ValueError) as err:
        raise RunFolderError(f"{path} cannot be read ({err}); remove it to resume from an earlier one") from None
    state = {}
    for group in GROUPS:
        state[group] = [contents.get(f"{group}/{index}") for index in range(expected[group])]
        extra = [name for name in contents if name.startswith(f"{group}/{expected[group]}")]
        if any(value is None for value in state[group]) or extra:
            raise RunFolderError(f"{path} was written by a different model or optimizer: its {group} state differs")
    return int(contents["step"]), state
