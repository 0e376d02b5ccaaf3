"""The smallest photo the generator takes, and the one check of it for every way a photo comes in (a folder, Ray's
workers, the server): free of Keras, so that each can refuse a photo before any model is loaded."""

from __future__ import annotations

from deblur.imageio import ImageReadError

# The smallest height and width the generator takes: padded to 8, a quarter of that leaves 2 pixels, the least
# that a 1-pixel reflection pad in the residual blocks can mirror.
MIN_SIDE = 5


class ImageTooSmallError(ImageReadError):
    """The image is under the generator's smallest side (`MIN_SIDE`)."""


def check_min_side(width: int, height: int, name: str) -> None:
    """Raises ImageTooSmallError, naming `name`, where a `width` x `height` image is too small for the model."""
    if min(width, height) < MIN_SIDE:
        raise ImageTooSmallError(f"{name}: {width}x{height} is too small (at least {MIN_SIDE} px a side)")
