"""Non-blind deconvolution: the photo whose blur by a known kernel is the blurry one, with sparse gradients.

Krishnan and Fergus, "Fast image deconvolution using hyper-Laplacian priors" (NIPS 2009): minimise fidelity/2
|k * x - y|^2 + |grad x|^exponent by half-quadratic splitting, each step a shrinkage of the gradients and one
division in the Fourier domain. The kernel path uses the exponent 1 (a soft threshold); below 1 (the paper's 2/3
and 1/2) the shrinkage has no closed form and is read from a table per splitting weight, as the paper does. Written
here from the paper.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache

import numpy as np

from deblur.errors import SettingError, is_positive_number, is_real_number
from deblur.image_array import ImageArrayError, as_image
from deblur.shake.fourier import centre_of_mass, otf, padded_shape, wrap_edges
from deblur.shake.split import Shrink, growing, split

FIDELITY = 2000.0  # against the gradient prior: higher keeps more detail and more noise
EXPONENT = 1.0  # of the gradient prior (`benchmarks/shake_quality.py split` measures 2/3 against it)
BETAS = (1.0, 256.0, 2 * np.sqrt(2))  # the splitting weight's start, stop and growth per step
# Channels deconvolved at once, on threads (numpy and scipy's FFTs release the GIL): the cores the process may use.
# `deblur.scale`'s workers lower it to their share of the machine.
THREADS = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
TABLE_REACH = 1.5  # the gradients a table covers (a [0, 1] photo's and the latent's overshoot); beyond, w = v - c
TABLE_STEPS = 6001


def deconvolve(
    blurry: np.ndarray, kernel: np.ndarray, fidelity: float = FIDELITY, exponent: float = EXPONENT
) -> np.ndarray:
    """The deblurred HWC RGB photo in [0, 1], each channel on its own, registered with the blurry photo.

    The kernel's centre of mass is held in place (`fourier.otf`), not its centre pixel: a blurred edge's mass sits
    at the kernel's centre of mass from where the sharp edge was, so the result's edges fall in the middle of the
    blurry photo's smears, wherever the kernel's array puts its centre. Centred by the kernel's extent instead,
    results moved by up to 8 px (Lai's recorded kernels, stored by extent) and a sharp photo came back shifted:
    a result laid over the photo, blended with it (`--strength`) or given to the kernel-aware network with it
    must sit where the photo does.
    """
    if not is_real_number(exponent) or not 0 < exponent <= 1:
        raise SettingError(f"the gradient prior's exponent must be in (0, 1], not {exponent!r}", settings=("exponent",))
    if not is_positive_number(fidelity):  # 0 and NaN had given an image of NaN, -1 a wrong one
        raise SettingError(
            f"fidelity must be a positive number (default {FIDELITY:g}); got {fidelity!r}", settings=("fidelity",)
        )
    blurry = as_image(blurry, "the blurry photo", channels=None)
    kernel = _as_kernel(kernel)
    height, width = blurry.shape[:2]
    shrink = soft_shrink if exponent == 1 else _hyper(exponent)
    betas = list(growing(*BETAS))  # every channel walks the same weights
    # By the kernel's longer side: padded by its height, a 1x41 kernel's blur had wrapped round the photo's sides
    # (6 dB under the same kernel given as 41x41).
    reach = max(kernel.shape)
    transfer = otf(kernel, padded_shape((height, width), reach), centre_of_mass(kernel))  # every channel's

    def channel(c: int) -> np.ndarray:
        observed = wrap_edges(np.asarray(blurry[:, :, c], np.float32), reach)
        return split(observed, transfer, shrink, betas, fidelity)[:height, :width]

    with ThreadPoolExecutor(max(1, min(THREADS, blurry.shape[2]))) as pool:
        channels = list(pool.map(channel, range(blurry.shape[2])))
    return np.clip(np.stack(channels, -1), 0, 1)


def soft_shrink(gx: np.ndarray, gy: np.ndarray, beta: float) -> tuple[np.ndarray, np.ndarray]:
    """The L1 prior's step: each gradient component shrunk towards 0 by 1 / beta."""
    gx -= np.clip(gx, -1 / beta, 1 / beta)
    gy -= np.clip(gy, -1 / beta, 1 / beta)
    return gx, gy


def _as_kernel(kernel: np.ndarray) -> np.ndarray:
    """The kernel as float32, refused unless it is a 2-D array of non-negative values summing to 1 (a 3-D one, a
    zero one or NaN had ended in an unpacking error or an image of NaN; one summing to 9 had given a photo back about
    nine times too dark, a mean of 0.06 for 0.51, without a word)."""
    try:
        array = np.asarray(kernel, dtype=np.float32)
    except (TypeError, ValueError):  # a string or ragged rows had ended on NumPy's "could not convert"
        raise ImageArrayError(
            f"the kernel: {type(kernel).__name__} {kernel!r:.40}, where deblur takes a 2-D array of non-negative "
            "values summing to 1"
        ) from None
    total = float(array.sum()) if array.size else 0.0  # a 3-D kernel summing to 1 had been said to sum to 0
    if array.ndim != 2 or not np.isfinite(total) or array.size == 0 or float(array.min()) < 0 or abs(total - 1) > 1e-3:
        raise ImageArrayError(
            f"the kernel: an array of shape {array.shape} summing to {total:g}, where deblur takes a 2-D one of "
            "non-negative values summing to 1 (normalise it: kernel / kernel.sum())"
        )
    return array


def _hyper(exponent: float) -> Shrink:
    """The hyper-Laplacian prior's step: each gradient component v replaced by argmin_w |w|^exponent + beta/2 (w -
    v)^2, read from `shrinkage`'s table."""

    def shrink(gx: np.ndarray, gy: np.ndarray, beta: float) -> tuple[np.ndarray, np.ndarray]:
        table = shrinkage(exponent, beta)[1].astype(np.float32)
        per_step = (TABLE_STEPS - 1) / TABLE_REACH

        def look_up(g: np.ndarray) -> np.ndarray:  # the nearest entry: 4x faster than interpolating
            size = np.abs(g)
            index = np.minimum(size * per_step + 0.5, TABLE_STEPS - 1).astype(np.int32)
            # far from 0 the shrinkage is a near-constant step back, the table's last one
            shrunk = np.where(size > TABLE_REACH, size - (TABLE_REACH - table[-1]), table[index])
            return np.copysign(shrunk, g)

        return look_up(gx), look_up(gy)

    return shrink


@lru_cache(maxsize=64)
def shrinkage(exponent: float, beta: float) -> tuple[np.ndarray, np.ndarray]:
    """(v, w(v)) for v from 0 to TABLE_REACH: the minimiser of |w|^exponent + beta/2 (w - v)^2 over w >= 0.

    The minimiser is 0 or the larger root of exponent w^(exponent-1) + beta (w - v) = 0, which Newton's method
    reaches from w = v (the function is convex beyond its inflection, and w = v lies beyond it whenever a root
    does); whichever of the two costs less is kept."""
    values = np.linspace(0, TABLE_REACH, TABLE_STEPS)
    w = values.copy()
    for _ in range(30):
        w = np.maximum(w, 1e-12)
        slope = exponent * w ** (exponent - 1) + beta * (w - values)
        curvature = exponent * (exponent - 1) * w ** (exponent - 2) + beta
        w = np.clip(w - slope / np.where(curvature > 0, curvature, np.inf), 1e-12, values + 1e-12)
    converged = np.abs(exponent * w ** (exponent - 1) + beta * (w - values)) < 1e-6 * max(1.0, beta)
    cheaper = w**exponent + beta / 2 * (w - values) ** 2 < beta / 2 * values**2
    return values, np.where(converged & cheaper, w, 0.0)
