"""Kernels as a blind estimate gets them wrong, made from the true one, for the kernel-aware network's training.

The kernel path's estimate (`deblur.shake.estimate`) misses in a few ways, each seen on Lai et al.'s recorded
kernels and described in the model card: a long shake found too short (its search stops early) or a little too
long, its ends cut off, its fine path smeared into a blob, a faint spur grown along a long straight edge, or, on a
photo whose blur it cannot explain, a kernel unlike the true one. Training on the real estimate alone would show
the network only the errors of its training photos; these errors, drawn at random around the true kernel, cover
the same kinds at every size. Each returned kernel is non-negative and sums to 1, as an estimate does.
"""

from __future__ import annotations

import numpy as np
from PIL import Image
from scipy import ndimage

from deblur.data.kernels import random_kernel

EXACT = 0.15  # the share of kernels left as they are: an estimate can be right
WRONG = 0.1  # the share replaced by an unrelated kernel of about the same size


def misestimate(kernel: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The true `kernel` with one or two of an estimate's errors, or (rarely) unchanged or replaced."""
    draw = rng.random()
    if draw < EXACT:
        return kernel
    if draw < EXACT + WRONG:
        return random_kernel(rng, max(1.0, 0.5 * kernel.shape[0]), max(1.5, 1.2 * kernel.shape[0]))
    errors = (rescaled, cut_short, smeared, with_spur)
    chosen = rng.choice(len(errors), size=1 + int(rng.random() < 0.4), replace=False)
    for index in chosen:
        kernel = errors[index](kernel, rng)
    return kernel


def rescaled(kernel: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The kernel 0.6 to 1.25 times its size: a shake found too short, or a little too long."""
    factor = float(np.exp(rng.uniform(np.log(0.6), np.log(1.25))))
    size = max(1, 2 * round(kernel.shape[0] * factor / 2) + 1)
    resized = np.asarray(Image.fromarray(kernel.astype(np.float32), mode="F").resize((size, size), Image.BILINEAR))
    return _normalised(resized)


def cut_short(kernel: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The kernel with 10 to 40% of its mass cut off beyond a random line: an end of the path not found."""
    rows, columns = np.indices(kernel.shape, dtype=np.float32)
    angle = rng.uniform(0, 2 * np.pi)
    along = rows * np.sin(angle) + columns * np.cos(angle)
    order = np.argsort(along, axis=None)
    mass = np.cumsum(kernel.ravel()[order])
    cut = np.searchsorted(mass, rng.uniform(0.1, 0.4) * mass[-1])
    kept = kernel.ravel().copy()
    kept[order[:cut]] = 0
    return _normalised(kept.reshape(kernel.shape)) if kept.sum() > 0 else kernel


def smeared(kernel: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The kernel blurred by a Gaussian of 0.5 to 2 px: its fine path lost, as a coarse estimate loses it."""
    sigma = rng.uniform(0.5, 2.0)
    pad = int(np.ceil(2 * sigma))
    return _normalised(ndimage.gaussian_filter(np.pad(kernel, pad), sigma))


def with_spur(kernel: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The kernel with a faint straight streak (5 to 20% of its mass) from a random point of it outwards."""
    size = kernel.shape[0]
    length = rng.uniform(0.2, 0.6) * max(size, 5)
    pad = int(np.ceil(length))
    grown = np.pad(kernel, pad)
    ys, xs = np.nonzero(grown > grown.max() / 4)
    start = int(rng.integers(len(ys)))
    angle = rng.uniform(0, 2 * np.pi)
    steps = np.linspace(0, length, max(2, int(length) * 2))
    rows = np.clip(np.round(ys[start] + steps * np.sin(angle)).astype(int), 0, grown.shape[0] - 1)
    columns = np.clip(np.round(xs[start] + steps * np.cos(angle)).astype(int), 0, grown.shape[1] - 1)
    spur = np.zeros_like(grown)
    np.add.at(spur, (rows, columns), 1.0)
    share = rng.uniform(0.05, 0.2)
    return _normalised(grown / grown.sum() * (1 - share) + spur / spur.sum() * share)


def _normalised(kernel: np.ndarray) -> np.ndarray:
    """Non-negative, cropped to an odd square around its support, summing to 1."""
    kernel = np.maximum(np.asarray(kernel, np.float32), 0)
    ys, xs = np.nonzero(kernel > kernel.max() * 1e-3)
    half = max(ys.max() - ys.min(), xs.max() - xs.min()) // 2 + 1
    cy, cx = (ys.min() + ys.max()) // 2, (xs.min() + xs.max()) // 2
    padded = np.pad(kernel, half)
    square = padded[cy : cy + 2 * half + 1, cx : cx + 2 * half + 1]
    return (square / square.sum()).astype(np.float32)
