"""Synthetic camera-shake blur: random motion trajectories turned into blur kernels.

The trajectory model follows Boracchi and Foi, "Modeling the performance of image restoration from motion blur"
(IEEE TIP 2012), as DeblurGAN used it: a particle moving at constant speed whose velocity is nudged by Gaussian
jitter, pulled back towards its start (a hand steadying the camera) and, now and then, reversed by a sudden
shake. The kernel is the time the trajectory spends over each pixel, so it sums to one.
"""

from __future__ import annotations

import numpy as np
from scipy.signal import fftconvolve

GAMMA = 2.2  # GOPRO's approximation of the camera response, used to blur in linear light


def shake_trajectory(rng: np.random.Generator, length: float, points: int = 1000) -> np.ndarray:
    """A random camera-shake path as complex positions, scaled so its larger extent is `length` pixels."""
    anxiety = 0.1 * rng.random()  # how much the velocity is perturbed
    centripetal = 0.7 * rng.random()  # pull back towards the start
    shake_probability = 0.2 * rng.random()  # chance per point of an abrupt direction change
    jitter = 10.0 * rng.random()
    speed = 1.0 / (points - 1)

    velocity = np.exp(1j * rng.uniform(0, 2 * np.pi)) * speed
    noise = rng.standard_normal((points, 2)) @ np.array([1.0, 1j])
    shakes = rng.random(points) < shake_probability * anxiety
    turns = rng.random(points) - 0.5
    path = np.zeros(points, dtype=np.complex128)
    for t in range(points - 1):
        kick = 2 * velocity * np.exp(1j * (np.pi + turns[t])) if shakes[t] else 0.0
        velocity = velocity + kick + anxiety * (jitter * noise[t] - centripetal * path[t]) * speed
        velocity = velocity / abs(velocity) * speed
        path[t + 1] = path[t] + velocity

    extent = max(np.ptp(path.real), np.ptp(path.imag), 1e-9)
    return path * (length / extent)


def trajectory_kernel(path: np.ndarray) -> np.ndarray:
    """Rasterize a trajectory into a normalized blur kernel (odd square, centred on the path's mean).

    Centring on the mean position keeps the blurred image aligned with the sharp one on average.
    """
    centred = path - path.mean()
    radius = int(np.ceil(np.abs(centred.real).max() + 1)), int(np.ceil(np.abs(centred.imag).max() + 1))
    half = max(radius)
    size = 2 * half + 1
    kernel = np.zeros((size, size), dtype=np.float64)
    x = centred.real + half
    y = centred.imag + half
    x0, y0 = np.floor(x).astype(int), np.floor(y).astype(int)
    fx, fy = x - x0, y - y0
    # Bilinear splatting: each point shares its unit of exposure among the four pixels around it.
    for dx, dy, weight in (
        (0, 0, (1 - fx) * (1 - fy)),
        (1, 0, fx * (1 - fy)),
        (0, 1, (1 - fx) * fy),
        (1, 1, fx * fy),
    ):
        np.add.at(kernel, (y0 + dy, x0 + dx), weight)
    return (kernel / kernel.sum()).astype(np.float32)


def random_kernel(rng: np.random.Generator, min_length: float, max_length: float) -> np.ndarray:
    return trajectory_kernel(shake_trajectory(rng, rng.uniform(min_length, max_length)))


def apply_blur(sharp: np.ndarray, kernel: np.ndarray) -> np.ndarray:
    """Convolve an HWC float image with a 2-D kernel, reflecting at the borders; same size out."""
    half_h, half_w = kernel.shape[0] // 2, kernel.shape[1] // 2
    padded = np.pad(sharp, ((half_h, half_h), (half_w, half_w), (0, 0)), mode="reflect")
    return fftconvolve(padded, kernel[:, :, None], mode="valid", axes=(0, 1))
