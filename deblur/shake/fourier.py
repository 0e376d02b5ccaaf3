"""Circular convolution in the Fourier domain, and the border treatment that makes photos fit it."""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from scipy import fft

# scipy.fft workers per transform. One: at the kernel path's sizes threads cost more than they save or save nothing
# (estimate at 1280x720 on a 2-core Zen 4: 2.22 s with all cores, 1.78 s with one; on a 2-core Zen 5, with two
# workers for transforms of 400,000 px and more, 0.83 s against 0.84); the deconvolution runs its channels side by
# side instead (`deblur.shake.deconvolve`).
THREADS = 1


def spectrum(image: np.ndarray) -> np.ndarray:
    return fft.rfft2(image, workers=THREADS)


def image_of(spectrum_: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    return fft.irfft2(spectrum_, s=shape, workers=THREADS).astype(np.float32, copy=False)


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
    # the ramp is separable: one row of phases times one column, not an exponential per frequency
    rows = np.exp(2j * np.pi * dy * np.fft.fftfreq(shape[0])).astype(np.complex64)[:, None]
    columns = np.exp(2j * np.pi * dx * np.fft.rfftfreq(shape[1])).astype(np.complex64)[None, :]
    transfer *= rows
    transfer *= columns
    return transfer


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
    """Forward differences with wrap-around, matching `gradient_otfs` (by slices: `np.roll` copies the image)."""
    gx, gy = np.empty_like(image), np.empty_like(image)
    np.subtract(image[:, 1:], image[:, :-1], out=gx[:, :-1])
    np.subtract(image[:, :1], image[:, -1:], out=gx[:, -1:])
    np.subtract(image[1:], image[:-1], out=gy[:-1])
    np.subtract(image[:1], image[-1:], out=gy[-1:])
    return gx, gy


def gradients_adjoint(gx: np.ndarray, gy: np.ndarray) -> np.ndarray:
    """The adjoint of `gradients` (backward differences): its spectrum is conj(dx) * gx's + conj(dy) * gy's, with
    one FFT instead of two."""
    out = np.empty_like(gx)
    np.subtract(gx[:, :-1], gx[:, 1:], out=out[:, 1:])  # gx one to the left, less gx
    np.subtract(gx[:, -1:], gx[:, :1], out=out[:, :1])
    out[1:] += gy[:-1]
    out[:1] += gy[-1:]
    out -= gy
    return out


@lru_cache(maxsize=16)
def gradient_otfs(shape: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """Read-only: cached, as every round of the estimate at one scale asks for the same shape."""
    # The kernels [1, -1] placed so their OTFs are exactly the roll-based differences of `gradients`.
    dx, dy = otf(np.array([[1, -1, 0]], np.float32), shape), otf(np.array([[1], [-1], [0]], np.float32), shape)
    dx.flags.writeable = dy.flags.writeable = False
    return dx, dy


@lru_cache(maxsize=16)
def gradient_power(shape: tuple[int, int]) -> np.ndarray:
    """|D_x|^2 + |D_y|^2 on `shape`, read-only."""
    dx, dy = gradient_otfs(shape)
    power = (np.abs(dx) ** 2 + np.abs(dy) ** 2).astype(np.float32)
    power.flags.writeable = False
    return power


def wrap_edges(image: np.ndarray, pad: int) -> np.ndarray:
    """Extend the bottom and right by at least `pad` pixels (up to a fast FFT size) of linear ramps back to the
    first row and column.

    Circular convolution treats the photo as a tile; without this the jump from one edge to the opposite one rings
    across the whole result. Cropping back to the photo's size undoes it.
    """
    height, width = image.shape
    rows, columns = padded_shape(image.shape, pad)
    down, across = rows - height, columns - width
    t = np.arange(1, across + 1, dtype=np.float32) / (across + 1)
    wide = np.concatenate([image, (1 - t)[None, :] * image[:, -1:] + t[None, :] * image[:, :1]], axis=1)
    t = np.arange(1, down + 1, dtype=np.float32) / (down + 1)
    return np.concatenate([wide, (1 - t)[:, None] * wide[-1:, :] + t[:, None] * wide[:1, :]], axis=0)


def padded_shape(shape: tuple[int, int], pad: int) -> tuple[int, int]:
    """The shape `wrap_edges` gives an image of `shape`."""
    return fast_length(shape[0] + pad), fast_length(shape[1] + pad)


def fast_length(n: int) -> int:
    """The next length at least `n` whose FFT is fast (only small prime factors)."""
    return fft.next_fast_len(n, real=True)
