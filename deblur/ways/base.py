"""What a way of deblurring is: a name, the model it runs (if any), how clips go under it, and one call."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import numpy as np

# The model's result on an HWC float32 image of its input channels (3, or 6 for the kernel-aware network), tiled
# and averaged over the ensemble's copies by the Deblurrer: HWC RGB float32, the kernel-aware network's gate as a
# fourth channel (`deblur.model.with_gate`).
ModelRun = Callable[[np.ndarray], np.ndarray]


class Way(Protocol):
    name: str  # as --method names it, and as predict and the server say which way a photo went
    # The input channels of the model it runs: 3 (a plain network), 6 (the kernel-aware network), or None (no model).
    model_channels: int | None
    clips: str  # the way a clip's frames go under it (its own name where frame by frame is steady)
    clips_note: str  # said once for a clip when `clips` is another way, or when this way flickers
    summary: str  # how it runs, for predict's and evaluate's log line
    estimates: int | None  # camera-shake estimates tried per photo (`deblur.shake.tries`); None: it estimates none

    def deblur(self, image: np.ndarray, model: ModelRun | None) -> np.ndarray:
        """The deblurred HWC RGB float32 photo in [0, 1] (unclipped) from the blurry one; `model` runs the way's
        model (None for a way without one)."""
        ...
