"""The kernel path for one photo: estimate its camera shake, then invert it."""

from __future__ import annotations

import numpy as np

from deblur.image_array import as_image
from deblur.shake.deconvolve import deconvolve
from deblur.shake.estimate import EstimateSettings, estimate_kernel


def restore(blurry: np.ndarray, settings: EstimateSettings | None = None) -> np.ndarray:
    """The HWC RGB float32 photo in [0, 1] deconvolved by the kernel estimated from it (ImageArrayError for any other
    array)."""
    blurry = as_image(blurry, "the blurry photo")
    return deconvolve(blurry, estimate_kernel(blurry, settings or EstimateSettings()).kernel)


def deconvolved(blurry: np.ndarray, settings: EstimateSettings | None = None) -> np.ndarray:
    """The kernel-aware network's second input: `restore`, with the default settings at training (`--estimates`
    may try more at inference)."""
    return restore(blurry, settings)
