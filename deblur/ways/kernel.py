"""The camera-shake kernel path alone: the shake estimated from the photo and inverted (`deblur.shake`), no model."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from deblur.shake.tries import ESTIMATES
from deblur.ways.base import ModelRun


@dataclass(frozen=True)
class KernelPath:
    name: str = "kernel"
    model_channels: int | None = None
    # Each frame's shake estimated on its own jumps from frame to frame (benchmarks/video_flicker.py: 3.69 levels
    # between frames against the input's 2.10 and the network's 1.65); asked for, it stays, with a word.
    clips: str = "kernel"
    clips_note: str = "--method kernel estimates each frame's shake on its own: expect flicker; the network is steadier"
    summary: str = "the camera-shake kernel path, not the model"
    estimates: int | None = ESTIMATES  # camera-shake estimates tried per photo (`deblur.shake.tries`)

    def deblur(self, image: np.ndarray, model: ModelRun | None) -> np.ndarray:
        from deblur.shake.estimate import tried  # scipy's FFTs: only when this way runs
        from deblur.shake.restore import restore

        return restore(image, tried(self.estimates))
