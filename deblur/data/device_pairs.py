"""Training pairs made where the network trains (`data.device_pairs`): the blur, the noise and the kernel path's
deconvolution in `keras.ops`, on a batch of sharp patches, so that an accelerator is fed by its own arithmetic and
not by CPU workers (on an H200, pairs made by 15 CPU workers held training to 474 patches/s, against 1,219 for
the model alone; the GPU issue's figures).

The host draws only what is cheap and random: the patches of the sharp photos, each pair's kernel (the recipe's,
`deblur.data.kernels`), the kernel its deconvolution uses (`deblur.data.kernel_errors`: the real blind estimate
is NumPy and SciPy, so on the device every pair is deconvolved by a misestimated true kernel) and its noise.
`make_pairs` does the rest on the device: the blur the same as `apply_blur` (reflected borders, a convolution by
FFT), 8-bit rounding, and `deblur.shake.batched.deconvolve_batch`. Kernel blur only, in sRGB values or linear
light; a recipe's varying regions, JPEG and clipped lights are CPU-only (`deblur data synth`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from keras import ops

from deblur.config import SynthConfig
from deblur.data.kernel_errors import misestimate
from deblur.data.kernels import GAMMA, random_kernel


@dataclass(frozen=True)
class HostDraws:
    """What the host draws for one batch: sharp patches and, per patch, the blur's kernel, the deconvolution's
    kernel (both zero-padded to one odd size around their centre pixels), the noise's standard deviation and
    whether the blur is in linear light."""

    sharp: np.ndarray  # (N, P, P, 3) float32 in [0, 1]
    kernels: np.ndarray  # (N, K, K) float32, each summing to 1
    estimates: np.ndarray  # (N, K, K)
    noise: np.ndarray  # (N,) float32
    linear: np.ndarray  # (N,) float32, 1 or 0


def check_patch_size(patch_size: int, synth: SynthConfig) -> None:
    """Refuse patches too small for the recipe's kernels: their borders are reflected by half a kernel."""
    from deblur.config import ConfigError

    if patch_size <= kernel_size(synth) // 2:
        raise ConfigError(
            f"data.device_pairs pads each patch by half its kernel ({kernel_size(synth) // 2} px for "
            f"data.synth.max_length {synth.max_length:g}): data.patch_size must be larger, not {patch_size}"
        )


def kernel_size(synth: SynthConfig) -> int:
    """The one odd size every kernel of a run is padded to: a shake's square reaches twice its length around its
    mean, and an estimate's errors grow it by at most a quarter."""
    return 2 * int(np.ceil(1.25 * synth.max_length + 2)) + 1


def draw(patches: np.ndarray, rng: np.random.Generator, synth: SynthConfig) -> HostDraws:
    """The host's part of one batch of pairs, for the uint8 sharp `patches` (N, P, P, 3)."""
    size = kernel_size(synth)
    count = len(patches)
    kernels = np.zeros((count, size, size), np.float32)
    estimates = np.zeros_like(kernels)
    noise = np.full(count, synth.noise, np.float32)
    linear = np.zeros(count, np.float32)
    for index in range(count):
        if synth.sharp_share and rng.random() < synth.sharp_share:
            kernel = np.ones((1, 1), np.float32)
        else:
            frames = 0
            if synth.max_frames and (synth.frames_share >= 1 or rng.random() < synth.frames_share):
                frames = int(rng.integers(synth.min_frames, synth.max_frames + 1))
            path = synth.path if synth.path != "mixed" else ("smooth" if rng.random() < 0.5 else "shake")
            if synth.log_length:
                length = float(np.exp(rng.uniform(np.log(synth.min_length), np.log(synth.max_length))))
                kernel = random_kernel(rng, length, length, frames, path)
            else:
                kernel = random_kernel(rng, synth.min_length, synth.max_length, frames, path)
        kernels[index] = _padded(kernel, size)
        estimates[index] = _padded(misestimate(kernel, rng), size)
        if synth.min_noise is not None:
            noise[index] = rng.uniform(synth.min_noise, synth.noise)
        linear[index] = float(synth.linear_light or (synth.linear_share > 0 and rng.random() < synth.linear_share))
    sharp = patches.astype(np.float32) / 255.0
    return HostDraws(sharp, kernels, estimates, noise, linear)


