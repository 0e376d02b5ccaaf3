"""Non-blind deconvolution: the photo whose blur by a known kernel is the blurry one, with sparse gradients.

Krishnan and Fergus, "Fast image deconvolution using hyper-Laplacian priors" (NIPS 2009), with the exponent 1:
minimise fidelity/2 |k * x - y|^2 + |grad x|_1 by half-quadratic splitting, each step a shrinkage of the
gradients and one division in the Fourier domain. Written here from the paper.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from deblur.shake.fourier import wrap_edges
from deblur.shake.split import growing, split

FIDELITY = 2000.0  # against the gradient prior: higher keeps more detail and more noise
BETAS = (1.0, 256.0, 2 * np.sqrt(2))  # the splitting weight's start, stop and growth per step
# Channels deconvolved at once, on threads (numpy and scipy's FFTs release the GIL): the cores the process may use.
# `deblur.scale`'s workers lower it to their share of the machine.
THREADS = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def deconvolve(blurry: np.ndarray, kernel: np.ndarray, fidelity: float = FIDELITY) -> np.ndarray:
    """The deblurred HWC RGB photo in [0, 1], each channel on its own."""
    height, width = blurry.shape[:2]

    def channel(c: int) -> np.ndarray:
        observed = wrap_edges(np.asarray(blurry[:, :, c], np.float32), kernel.shape[0])
        return split(observed, kernel, _soft, growing(*BETAS), fidelity)[:height, :width]

    with ThreadPoolExecutor(max(1, min(THREADS, blurry.shape[2]))) as pool:
        channels = list(pool.map(channel, range(blurry.shape[2])))
    return np.clip(np.stack(channels, -1), 0, 1)


def _soft(gx: np.ndarray, gy: np.ndarray, beta: float) -> tuple[np.ndarray, np.ndarray]:
    """The L1 prior's step: each gradient component shrunk towards 0 by 1 / beta."""
    gx -= np.clip(gx, -1 / beta, 1 / beta)
    gy -= np.clip(gy, -1 / beta, 1 / beta)
    return gx, gy
