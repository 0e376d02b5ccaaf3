"""The kernel-aware network: the photo and the kernel path's deconvolution of it, six channels, into the network
that keeps the deconvolution where it is right and the photo where it rings (`deblur.model`). Two ends are settled
by the photo's change and the network's gate (`result_source`): a heavy deconvolution the network leans towards is
kept whole, and where the deconvolution changes the photo little and the network keeps little of it, the network
runs again given the photo alone."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

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

# A photo whose deconvolution changes it much (under HEAVY dB: long shake) and of which the network keeps a fair share
# (its gate over OPEN over the whole photo) comes back as the deconvolution itself. There the network hedges: its
# gate keeps under half of a right deconvolution, and even opened fully its residual takes about 0.3 dB off one. On
# Lai et al.'s 100 synthetically shaken images the default had gained 0.9 dB less than the deconvolution alone; with
# 83 of them kept whole, 0.2 dB less (a few wrong estimates, once read through a narrow gate, now come back whole).
# GOPRO's real frames are all changed less by theirs (23.7 dB and more), and the sharp photos changed much are those
# of which the network keeps little (gates 0.05 to 0.06): neither is touched (2-core AMD EPYC Zen 3, 2026-11-29; the
# kernel-aware card has the figures).
HEAVY = 22.0
OPEN = 0.2

Source = Literal["network", "deconvolution", "photo"]


def result_source(image: np.ndarray, deconvolution: np.ndarray, gate: np.ndarray) -> Source:
    """What the result of `image` is, the network's `gate` over it seen: the network's result (`network`), the
    `deconvolution` kept whole (`HEAVY`, `OPEN`), or the network run again given the `photo` alone (`LIGHT`, `SHUT`)."""
    from deblur.losses import image_psnr  # Keras: only when this way runs, as its model does

    change, kept = image_psnr(image, deconvolution), float(gate.mean())
    if change < HEAVY and kept > OPEN:
        return "deconvolution"
    if change > LIGHT and kept < SHUT:
        return "photo"
    return "network"


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
        source = result_source(image, deconvolution, restored[:, :, 3])
        if source == "deconvolution":
            return deconvolution
        if source == "photo":
            restored = model(np.concatenate([image, image], axis=2))
        return restored[:, :, :3]
