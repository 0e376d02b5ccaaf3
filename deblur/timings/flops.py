"""Arithmetic rates: what the model costs per pixel, and what the machine's own matmul reaches in the same run.

A speed means little across machines; a speed as a share of the hardware's matmul rate in the same precision,
measured minutes apart on the same machine, can be read anywhere.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import keras
import numpy as np

# A training step is the forward pass, the gradient with respect to the activations and the gradient with respect
# to the weights: each about as much arithmetic as the forward pass.
TRAIN_FLOPS_PER_FORWARD = 3


@dataclass(frozen=True)
class MatmulRate:
    dtype: str
    gflops: float  # the best of several timed runs


def matmul_rate(dtype: str, *, size: int = 2048, least_seconds: float = 0.25, runs: int = 3) -> MatmulRate:
    """The backend's own `size`x`size` matmul, compiled (a `tf.function`, or `jax.jit` under Keras' JAX backend),
    in `dtype`, on the default device: the best of `runs` timed runs of as many matmuls as take `least_seconds`.

    Timed by the clock, not by a fixed count: 30 matmuls took 5 s a precision on a quiet 2-core Zen 3 (`deblur
    timings` measures each precision its stages compute in; this takes 1.4 s there, the same rate within 7%), where
    a GPU does one in a fraction of a millisecond.
    """
    if keras.backend.backend() == "jax":
        import jax

        a, b = (jax.random.uniform(jax.random.key(seed), (size, size)).astype(dtype) for seed in (0, 1))
        matmul = jax.jit(jax.numpy.matmul)
    else:
        import tensorflow as tf

        a = tf.cast(tf.random.uniform((size, size)), dtype)
        b = tf.cast(tf.random.uniform((size, size)), dtype)
        matmul = tf.function(tf.linalg.matmul)

    def timed(repeats: int) -> float:
        started = time.perf_counter()
        for _ in range(repeats):
            product = matmul(a, b)
        np.asarray(product)  # a read-back: the device has finished
        return time.perf_counter() - started

    timed(1)  # trace and warm up
    repeats = max(1, math.ceil(least_seconds / timed(1)))
    best = min(timed(repeats) / repeats for _ in range(runs))
    return MatmulRate(dtype, 2 * size**3 / best / 1e9)


def forward_flops_per_pixel(model: keras.Model, probe: int = 64) -> float:
    """Floating-point operations (2 per multiply-add) of the model's convolutions per input pixel.

    Counted from the output shapes of every `Conv2D` on a `probe`x`probe` input, so any width, depth or
    resolution change of the network is counted as it is built.
    """
    convs = [layer for layer in model.layers if isinstance(layer, keras.layers.Conv2D)]
    probe_model = keras.Model(model.input, [layer.output for layer in convs])
    channels = model.input_shape[-1]  # 6 for the kernel-aware network: the photo and its deconvolution
    outputs = probe_model(np.zeros((1, probe, probe, channels), dtype="float32"), training=False)
    flops = 0.0
    for layer, output in zip(convs, outputs, strict=True):
        kernel_h, kernel_w, channels_in, channels_out = layer.kernel.shape
        positions = output.shape[1] * output.shape[2]
        flops += 2.0 * positions * kernel_h * kernel_w * channels_in * channels_out
    return flops / probe**2


def achieved(flops: float, seconds: float, rate: MatmulRate | None) -> tuple[float, float | None]:
    """(GFLOP/s, share of the matmul rate) for `flops` done in `seconds`."""
    gflops = flops / seconds / 1e9
    return gflops, (gflops / rate.gflops if rate else None)
