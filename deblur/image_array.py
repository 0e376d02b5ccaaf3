"""What an image array must be where it enters deblur's Python API: HWC RGB float32 in [0, 1] (the kernel path's
functions also take a gray or one-channel photo). A uint8 photo, a 0-255 float one, NaN, a gray array where RGB
is taken had each come back white or NaN, or failed deep inside TensorFlow or SciPy."""

from __future__ import annotations

import os

import numpy as np

from deblur.errors import DeblurError


class ImageArrayError(DeblurError, ValueError):
    """An array given to the API is not an image as deblur takes it (HWC RGB float32 in [0, 1])."""


# How far outside [0, 1] a given image may stray (rounding in the caller's own float arithmetic) before it is taken
# for another scale: a 0-255 image had come back all white, clipped, without a word.
RANGE_SLACK = 0.01


def as_image(
    image: np.ndarray, name: str = "the image", *, batch: bool = False, channels: int | None = 3
) -> np.ndarray:
    """`image` as float32, refused (ImageArrayError, saying how to mend it) unless it is an HWC image of `channels`
    channels (RGB; None: any number), an NHWC batch of them with `batch`, of finite values in [0, 1]."""
    if isinstance(image, (str, os.PathLike)):  # had been "an array of shape ()"
        raise ImageArrayError(
            f"{name}: a path ({image}), where deblur takes the image itself: read it first "
            "(deblur.imageio.read_photo(path).rgb), or give the file to deblur_file"
        )
    array = np.asarray(image)
    rank = 4 if batch else 3
    if array.ndim != rank or (channels is not None and array.shape[-1] != channels):
        if channels is None:
            want = "an HWC array, (height, width, channels)"
        else:
            want = "an NHWC batch of RGB images" if batch else "one HWC RGB image, (height, width, 3)"
        if array.ndim == rank - 1:
            mend = " (gray: repeat it on a last axis of 3)" if channels == 3 else " (gray: give it [..., None])"
        elif array.ndim == rank and array.shape[-1] == 4:
            mend = " (RGBA: give its [..., :3])"
        elif not batch and array.ndim == 4:
            mend = " (a batch: give its images one at a time, or to Deblurrer.many)"
        else:
            mend = ""
        raise ImageArrayError(f"{name}: an array of shape {array.shape}, where deblur takes {want}{mend}")
    return as_pixels(array, name)


def as_pixels(image: np.ndarray, name: str = "the image") -> np.ndarray:
    """`image` as float32, of any shape, refused (ImageArrayError) unless its values are finite and in [0, 1]."""
    array = np.asarray(image)
    if array.dtype.kind != "f":
        mend = f" (from {array.dtype}: divide by {np.iinfo(array.dtype).max})" if array.dtype.kind in "ui" else ""
        raise ImageArrayError(f"{name}: {array.dtype} pixels, where deblur takes float32 in [0, 1]{mend}")
    array = np.asarray(array, dtype=np.float32)
    low, high = (float(array.min()), float(array.max())) if array.size else (0.0, 0.0)
    if not (low >= -RANGE_SLACK and high <= 1 + RANGE_SLACK):  # NaN fails both
        if not (np.isfinite(low) and np.isfinite(high)):
            problem = "holds NaN or infinite values"
        else:
            problem = f"has values from {low:g} to {high:g}"
        scale = " (a 0-255 image: divide it by 255)" if np.isfinite(high) and high > 1.5 else ""
        raise ImageArrayError(f"{name}: {problem}, where deblur takes values in [0, 1]{scale}")
    return array
