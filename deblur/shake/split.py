"""Half-quadratic splitting, the loop both halves of the kernel path share: the L0-gradient latent of the
estimate and the L1-gradient deconvolution.

argmin_x fidelity/2 |k * x - y|^2 + prior(grad x) alternates two easy steps while a weight beta grows: the
gradients g nearest grad x under the prior (`shrink`, per pixel), then the x whose gradients are nearest g and
whose blur is nearest y (one division in the Fourier domain, the borders periodic).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np

from deblur.shake.fourier import gradient_power, gradients, gradients_adjoint, image_of, otf, spectrum

# (gx, gy, beta) -> the shrunk (gx, gy), in place or new
Shrink = Callable[[np.ndarray, np.ndarray, float], tuple[np.ndarray, np.ndarray]]


def split(
    observed: np.ndarray,
    kernel: np.ndarray,
    shrink: Shrink,
    betas: Iterable[float],
    fidelity: float = 1.0,
    origin: tuple[float, float] | None = None,
) -> np.ndarray:
    """The latent 2-D image after one shrink and one Fourier step per beta, starting from `observed`; `origin` is
    the kernel's point that stays in place (`fourier.otf`). `kernel` may be its transfer function on
    `observed.shape` already (complex), for channels that share one."""
    k_otf = kernel if np.iscomplexobj(kernel) else otf(kernel, observed.shape, origin)
    kty = fidelity * np.conj(k_otf) * spectrum(observed)
    ktk = fidelity * np.abs(k_otf) ** 2
    dtd = gradient_power(observed.shape)
    latent = observed
    denominator = np.empty_like(ktk)
    for beta in betas:
        gx, gy = shrink(*gradients(latent), beta)
        edges = spectrum(gradients_adjoint(gx, gy))
        # (kty + beta edges) / (ktk + beta dtd), in place: at 1280x720 the temporaries cost as much as the FFTs
        edges *= beta
        edges += kty
        np.multiply(dtd, beta, out=denominator)
        denominator += ktk
        edges /= denominator
        latent = image_of(edges, observed.shape)
    return latent


def growing(start: float, stop: float, rate: float) -> Iterable[float]:
    """start, start * rate, ... while below `stop`."""
    beta = start
    while beta < stop:
        yield beta
        beta *= rate
