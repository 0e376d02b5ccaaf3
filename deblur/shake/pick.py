"""Which of several kernel estimates to keep, with no sharp photo to compare against: the one whose deconvolved
photo has the sparsest gradients.

Krishnan, Tay and Fergus, "Blind deconvolution using a normalized sparsity measure" (CVPR 2011): |grad x|_1 /
|grad x|_2 is lowest for a sharp photo and rises with blur, and unlike |grad x|_1 alone it does not reward an
estimate that removes contrast. Here it judges the deconvolution each estimate gives (the kernel path's own), not a
latent under estimation. Written here from the paper.
"""

from __future__ import annotations

import numpy as np

from deblur.shake.deconvolve import deconvolve

BORDER = 20  # px left out at each side: the deconvolution's wrapped edges ring whichever the kernel
# A candidate longer than this many times the first estimate's extent (at least 3 px) is not considered: on a sharp
# photo a 121 px kernel's deconvolution scored 0.69 of an 11 px one's (a point-like first estimate), and was picked.
LONGEST = 4.0


def normalised_sparsity(image: np.ndarray) -> float:
    """|d/dx|_1 / |d/dx|_2 + the same in y of a 2-D image: lower is sharper."""
    gx, gy = np.diff(image, axis=1)[:-1], np.diff(image, axis=0)[:, :-1]
    return float(
        np.abs(gx).sum() / max(np.sqrt((gx**2).sum()), 1e-12) + np.abs(gy).sum() / max(np.sqrt((gy**2).sum()), 1e-12)
    )


def deconvolved_sparsity(photo: np.ndarray, kernel: np.ndarray) -> float:
    """An estimate's score: the `normalised_sparsity` of the gray `photo` deconvolved by `kernel`, `BORDER` px left
    out at each side."""
    border = min(BORDER, min(photo.shape) // 4)
    inner = (slice(border, photo.shape[0] - border), slice(border, photo.shape[1] - border))
    return normalised_sparsity(deconvolve(photo[:, :, None], kernel)[inner + (0,)])


def sharpest(photo: np.ndarray, kernels: list[np.ndarray], lengths: list[int], margin: float) -> int:
    """Which of `kernels` (estimates of the gray `photo`'s shake, `lengths` px long at its size, the first the
    default's) deconvolves it with the lowest `normalised_sparsity`, where that is over `margin` below the first's;
    else 0, the first. One `too_long` is not deconvolved."""
    scores = [
        np.inf if long else deconvolved_sparsity(photo, kernel)
        for kernel, long in zip(kernels, too_long(lengths), strict=True)
    ]
    return chosen(scores, lengths, margin)


def chosen(scores: list[float], lengths: list[int], margin: float) -> int:
    """`sharpest`'s choice from the estimates' scores (`deconvolved_sparsity`, taken beside each estimate)."""
    scores = [np.inf if long else score for score, long in zip(scores, too_long(lengths), strict=True)]
    best = int(np.argmin(scores))
    return best if scores[best] < scores[0] * (1 - margin) else 0


def too_long(lengths: list[int]) -> list[bool]:
    """Which estimates, `lengths` px long, are over `LONGEST` times the first's length (at least 3 px): never kept."""
    longest = LONGEST * max(lengths[0], 3)
    return [length > longest for length in lengths]