def blur_batch(sharp, kernels, linear=None):
    """(N, P, P, 3) photos in [0, 1], each blurred by its own kernel of (N, K, K) as `apply_blur` blurs one (the
    borders reflected, the kernel's centre pixel in place), in linear light where `linear` (N,) is 1."""
    sharp = ops.convert_to_tensor(sharp, "float32")
    size = int(kernels.shape[1])
    half = size // 2
    if linear is not None:
        linear = ops.reshape(ops.convert_to_tensor(linear, "float32"), (-1, 1, 1, 1))
        sharp = linear * ops.power(ops.maximum(sharp, 0.0), GAMMA) + (1 - linear) * sharp
    padded = ops.pad(sharp, [[0, 0], [half, half], [half, half], [0, 0]], mode="reflect")
    padded = ops.transpose(padded, (0, 3, 1, 2))  # (N, 3, P + K - 1, P + K - 1): FFTs over the last two axes
    rows, columns = int(padded.shape[2]), int(padded.shape[3])
    image_real, image_imag = ops.fft2((padded, ops.zeros_like(padded)))
    k_real, k_imag = _transfer(ops.convert_to_tensor(kernels, "float32"), rows, columns)
    blurred, _ = ops.ifft2((image_real * k_real - image_imag * k_imag, image_real * k_imag + image_imag * k_real))
    # the outputs whose kernel lies wholly inside the padded image: exactly the linear convolution
    blurred = ops.transpose(blurred[:, :, half : rows - half, half : columns - half], (0, 2, 3, 1))
    if linear is not None:
        blurred = linear * ops.power(ops.clip(blurred, 0.0, 1.0), 1 / GAMMA) + (1 - linear) * blurred
    return blurred


def make_pairs(draws: HostDraws, seed, *, kernel_aware: bool):
    """(inputs, sharp) for one batch, on the device: the blurry photo (its deconvolution's channels after its own
    for the kernel-aware network) and the sharp patch. `seed` is a `keras.random.SeedGenerator` or an int."""
    from keras import random

    from deblur.shake.batched import deconvolve_batch

    sharp = ops.convert_to_tensor(draws.sharp, "float32")
    blurred = blur_batch(sharp, draws.kernels, draws.linear)
    noise = ops.reshape(ops.convert_to_tensor(draws.noise, "float32"), (-1, 1, 1, 1))
    blurred = blurred + noise * random.normal(ops.shape(blurred), seed=seed)
    blurry = ops.round(ops.clip(blurred, 0.0, 1.0) * 255.0) / 255.0  # as a photo's 8 bits hold it
    if not kernel_aware:
        return blurry, sharp
    deconvolved = deconvolve_batch(blurry, draws.estimates)
    deconvolved = ops.round(deconvolved * 255.0) / 255.0  # as `deblur data synth` stores it
    return ops.concatenate([blurry, deconvolved], axis=-1), sharp


def _transfer(kernels, rows: int, columns: int):
    """The kernels' transfer functions on (rows, columns), each centre pixel at the origin (`fourier.otf`)."""
    size = int(kernels.shape[1])
    padded = ops.pad(kernels, [[0, 0], [0, rows - size], [0, columns - size]])
    padded = ops.roll(ops.roll(padded, -(size // 2), axis=1), -(size // 2), axis=2)
    real, imag = ops.fft2((padded, ops.zeros_like(padded)))
    return real[:, None], imag[:, None]


def _padded(kernel: np.ndarray, size: int) -> np.ndarray:
    """`kernel` zero-padded (or, past `size`, cropped) to `size` around its centre pixel, summing to 1."""
    pad = (size - kernel.shape[0]) // 2
    if pad < 0:
        kernel = kernel[-pad : kernel.shape[0] + pad, -pad : kernel.shape[1] + pad]
        pad = 0
    kernel = np.pad(kernel, pad)
    return (kernel / kernel.sum()).astype(np.float32)
