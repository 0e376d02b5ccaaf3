"""Non-blind deconvolution: the photo whose blur by a known kernel is the blurry one, with sparse gradients.

Krishnan and Fergus, "Fast image deconvolution using hyper-Laplacian priors" (NIPS 2009), with the exponent 1:
minimise fidelity/2 |k * x - y|^2 + |grad x|_1 by half-quadratic splitting, each step a shrinkage of the
gradients and one division in the Fourier domain. Written here from the paper.
"""

from __future__ import annotations

import numpy as np

from deblur.shake.fourier import gradient_otfs, gradients, gradients_adjoint, image_of, otf, spectrum, wrap_edges

FIDELITY = 2000.0  # against the gradient prior: higher keeps more detail and more noise
BETAS = (1.0, 256.0, 2 * np.sqrt(2))  # the splitting weight's start, end and growth per step


def deconvolve(blurry: np.ndarray, kernel: np.ndarray, fidelity: float = FIDELITY) -> np.ndarray:
    """The deblurred HWC RGB photo in [0, 1], each channel on its own."""
    height, width = blurry.shape[:2]
    channels = []
    for c in range(blurry.shape[2]):
        observed = wrap_edges(np.asarray(blurry[:, :, c], np.float32), kernel.shape[0])
        channels.append(_deconvolve_channel(observed, kernel, fidelity)[:height, :width])
    return np.clip(np.stack(channels, -1), 0, 1)


def _deconvolve_channel(observed: np.ndarray, kernel: np.ndarray, fidelity: float) -> np.ndarray:
    k_otf = otf(kernel, observed.shape)
    dx, dy = gradient_otfs(observed.shape)
    kty = fidelity * np.conj(k_otf) * spectrum(observed)
    ktk = fidelity * np.abs(k_otf) ** 2
    dtd = np.abs(dx) ** 2 + np.abs(dy) ** 2
    latent = observed
    beta, beta_max, rate = BETAS
    while beta <= beta_max:
        gx, gy = gradients(latent)
        gx -= np.clip(gx, -1 / beta, 1 / beta)  # soft thresholding: the L1 prior's step
        gy -= np.clip(gy, -1 / beta, 1 / beta)
        edges = spectrum(gradients_adjoint(gx, gy))
        latent = image_of((kty + beta * edges) / (ktk + beta * dtd), observed.shape)
        beta *= rate
    return latent
