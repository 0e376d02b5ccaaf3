"""Motion blur as a camera makes it: the sharp image moved along a path during the exposure, averaged.

GOPRO (Nah, Kim and Lee, CVPR 2017) averages consecutive 240 fps frames in linear light and takes the middle frame
as the sharp image. Here the frames are the sharp photo itself, warped along a camera path: a shake trajectory
(`deblur.data.kernels`, the same random model the kernels use) for the translation, plus a roll about a point and a
zoom that grow steadily through the exposure. Roll and zoom make the blur differ across the image, as it does in
real photos; a kernel convolution cannot. The path is centred on its middle point, so the sharp image is the
middle "frame", as in GOPRO.
"""

from __future__ import annotations

import math

import numpy as np
import tensorflow as tf

from deblur.data.kernels import GAMMA, shake_trajectory

STEP = 0.75  # at most this many pixels between two frames, so that the average looks continuous


def camera_path(
    rng: np.random.Generator, length: float, max_rotation: float, max_zoom: float, size: tuple[int, int]
) -> list[tuple[float, float, complex, complex]]:
    """Frames of one exposure as (angle in radians, scale, shift, centre), relative to the middle frame.

    `length` is the extent of the translation in pixels, `max_rotation` the largest roll over the exposure in
    degrees, `max_zoom` the largest relative change of scale; `size` is (height, width) of the image.
    """
    height, width = size
    shift = shake_trajectory(rng, length)
    roll = math.radians(rng.uniform(-max_rotation, max_rotation))
    zoom = rng.uniform(-max_zoom, max_zoom)
    # The roll is about a point anywhere in the picture (the optical axis of a cropped or off-centre view).
    centre = complex(rng.uniform(0, width), rng.uniform(0, height))
    reach = abs(roll) * max(height, width) + abs(zoom) * max(height, width)
    travelled = np.abs(np.diff(shift)).sum()
    frames = max(8, math.ceil((travelled + reach) / STEP))
    times = np.linspace(0.0, 1.0, frames)
    positions = np.interp(times, np.linspace(0.0, 1.0, len(shift)), shift.real) + 1j * np.interp(
        times, np.linspace(0.0, 1.0, len(shift)), shift.imag
    )
    middle = positions[frames // 2] if frames % 2 else (positions[frames // 2 - 1] + positions[frames // 2]) / 2
    return [
        (roll * (t - 0.5), 1.0 + zoom * (t - 0.5), complex(position - middle), centre)
        for t, position in zip(times, positions, strict=True)
    ]


def motion_blur(sharp: np.ndarray, frames: list[tuple[float, float, complex, complex]], *, linear: bool = True):
    """The average of `sharp` (HWC float32 in [0, 1]) warped to each frame, in linear light when `linear`."""
    light = np.power(sharp, GAMMA, dtype=np.float32) if linear else np.asarray(sharp, dtype=np.float32)
    transforms = np.array([_inverse_affine(*frame) + (0.0, 0.0) for frame in frames], dtype=np.float32)
    average = np.clip(_average_of_warps(light, transforms).numpy(), 0.0, 1.0)
    return np.power(average, 1.0 / GAMMA) if linear else average


@tf.function(
    input_signature=[tf.TensorSpec((None, None, 3), tf.float32), tf.TensorSpec((None, 8), tf.float32)],
    reduce_retracing=True,
)
def _average_of_warps(image: tf.Tensor, transforms: tf.Tensor) -> tf.Tensor:
    # TensorFlow's warp: bilinear, reflecting at the borders, on all cores; PIL's took 3x longer on one.
    chunk = 8  # frames warped at once: 8 copies of the image in memory
    size = tf.shape(image)[:2]
    count = tf.shape(transforms)[0]
    total = tf.zeros_like(image)
    for first in tf.range(0, count, chunk):
        batch = transforms[first : first + chunk]
        copies = tf.broadcast_to(image[None], tf.concat([tf.shape(batch)[:1], tf.shape(image)], axis=0))
        warped = tf.raw_ops.ImageProjectiveTransformV3(
            images=copies,
            transforms=batch,
            output_shape=size,
            fill_value=0.0,
            interpolation="BILINEAR",
            fill_mode="REFLECT",
        )
        total += tf.reduce_sum(warped, axis=0)
    return total / tf.cast(count, tf.float32)


def _inverse_affine(angle: float, scale: float, shift: complex, centre: complex) -> tuple[float, ...]:
    """For each output pixel p, the input pixel R(-angle) (p - centre - shift) / scale + centre, as the six
    numbers (a, b, c, d, e, f) of x_in = a x + b y + c, y_in = d x + e y + f."""
    cos, sin = math.cos(angle) / scale, math.sin(angle) / scale
    x = centre.real + shift.real
    y = centre.imag + shift.imag
    return (
        cos,
        sin,
        centre.real - cos * x - sin * y,
        -sin,
        cos,
        centre.imag + sin * x - cos * y,
    )
