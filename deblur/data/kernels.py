"""Synthetic camera-shake blur: random motion trajectories turned into blur kernels.

The trajectory model follows Boracchi and Foi, "Modeling the performance of image restoration from motion blur"
(IEEE TIP 2012), as DeblurGAN used it: a particle moving at constant speed whose velocity is nudged by Gaussian
jitter, pulled back towards its start (a hand steadying the camera) and, now and then, reversed by a sudden
shake. The kernel is the time the trajectory spends over each pixel, so it sums to one.
"""

from __future__ import annotations

import numpy as np
from scipy.ndimage import gaussian_filter, zoom
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


def trajectory_kernel(path: np.ndarray, anchor: complex | None = None) -> np.ndarray:
    """Rasterize a trajectory into a normalized blur kernel (odd square), centred on `anchor`, the position at
    which the sharp image was taken; by default the path's mean, which keeps the two aligned on average.
    """
    centred = path - (path.mean() if anchor is None else anchor)
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


def smooth_trajectory(rng: np.random.Generator, length: float, points: int = 1000) -> np.ndarray:
    """A nearly straight path at nearly constant speed, scaled so its larger extent is `length` pixels: the
    camera or subject motion of a short exposure, as in GOPRO's real pairs (their blur kernels, fitted, are lines
    and gentle arcs, where a shake trajectory wanders)."""
    t = np.linspace(-0.5, 0.5, points)
    direction = np.exp(1j * rng.uniform(0, 2 * np.pi))
    bend = rng.uniform(-0.5, 0.5)  # sideways acceleration: an arc
    speed_change = rng.uniform(-0.5, 0.5)  # along the path: speeding up or slowing down
    path = direction * (t + (speed_change + 1j * bend) * t**2)
    extent = max(np.ptp(path.real), np.ptp(path.imag), 1e-9)
    return path * (length / extent)


def random_kernel(
    rng: np.random.Generator, min_length: float, max_length: float, frames: int = 0, path: str = "shake"
) -> np.ndarray:
    """A kernel for a random camera path (`shake`: a wandering shake trajectory; `smooth`: a line or gentle arc)
    of `min_length` to `max_length` pixels, the sharp image at the path's mean when `frames` is 0, else at the
    time GOPRO's recipe of `frames` video frames takes it (see `anchor_time`)."""
    length = rng.uniform(min_length, max_length)
    trajectory = smooth_trajectory(rng, length) if path == "smooth" else shake_trajectory(rng, length)
    return frames_kernel(trajectory, frames) if frames else trajectory_kernel(trajectory)


def frames_kernel(trajectory: np.ndarray, frames: int) -> np.ndarray:
    """The kernel of `trajectory` (evenly timed points) with the sharp image where GOPRO's recipe of `frames`
    video frames takes it."""
    return trajectory_kernel(trajectory, anchor=trajectory[round(anchor_time(frames) * (len(trajectory) - 1))])


def anchor_time(frames: int) -> float:
    """When, as a share of the exposure, GOPRO's sharp image is taken: the middle frame (index frames // 2) of
    `frames` averaged video frames. With an even count it falls half a frame past the middle, on the side of the
    motion's direction, which the blur does not show; GOPRO's real pairs measure this offset (1-2 px), so a model
    trained on it learns the mapping those pairs hold."""
    if frames < 2:
        raise ValueError(f"frames must be at least 2: {frames}")
    return (frames // 2) / (frames - 1)


def blur_mask(rng: np.random.Generator, size: tuple[int, int]) -> np.ndarray:
    """A smooth random (height, width) map in [0, 1]: blobs of 30 to 130 px (sigma) with soft or crisp edges,
    covering a random share of the picture; where it is 1 the strong blur applies. Near objects, moving
    subjects and a rolling camera blur some regions far more than others."""
    height, width = size
    cell = 8  # the field is drawn coarse and scaled up: its blobs are far larger than a pixel
    coarse = gaussian_filter(rng.standard_normal((height // cell + 2, width // cell + 2)), rng.uniform(4, 16))
    coarse = (coarse - coarse.mean()) / max(coarse.std(), 1e-9)
    field = zoom(coarse, cell, order=1)[:height, :width]
    return 1.0 / (1.0 + np.exp(-rng.uniform(1, 6) * (field - rng.uniform(-1, 1))))


def apply_blur(sharp: np.ndarray, kernel: np.ndarray) -> np.ndarray:
    """Convolve an HWC float image with a 2-D kernel, reflecting at the borders; same size out, the kernel's
    centre pixel (row and column `size // 2`) where the sharp pixel was, as `deblur.shake.fourier.otf` holds it."""
    # Padded by size // 2 on both sides, an even kernel had made the image one pixel taller or wider.
    (before_h, after_h), (before_w, after_w) = ((size - 1 - size // 2, size // 2) for size in kernel.shape)
    padded = np.pad(sharp, ((before_h, after_h), (before_w, after_w), (0, 0)), mode="reflect")
    return fftconvolve(padded, kernel[:, :, None], mode="valid", axes=(0, 1))
