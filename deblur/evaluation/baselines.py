"""Classical deblurring to compare the model with: deconvolution with the true kernel when the pairs carry one
(Richardson-Lucy and Wiener, from scikit-image), and unsharp masking when they do not.

Inputs and outputs are HWC RGB float32 in [0, 1]; kernels are 2-D, summing to 1, as `deblur.data.kernels` makes.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy import ndimage
from skimage import restoration

# Chosen on 4 of the demo's validation pairs (RL 5/10/20/40 iterations: +1.84/+2.02/+0.92/-1.58 dB over the
# blurry input; Wiener balance 0.005/0.02/0.05/0.1: +1.79/+2.53/+2.15/+1.71 dB).
RL_ITERATIONS = 10
WIENER_BALANCE = 0.02


def richardson_lucy(blurry: np.ndarray, kernel: np.ndarray, iterations: int = RL_ITERATIONS) -> np.ndarray:
    return _per_channel(
        blurry, kernel, lambda channel: restoration.richardson_lucy(channel, kernel, num_iter=iterations)
    )


def wiener(blurry: np.ndarray, kernel: np.ndarray, balance: float = WIENER_BALANCE) -> np.ndarray:
    return _per_channel(blurry, kernel, lambda channel: restoration.wiener(channel, kernel, balance))


def unsharp_mask(blurry: np.ndarray, kernel: np.ndarray | None = None, radius: float = 2.0, amount: float = 1.0):
    """Needs no kernel: sharpens edges by adding back the difference from a Gaussian blur."""
    # Written out: scikit-image 0.26's unsharp_mask returned NaN or garbage for float32 input here.
    smooth = ndimage.gaussian_filter(blurry.astype(np.float64), sigma=(radius, radius, 0), mode="reflect")
    sharpened = blurry + amount * (blurry - smooth)
    return np.clip(sharpened, 0.0, 1.0).astype(np.float32)


def _per_channel(image: np.ndarray, kernel: np.ndarray, restore: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    # Reflect-pad by the kernel's reach, as the blur was made: deconvolving at a hard edge rings across the image.
    pad = max(kernel.shape)
    padded = np.pad(image.astype(np.float64), ((pad, pad), (pad, pad), (0, 0)), mode="reflect")
    channels = [restore(padded[:, :, c]) for c in range(image.shape[-1])]
    restored = np.stack(channels, axis=-1)[pad:-pad, pad:-pad]
    return np.clip(restored, 0.0, 1.0).astype(np.float32)


WITH_KERNEL = {"richardson-lucy": richardson_lucy, "wiener": wiener}
WITHOUT_KERNEL = {"unsharp-mask": unsharp_mask}
