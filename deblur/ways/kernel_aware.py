"""The kernel-aware network: the photo and the kernel path's deconvolution of it, six channels, into the network
that keeps the deconvolution where it is right and the photo where it rings (`deblur.model`); where the deconvolution
changes the photo little and the network keeps little of it, it runs again given the photo alone (`set_aside`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from deblur.shake.tries import ESTIMATES
from deblur.ways.base import ModelRun

# A photo whose deconvolution changes it little (PSNR of one against the other LIGHT dB or more: light blur, none) and
# of which the network keeps little (its gate under SHUT over the whole photo) goes through the network again, given
# the photo in the deconvolution's place, as a sharp photo would. On real frames with moving subjects the
# deconvolution is wrong at their edges, and it steers the network's residual even through a nearly shut gate,
# drawing ghosts of them: six of GOPRO's 11 real dev frames are set aside, each gaining 0.25 to 1.09 dB (the 11
# within 5 px +0.68 -> +0.95); none of Lai et al.'s 100 synthetically shaken images (their deconvolutions change
# them far more); 28 of their 100 real shaken photos, a little softer and without the dark outlines the network drew
# along edges; sharp photos come out nearer themselves. It costs a little on held-out synthetic pairs (2-core AMD
# EPYC Zen 3, 2026-11-29; the kernel-aware card has the figures).
SHUT = 0.15
LIGHT = 30.0


def set_aside(image: np.ndarray, deconvolution: np.ndarray, gate: np.ndarray) -> bool:
    """Whether the network is better run without `deconvolution` of `image` (`SHUT`, `LIGHT`), its `gate` seen."""
    from deblur.losses import image_psnr  # Keras: only when this way runs, as its model does

    return bool(gate.mean() < SHUT) and image_psnr(image, np.clip(deconvolution, 0, 1)) > LIGHT


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
    estimates: int | None = ESTIMATES  # camera-shake estimates tried per photo (`deblur.shake.tries`)

    def deblur(self, image: np.ndarray, model: ModelRun | None) -> np.ndarray:
        from deblur.shake.estimate import tried  # scipy's FFTs: only when this way runs
        from deblur.shake.restore import deconvolved

        deconvolution = deconvolved(image, tried(self.estimates))
        restored = model(np.concatenate([image, deconvolution], axis=2))
        if set_aside(image, deconvolution, restored[:, :, 3]):
            restored = model(np.concatenate([image, image], axis=2))
        return restored[:, :, :3]
