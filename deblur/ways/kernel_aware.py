"""The kernel-aware network: the photo and the kernel path's deconvolution of it, six channels, into the network
that keeps the deconvolution where it is right and the photo where it rings (`deblur.model`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from deblur.ways.base import ModelRun


@dataclass(frozen=True)
class KernelAware:
    name: str = "kernel-aware"
    model_channels: int | None = 6
    # Each frame's own kernel estimate would flicker: clips go to the plain network beside it.
    clips: str = "network"
    clips_note: str = (
        "clips go to the network under --method kernel-aware, the default (each frame's own kernel estimate would "
        "flicker)"
    )
    summary: str = ", given the kernel path's deconvolution"
    estimates: int | None = 1  # camera-shake estimates tried per photo (`deblur.shake.tries`)

    def deblur(self, image: np.ndarray, model: ModelRun | None) -> np.ndarray:
        from deblur.shake.estimate import tried  # scipy's FFTs: only when this way runs
        from deblur.shake.restore import deconvolved

        return model(np.concatenate([image, deconvolved(image, tried(self.estimates))], axis=2))
