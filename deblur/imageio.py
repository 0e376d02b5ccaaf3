"""Reading and writing photos as people have them, for inference.

In: any format Pillow reads (JPEG, PNG, BMP, WebP, TIFF; GIF: its first frame), EXIF orientation applied,
grayscale / RGBA / 16-bit handled; the model sees HWC RGB float32 in [0, 1]. Out: the same kind of image as came
in: grayscale stays grayscale, alpha is kept unchanged, 16-bit grayscale PNG stays 16-bit (other formats are 8-bit).
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Literal, get_args

import numpy as np
from PIL import Image, ImageOps, UnidentifiedImageError

from deblur.errors import DeblurError
from deblur.files import atomic_path

DEFAULT_MAX_PIXELS = 200_000_000  # a decompression-bomb guard: 200 MP is far above any camera's photo
READ_SUFFIXES = {".png", ".jpg", ".jpeg", ".bmp", ".webp", ".tif", ".tiff", ".gif"}  # GIF: its first frame
WriteFormat = Literal["png", "jpg", "webp", "bmp", "tiff"]
WRITE_FORMATS = dict(zip(get_args(WriteFormat), ("PNG", "JPEG", "WEBP", "BMP", "TIFF"), strict=True))  # Pillow's names


class ImageReadError(DeblurError, ValueError):
    """An input image cannot be used; the message names the file."""


class NotAnImageError(ImageReadError):
    """The file is not an image in a format Pillow reads."""


class ImageTooLargeError(ImageReadError):
    """The image has more pixels than allowed: refused from its header, before decoding (a decompression bomb)."""


@dataclass
class Photo:
    rgb: np.ndarray  # HWC float32 in [0, 1]
    alpha: np.ndarray | None  # HW float32 in [0, 1], put back unchanged on output
    grayscale: bool
    sixteen_bit: bool


def read_photo(path: str | Path, *, max_pixels: int = DEFAULT_MAX_PIXELS) -> Photo:
    return decode_photo(Path(path), str(path), max_pixels=max_pixels)


def decode_photo(source: Path | BinaryIO, name: str, *, max_pixels: int = DEFAULT_MAX_PIXELS) -> Photo:
    """A photo from a file or a binary stream; `name` is what errors call it."""
    try:
        with _opened(source, name, max_pixels) as image:
            image = ImageOps.exif_transpose(image)
            image.load()
    except ImageReadError:
        raise
    except (OSError, SyntaxError, ValueError) as err:
        raise ImageReadError(f"{name}: not a readable image ({err})") from None
    return _to_photo(image)


def peek_photo(source: Path | BinaryIO, name: str, *, max_pixels: int = DEFAULT_MAX_PIXELS) -> tuple[int, int]:
    """(width, height) from the header alone, with the checks `decode_photo` makes before decoding."""
    with _opened(source, name, max_pixels) as image:
        return image.size


@contextlib.contextmanager
def _opened(source: Path | BinaryIO, name: str, max_pixels: int) -> Iterator[Image.Image]:
    # Pillow's own guard is replaced by this one, which names the file and the setting. Opening reads only the
    # header, so an oversized image is refused before any of it is decoded.
    Image.MAX_IMAGE_PIXELS = None
    try:
        image = Image.open(source)
    except UnidentifiedImageError:
        raise NotAnImageError(f"{name}: not a readable image (not in a format Pillow reads)") from None
    except (OSError, SyntaxError, ValueError) as err:
        raise ImageReadError(f"{name}: not a readable image ({err})") from None
    with image:
        if image.width * image.height > max_pixels:
            raise ImageTooLargeError(
                f"{name}: {image.width}x{image.height} = {image.width * image.height:,} pixels, over the "
                f"limit of {max_pixels:,} (max_pixels) that guards against decompression bombs"
            )
        yield image


def _to_photo(image: Image.Image) -> Photo:
    if image.mode in ("I;16", "I;16B", "I;16L", "I"):
        values = np.asarray(image, dtype=np.float32) / 65535.0
        gray = np.clip(values, 0.0, 1.0)
        return Photo(np.repeat(gray[:, :, None], 3, axis=-1), None, True, True)
    alpha = None
    if image.mode in ("RGBA", "LA", "PA") or (image.mode == "P" and "transparency" in image.info):
        rgba = image.convert("RGBA")
        alpha = np.asarray(rgba, dtype=np.float32)[:, :, 3] / 255.0
    grayscale = image.mode in ("L", "LA", "1")
    rgb = np.asarray(image.convert("RGB"), dtype=np.float32) / 255.0
    return Photo(rgb, alpha, grayscale, False)


def write_photo(path: str | Path, rgb: np.ndarray, like: Photo, fmt: str = "png") -> None:
    """Write `rgb` (HWC float in [0, 1]) as `like` came in, atomically: the file appears whole or not at all."""
    image = _to_image(rgb, like, fmt)
    with atomic_path(path, suffix=Path(path).suffix) as tmp:
        image.save(tmp, format=WRITE_FORMATS[fmt], **_save_options(fmt))


def encode_photo(rgb: np.ndarray, like: Photo, fmt: str = "png") -> bytes:
    """The file `write_photo` would write, as bytes."""
    buffer = io.BytesIO()
    _to_image(rgb, like, fmt).save(buffer, format=WRITE_FORMATS[fmt], **_save_options(fmt))
    return buffer.getvalue()


def _to_image(rgb: np.ndarray, like: Photo, fmt: str) -> Image.Image:
    """Grayscale stays grayscale, 16-bit grayscale PNG stays 16-bit, alpha is put back where the format has it."""
    if like.grayscale:
        gray = np.clip(rgb.mean(axis=-1), 0.0, 1.0)
        if like.sixteen_bit and fmt == "png":
            image = Image.fromarray(np.round(gray * 65535).astype(np.uint16))
        else:
            image = Image.fromarray(np.round(gray * 255).astype(np.uint8))
    else:
        image = Image.fromarray(to_uint8(rgb))
    if like.alpha is not None and not like.sixteen_bit and fmt in ("png", "webp", "tiff"):
        image = image.convert("LA" if like.grayscale else "RGBA")
        image.putalpha(Image.fromarray(np.round(like.alpha * 255).astype(np.uint8)))
    return image


def _save_options(fmt: str) -> dict:
    return {"quality": 95} if fmt in ("jpg", "webp") else {}


def to_uint8(rgb: np.ndarray, rows: int = 256) -> np.ndarray:
    """[0, 1] floats to 0-255, clipped and rounded half to even, as every 8-bit file deblur writes."""
    # In bands of rows: a float copy of a whole 24-megapixel image would be another 288 MB.
    out = np.empty(rgb.shape, dtype=np.uint8)
    for top in range(0, rgb.shape[0], rows):
        band = np.clip(rgb[top : top + rows], 0.0, 1.0) * 255.0
        out[top : top + rows] = np.round(band)
    return out


def is_photo(path: Path) -> bool:
    """True when Pillow recognises the file's header as an image it reads."""
    try:
        with Image.open(path):
            return True
    except (OSError, SyntaxError, ValueError, UnidentifiedImageError):
        return False


def find_images(inputs: list[Path], *, suffixes: set[str] = READ_SUFFIXES) -> list[tuple[Path, Path]]:
    """(file, name relative to what was given) for files given and, in folders, recursively, files with one of
    `suffixes` (photos by default)."""
    found = []
    for item in inputs:
        if item.is_dir():
            for path in sorted(item.rglob("*")):
                if path.is_file() and path.suffix.lower() in suffixes and not path.name.startswith("."):
                    found.append((path, path.relative_to(item)))
        else:
            found.append((item, Path(item.name)))
    return found
