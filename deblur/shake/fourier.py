"""Circular convolution in the Fourier domain, and the border treatment that makes photos fit it."""

from __future__ import annotations

import numpy as np
from scipy import fft

# scipy.fft workers per transform. One: at the kernel path's sizes (512 px estimates, 1280x720 channels) threads
# cost more than they save (estimate at 1280x720 on a 2-core Zen 4: 2.22 s with all cores, 1.78 s with one); the
# deconvolution runs its channels side by side instead (`deblur.shake.deconvolve`).
THREADS = 1


def spectrum(image: np.ndarray) -> np.ndarray:
    return fft.rfft2(image, workers=THREADS)


def image_of(spectrum_: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    return fft.irfft2(spectrum_, s=shape, workers=THREADS).astype(np.float32)


def otf(kernel: np.ndarray, shape: tuple[int, int], origin: tuple[float, float] | None = None) -> np.ndarray:
    """The kernel's transfer function on `shape`, with the kernel's point `origin` (row, column; by default its
    centre pixel) at the origin, so that convolving by it moves nothing there. A point between pixels is placed
    exactly, by a phase ramp: shifting the kernel itself by a fraction of a pixel would blur it."""
    padded = np.zeros(shape, np.float32)
    kh, kw = kernel.shape
    padded[:kh, :kw] = kernel
    transfer = spectrum(np.roll(padded, (-(kh // 2), -(kw // 2)), axis=(0, 1)))
    if origin is None:
        return transfer
    dy, dx = origin[0] - kh // 2, origin[1] - kw // 2
    rows = np.fft.fftfreq(shape[0])[:, None]
    columns = np.fft.rfftfreq(shape[1])[None, :]
    return transfer * np.exp(2j * np.pi * (rows * dy + columns * dx)).astype(np.complex64)


def centre_of_mass(kernel: np.ndarray) -> tuple[float, float]:
    """(row, column) of the kernel's centre of mass: where a photo blurred by it sits, on average."""
    total = float(kernel.sum())
    rows, columns = np.indices(kernel.shape)
    return float((rows * kernel).sum() / total), float((columns * kernel).sum() / total)


def kernel_of(spectrum_: np.ndarray, shape: tuple[int, int], size: int) -> np.ndarray:
    """The centred `size` x `size` window of the inverse transform: the inverse of `otf`."""
    full = np.roll(image_of(spectrum_, shape), (size // 2, size // 2), axis=(0, 1))
    return full[:size, :size]


def gradients(image: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Forward differences with wrap-around, matching `gradient_otfs`."""
    return np.roll(image, -1, axis=1) - image, np.roll(image, -1, axis=0) - image


def gradients_adjoint(gx: np.ndarray, gy: np.ndarray) -> np.ndarray:
    """The adjoint of `gradients` (backward differences): its spectrum is conj(dx) * gx's + conj(dy) * gy's, with
    one FFT instead of two."""
    return np.roll(gx, 1, axis=1) - gx + np.roll(gy, 1, axis=0) - gy


def gradient_otfs(shape: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    # The kernels [1, -1] placed so their OTFs are exactly the roll-based differences of `gradients`.
    return otf(np.array([[1, -1, 0]], np.float32), shape), otf(np.array([[1], [-1], [0]], np.float32), shape)


def wrap_edges(image: np.ndarray, pad: int) -> np.ndarray:
    """Extend the bottom and right by at least `pad` pixels (up to a fast FFT size) of linear ramps back to the
    first row and column.

    Circular convolution treats the photo as a tile; without this the jump from one edge to the opposite one rings
    across the whole result. Cropping back to the photo's size undoes it.
    """
    height, width = image.shape
    down, across = fast_length(height + pad) - height, fast_length(width + pad) - width
    t = np.arange(1, across + 1, dtype=np.float32) / (across + 1)
    wide = np.concatenate([image, (1 - t)[None, :] * image[:, -1:] + t[None, :] * image[:, :1]], axis=1)
    t = np.arange(1, down + 1, dtype=np.float32) / (down + 1)
    return np.concatenate([wide, (1 - t)[:, None] * wide[-1:, :] + t[:, None] * wide[:1, :]], axis=0)


def fast_length(n: int) -> int:
    """The next length at least `n` whose FFT is fast (only small prime factors)."""
    return fft.next_fast_len(n, real=True)
