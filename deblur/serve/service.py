"""What the server does with one photo, outside HTTP: check it, deblur it as `deblur predict` would, encode it.

No file is written: the photo arrives as bytes and leaves as bytes, through the same reading and writing code as
`deblur predict` (`deblur.imageio`), so EXIF orientation, grayscale, alpha and 16-bit come back the same way.
"""

from __future__ import annotations

import io
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from deblur.errors import SettingError
from deblur.imageio import NotAnImageError, check_format_holds, decode_photo, encode_photo, lost_in, peek_photo
from deblur.inference import Deblurrer
from deblur.min_side import check_min_side
from deblur.predict import is_small
from deblur.serve.limits import Limits, given_limits
from deblur.serve.work import WorkQueue
from deblur.strength import DEFAULT_STRENGTH
from deblur.video.clips import clip_format

MEDIA_TYPES = {"png": "image/png", "jpg": "image/jpeg", "webp": "image/webp"}
# The warm-up's photo, and the fewest pixels a photo must have to update the measured speed: a tiny photo's time is
# all overhead (a 5x5 photo once sent the rate from 2 to over 700 seconds per megapixel, and the page's estimates
# with it).
RATE_SHAPE = (192, 256)


@dataclass(frozen=True)
class Deblurred:
    body: bytes
    media_type: str
    seconds: float  # the deblur itself, decoding and encoding included
    width: int
    height: int
    way: str  # which way the photo went (`deblur.ways`)
    lost: tuple[str, ...] = ()  # what the format could not hold of the photo (`deblur.imageio.lost_in`)
    small: bool = False  # under SMALL_PHOTO, through a network: better deblurred within the photo it was cut from


class DeblurService:
    """The loaded model, the line of requests for it, and what `/v1/model` says about them."""

    def __init__(self, deblurrer: Deblurrer, model_info: dict[str, Any], limits: Limits | None = None) -> None:
        if not isinstance(deblurrer, Deblurrer):  # a model's path had ended on AttributeError in the first request
            raise SettingError(
                f"deblurrer must be a Deblurrer, not {type(deblurrer).__name__}: deblur.load_deblurrer(model) opens "
                "one",
                settings=("deblurrer",),
            )
        self.deblurrer = deblurrer
        self.model_info = model_info
        self.limits = limits = given_limits(limits)
        self.queue = WorkQueue(limits.waiting)
        # of the last deblur of at least RATE_SHAPE's pixels, per copy: the page's estimates and Retry-After's
        self.seconds_per_megapixel: float | None = None

    def check(self, data: bytes, name: str) -> tuple[int, int]:
        """(width, height) from the header; raises NotAnImageError, ImageTooLargeError or another ImageReadError
        (ImageTooSmallError among them) before any decoding; a video clip is said to be one."""
        try:
            width, height = peek_photo(io.BytesIO(data), name, max_pixels=self.limits.max_pixels)
        except NotAnImageError as err:
            kind = clip_format(io.BytesIO(data))
            if kind is None:
                raise
            raise NotAnImageError(f"{name}: a video clip ({kind}), not a photo: send clips to POST /v1/jobs") from err
        check_min_side(width, height, name)
        return width, height

    def deblur(
        self,
        data: bytes,
        name: str,
        *,
        ensemble: int = 1,
        strength: float = DEFAULT_STRENGTH,
        fmt: str = "png",
        method: str | None = None,
    ) -> Deblurred:
        """Decode, deblur and encode one photo (on the worker thread; the CPU-heavy part of a request); `method`
        None is the server's."""
        started = time.perf_counter()
        photo = decode_photo(io.BytesIO(data), name, max_pixels=self.limits.max_pixels)
        check_format_holds(photo.rgb.shape[1], photo.rgb.shape[0], fmt, name)
        restored = self.deblurrer(photo.rgb, ensemble=ensemble, strength=strength, method=method)
        body = encode_photo(restored, photo, fmt)
        height, width = photo.rgb.shape[:2]
        seconds = time.perf_counter() - started
        if width * height >= RATE_SHAPE[0] * RATE_SHAPE[1]:
            self.seconds_per_megapixel = seconds / (width * height / 1e6) / ensemble
        way = self.deblurrer.way(method)
        lost, small = tuple(lost_in(fmt, photo)), is_small(height, width, way, strength)
        return Deblurred(body, MEDIA_TYPES[fmt], seconds, width, height, way.name, lost, small)

    def expected_seconds(self, width: int, height: int, ensemble: int = 1) -> float | None:
        """How long a photo of this size is expected to take, from the measured speed (None before any)."""
        if self.seconds_per_megapixel is None:
            return None
        return self.seconds_per_megapixel * width * height / 1e6 * ensemble

    def warm_up(self) -> None:
        """Trace the model's graph before the first request, and time it once for the page's estimates."""
        # Keras traces its predict function again for a second input shape, then for any shape: two sizes.
        for shape in ((64, 64), RATE_SHAPE):
            self.deblurrer(np.full((*shape, 3), 0.5, np.float32))
        started = time.perf_counter()
        self.deblurrer(np.full((*RATE_SHAPE, 3), 0.5, np.float32))
        self.seconds_per_megapixel = (time.perf_counter() - started) / (RATE_SHAPE[0] * RATE_SHAPE[1] / 1e6)
