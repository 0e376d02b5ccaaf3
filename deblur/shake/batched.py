"""The kernel path's deconvolution (`deblur.shake.deconvolve`) in `keras.ops`, on a batch, on any backend: the
kernel-aware network's second input made where the network trains, on an accelerator, instead of by CPU workers.

The same half-quadratic splitting with the L1 gradient prior (Krishnan and Fergus, NIPS 2009), the same borders
(ramps back to the opposite edge, up to the same fast FFT size) and the same registration (the kernel's centre of
mass held in place), so that its results match the NumPy step's to within float32 rounding
(tests/test_shake_batched.py; `python benchmarks/shake_quality.py batched` on whole photos). Complex spectra are
carried as (real, imaginary) pairs: `keras.ops` has no complex dtype on every backend.
"""

from __future__ import annotations

import numpy as np
from keras import ops

from deblur.shake.deconvolve import BETAS, FIDELITY
from deblur.shake.fourier import fast_length
from deblur.shake.split import growing


def deconvolve_batch(blurry, kernels, fidelity: float = FIDELITY):
    """(N, H, W, C) float32 photos in [0, 1], each deconvolved by its own kernel of `kernels` (N, k, k) (smaller
    kernels zero-padded to one size around their centre pixel), as `deconvolve` does each photo: (N, H, W, C)."""
    blurry = ops.convert_to_tensor(blurry, "float32")
    kernels = ops.convert_to_tensor(kernels, "float32")
    height, width = int(blurry.shape[1]), int(blurry.shape[2])
    size = int(kernels.shape[1])
    observed = _wrap_edges(ops.transpose(blurry, (0, 3, 1, 2)), size)  # (N, C, H', W'): FFTs over the last two
    rows, columns = int(observed.shape[2]), int(observed.shape[3])
    k_real, k_imag = _transfer(kernels, rows, columns)
    y_real, y_imag = ops.fft2((observed, ops.zeros_like(observed)))
    # fidelity conj(K) Y and fidelity |K|^2, as in `split`
    kty_real = fidelity * (k_real * y_real + k_imag * y_imag)
    kty_imag = fidelity * (k_real * y_imag - k_imag * y_real)
    ktk = fidelity * (k_real**2 + k_imag**2)
    fy = np.fft.fftfreq(rows).astype(np.float32)[:, None]
    fx = np.fft.fftfreq(columns).astype(np.float32)[None, :]
    # |D_x|^2 + |D_y|^2 of the forward differences, in closed form
    dtd = ops.convert_to_tensor(4 - 2 * np.cos(2 * np.pi * fx) - 2 * np.cos(2 * np.pi * fy), "float32")
    latent = observed
    for beta in growing(*BETAS):
        gx = ops.roll(latent, -1, axis=3) - latent
        gy = ops.roll(latent, -1, axis=2) - latent
        gx = gx - ops.clip(gx, -1 / beta, 1 / beta)  # the L1 prior's shrinkage
        gy = gy - ops.clip(gy, -1 / beta, 1 / beta)
        edges = ops.roll(gx, 1, axis=3) - gx + ops.roll(gy, 1, axis=2) - gy
        e_real, e_imag = ops.fft2((edges, ops.zeros_like(edges)))
        denominator = ktk + beta * dtd
        latent, _ = ops.ifft2(((kty_real + beta * e_real) / denominator, (kty_imag + beta * e_imag) / denominator))
    restored = latent[:, :, :height, :width]
    return ops.clip(ops.transpose(restored, (0, 2, 3, 1)), 0.0, 1.0)


def _transfer(kernels, rows: int, columns: int):
    """The kernels' transfer functions on (rows, columns), each with its centre of mass at the origin (`otf`):
    (real, imaginary), each (N, 1, rows, columns)."""
    size = int(kernels.shape[1])
    kernels = kernels / ops.sum(kernels, axis=(1, 2), keepdims=True)
    padded = ops.pad(kernels, [[0, 0], [0, rows - size], [0, columns - size]])
    padded = ops.roll(ops.roll(padded, -(size // 2), axis=1), -(size // 2), axis=2)
    real, imag = ops.fft2((padded, ops.zeros_like(padded)))
    index = ops.convert_to_tensor(np.arange(size, dtype=np.float32) - size // 2)
    dy = ops.sum(ops.sum(kernels, axis=2) * index, axis=1)[:, None, None]  # centre of mass from the centre pixel
    dx = ops.sum(ops.sum(kernels, axis=1) * index, axis=1)[:, None, None]
    fy = ops.convert_to_tensor(np.fft.fftfreq(rows).astype(np.float32)[:, None])
    fx = ops.convert_to_tensor(np.fft.fftfreq(columns).astype(np.float32)[None, :])
    phase = 2 * np.pi * (fy * dy + fx * dx)
    cos, sin = ops.cos(phase), ops.sin(phase)
    return (real * cos - imag * sin)[:, None], (real * sin + imag * cos)[:, None]


def _wrap_edges(images, pad: int):
    """`fourier.wrap_edges` on (N, C, H, W): the bottom and right extended by ramps back to the first row and
    column, up to the same fast FFT size."""
    height, width = int(images.shape[2]), int(images.shape[3])
    down, across = fast_length(height + pad) - height, fast_length(width + pad) - width
    t = ops.convert_to_tensor(np.arange(1, across + 1, dtype=np.float32) / (across + 1))
    wide = ops.concatenate([images, (1 - t) * images[..., -1:] + t * images[..., :1]], axis=3)
    t = ops.convert_to_tensor((np.arange(1, down + 1, dtype=np.float32) / (down + 1))[:, None])
    return ops.concatenate([wide, (1 - t) * wide[:, :, -1:, :] + t * wide[:, :, :1, :]], axis=2)
