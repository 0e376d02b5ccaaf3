"""Which of several kernel estimates to keep, with no sharp photo to compare against: the one whose deconvolved
photo has the sparsest gradients.

Krishnan, Tay and Fergus, "Blind deconvolution using a normalized sparsity measure" (CVPR 2011): |grad x|_1 /
|grad x|_2 is lowest for a sharp photo and rises with blur, and unlike |grad x|_1 alone it does not reward an
estimate that removes contrast. Here it judges the deconvolution each estimate gives (the kernel path's own), not a
latent under estimation. Written here from the paper. A kernel in pieces is held against its estimate: a camera
moves in one stroke.
"""

from __future__ import annotations

import numpy as np

from deblur.shake.deconvolve import deconvolve

BORDER = 20  # px left out at each side: the deconvolution's wrapped edges ring whichever the kernel
# A candidate longer than this many times the first estimate's extent (at least 3 px) is not considered: on a sharp
# photo a 121 px kernel's deconvolution scored 0.69 of an 11 px one's (a point-like first estimate), and was picked.
LONGEST = 4.0
# A kernel whose values over its faint part make more than one 8-connected piece has its score raised by this share
# before the margin is applied. Broken paths are the estimate's typical failure (on Lai's 75 px kernel, a hook and an
# end with the stroke between them missing): of the first estimate's kernels on Lai's 100, the 35 in pieces gained
# +2.45 dB on average, the 65 whole +6.30. Two estimates, on a Zen 5, `--method kernel` within 8 px (GOPRO's within
# 5): Lai's 100 +5.22 -> +5.29 (5 choices change: 3 better by over 0.1 dB, 1 worse), GOPRO's 11 -0.27 -> -0.25 (1
# changes, +0.30), 60 held-out synthetic shakes +0.91 -> +0.91 (2 change, +0.26 and -0.60); 10% and 100% gave +5.27
# and +5.26 on Lai's.
BROKEN = 0.05


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


def sharpest(
    photo: np.ndarray, kernels: list[np.ndarray], lengths: list[int], margin: float, broken: list[bool]
) -> int:
    """Which of `kernels` (estimates of the gray `photo`'s shake, `lengths` px long at its size, the first the
    default's) deconvolves it with the lowest `normalised_sparsity`, where that is over `margin` below the first's;
    else 0, the first. One `too_long` is not deconvolved; one `broken` (its support in more than one piece) scores
    `BROKEN` higher."""
    scores = [
        np.inf if long else deconvolved_sparsity(photo, kernel)
        for kernel, long in zip(kernels, too_long(lengths), strict=True)
    ]
    return chosen(scores, lengths, margin, broken)


def chosen(scores: list[float], lengths: list[int], margin: float, broken: list[bool]) -> int:
    """`sharpest`'s choice from the estimates' scores (`deconvolved_sparsity`, taken beside each estimate)."""
    scores = [
        np.inf if long else score * (1 + BROKEN * apart)
        for score, long, apart in zip(scores, too_long(lengths), broken, strict=True)
    ]
    best = int(np.argmin(scores))
    return best if scores[best] < scores[0] * (1 - margin) else 0


def too_long(lengths: list[int]) -> list[bool]:
    """Which estimates, `lengths` px long, are over `LONGEST` times the first's length (at least 3 px): never kept."""
    longest = LONGEST * max(lengths[0], 3)
    return [length > longest for length in lengths]
