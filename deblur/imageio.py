"""Reading and writing photos as people have them, for inference.

In: any format Pillow reads (JPEG, PNG, BMP, WebP, TIFF, GIF, and HEIC/HEIF and AVIF as phones save them, through
pillow-heif and Pillow's AVIF plugin), floating-point TIFFs and 16-bit gray and alpha TIFFs; EXIF orientation
applied, grayscale / RGBA / 16-bit (and 32-bit grayscale on its own scale, floats with 1.0 as white) handled; an
animation, a TIFF of several pages and a camera's RAW file are refused by name, as is a JPEG far shorter than its
pixels. The model sees HWC RGB float32 in [0, 1]. Out: the same kind of image as came in: grayscale stays
grayscale, alpha is kept unchanged (flattened onto white where the format has none), 16 bits stay 16 bits in PNG
and TIFF (`deblur.photo16` for colour), and the photo's EXIF (its orientation reset, the pixels being turned) and
ICC profile (where it describes the pixels written) go with it unless stripped.
"""

from __future__ import annotations

import contextlib
import glob
import io
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path, PurePath
from typing import BinaryIO, Literal, TypeVar, get_args

import numpy as np
from PIL import Image, ImageOps, UnidentifiedImageError

from deblur.errors import DeblurError, SettingError, check_choice, is_whole_number
from deblur.files import as_path, atomic_path, atomic_write_text
from deblur.photo16 import (
    GRAY,
    RGB,
    TiffPage,
    encode_png16,
    is_deep_colour,
    is_deep_gray,
    read_deep_colour,
    read_tiff_page,
    unopened_tiff,
    write_tiff16,
)

# A decompression-bomb guard for files on the user's own disk: 200 MP is far above any camera's photo. The server's
# own, lower limit (`deblur.serve.limits`) bounds what strangers can make it hold in memory.
DEFAULT_MAX_PIXELS = 200_000_000
# .hif: the HEIF photos Canon, Fujifilm and Sony cameras save
HEIF_SUFFIXES = {".heic", ".heif", ".hif"}
# Cameras' RAW files: sensor data to develop, not photos. Many are TIFFs whose first image is a small preview,
# which Pillow reads: deblurred, it came back as a thumbnail.
RAW_SUFFIXES = {".dng", ".cr2", ".cr3", ".crw", ".nef", ".nrw", ".arw", ".srf", ".sr2", ".orf", ".rw2", ".raf"}
RAW_SUFFIXES |= {".pef", ".srw", ".rwl", ".3fr", ".iiq", ".x3f", ".erf", ".kdc", ".dcr", ".mrw", ".mos"}
RAW_ADVICE = "deblur reads developed photos: export a 16-bit TIFF, PNG or JPEG from your RAW developer and deblur that"
# .jfif and .jpe: JPEGs under the names Windows browsers saved them by; a folder search had passed them by
JPEG_SUFFIXES = {".jpg", ".jpeg", ".jfif", ".jpe"}
READ_SUFFIXES = {".png", *JPEG_SUFFIXES, ".bmp", ".webp", ".tif", ".tiff", ".gif", *HEIF_SUFFIXES, ".avif"}
WriteFormat = Literal["png", "jpg", "webp", "bmp", "tiff"]
WRITE_FORMATS = dict(zip(get_args(WriteFormat), ("PNG", "JPEG", "WEBP", "BMP", "TIFF"), strict=True))  # Pillow's names
# The format a file's suffix names, of those written
SUFFIX_FORMATS = {".png": "png", **dict.fromkeys(JPEG_SUFFIXES, "jpg"), ".webp": "webp", ".bmp": "bmp"}
SUFFIX_FORMATS |= {".tif": "tiff", ".tiff": "tiff"}
DEFAULT_QUALITY = 95  # JPEG and WebP: visually lossless for a photo, a third of the size of 100
LOSSY_FORMATS = ("jpg", "webp")  # the formats written with a quality
ALPHA_FORMATS = ("png", "webp", "tiff")
DEEP_FORMATS = ("png", "tiff")  # 16 bits a channel; the others hold 8
METADATA_FORMATS = ("png", "jpg", "webp", "tiff")  # EXIF and ICC profiles; BMP holds neither
ORIENTATION = 0x0112  # the EXIF tag
# The longest side each output format holds (WebP's sizes are 14 bits; libjpeg takes 65500): a panorama over it had
# been deblurred in full, then failed to encode on a traceback that stopped every input after it.
MAX_SIDES = {"webp": 16383, "jpg": 65500}


class ImageReadError(DeblurError, ValueError):
    """An input image cannot be used; the message names the file."""


class NotAnImageError(ImageReadError):
    """The file is not an image in a format Pillow reads."""


class ImageTooLargeError(ImageReadError):
    """The image has more pixels than allowed: refused from its header, before decoding (a decompression bomb)."""


class TruncatedImageError(ImageReadError):
    """The file ends long before its pixels do: its header promises more than its data can hold."""


class FormatLimitError(ImageReadError):
    """The image is larger than the output format holds (`MAX_SIDES`)."""


class AnimationError(ImageReadError):
    """The image is an animation (a GIF, APNG or WebP of several frames) or a TIFF of several pages: deblur takes
    one still a file, and video clips."""


@dataclass
class Photo:
    rgb: np.ndarray  # HWC float32 in [0, 1]
    alpha: np.ndarray | None  # HW float32 in [0, 1], put back unchanged on output
    grayscale: bool
    sixteen_bit: bool
    exif: bytes | None = None  # the photo's EXIF, its orientation reset to upright (the pixels are turned)
    icc: bytes | None = None  # its ICC colour profile


@dataclass(frozen=True)
class WriteOptions:
    """How a deblurred photo is written: its format, JPEG/WebP quality, and whether its metadata goes with it."""

    fmt: str = "png"
    quality: int | None = None  # JPEG and WebP; None: DEFAULT_QUALITY
    strip_metadata: bool = False  # leave out EXIF (camera, date, place) and the ICC profile

    def __post_init__(self) -> None:
        check_choice("format", self.fmt, WRITE_FORMATS)
        if self.quality is None:
            return
        if not (is_whole_number(self.quality) and 1 <= self.quality <= 100):  # "80" had ended on a TypeError
            raise SettingError(
                f"quality must be a whole number from 1 to 100; got {self.quality!r}", settings=("quality",)
            )
        if self.fmt not in LOSSY_FORMATS:  # `--quality 80` without `--format jpg` had written PNGs without a word
            raise SettingError(
                f"quality is for {' and '.join(LOSSY_FORMATS)}, and {self.fmt} is written without loss: give the "
                "format too",
                settings=("quality", "format"),
            )


def check_max_pixels(max_pixels: object) -> None:
    """Refuse a pixel limit that is no whole number of at least 1: NaN had let any size through, -1 refused every
    photo and clip as too large, a string ended on a TypeError."""
    if not (is_whole_number(max_pixels) and max_pixels >= 1):
        raise SettingError(
            f"max_pixels must be a whole number of pixels, at least 1; got {max_pixels!r}", settings=("max_pixels",)
        )


def format_for(path: str | Path, fmt: str | None = None) -> str:
    """The format a photo is written to `path` in: `fmt` where given, else the one the path's suffix names (a
    `.jpg`: jpg), else png. A suffix naming another format than `fmt`, or one deblur reads and does not write
    (`.heic`), is refused: a file whose name says another format than it holds fails in programs that trust it."""
    if fmt is not None:
        WriteOptions(fmt)  # one deblur writes, or the error naming them
    suffix = Path(path).suffix.lower()
    named = SUFFIX_FORMATS.get(suffix)
    if fmt is None and named is None and suffix in READ_SUFFIXES:
        raise SettingError(
            f"{path}: deblur reads {suffix} photos and writes {', '.join(WRITE_FORMATS)}: give the file one of "
            "those suffixes",
            settings=("format",),
        )
    if fmt is not None and named not in (None, fmt):
        raise SettingError(
            f"{path}: its name says {named}, and the format asked for is {fmt}: give the file a .{fmt} suffix, or "
            f"leave the format out to write {named}",
            settings=("format",),
        )
    return fmt or named or "png"


def read_photo(path: str | Path, *, max_pixels: int = DEFAULT_MAX_PIXELS) -> Photo:
    path = as_path(path, "the photo", "path")  # 5 had been Path's TypeError
    return decode_photo(path, str(path), max_pixels=max_pixels)


def decode_photo(source: Path | BinaryIO, name: str, *, max_pixels: int = DEFAULT_MAX_PIXELS) -> Photo:
    """A photo from a file or a binary stream; `name` is what errors call it."""
    check_max_pixels(max_pixels)  # NaN had let any size through, -1 refused every photo as too large
    try:
        head = _head(source)  # once, for the float-TIFF and 16-bit colour checks and the reader
        if tiff := _unopened_tiff(source, head, name, max_pixels):
            return _tiff_photo(source, tiff, name)
        with _opened(source, name, max_pixels) as image:
            deep = head is not None and is_deep_colour(_rewound(source), head)
            turned = ImageOps.exif_transpose(image)
            turned.load()
            exif = turned.getexif()
            exif.pop(ORIENTATION, None)
            metadata = {"exif": exif.tobytes() if len(exif) else None, "icc": image.info.get("icc_profile")}
            if deep:
                pixels = _turn_like(read_deep_colour(_rewound(source), head), image.getexif().get(ORIENTATION, 1))
                alpha = pixels[:, :, 3].astype(np.float32) / 65535.0 if pixels.shape[2] == 4 else None
                rgb = pixels[:, :, :3].astype(np.float32) / 65535.0
                photo = Photo(rgb, alpha, is_deep_gray(head), True, **metadata)
            else:
                photo = _to_photo(turned, name, **metadata)
            photo.icc = _fitting_profile(photo.icc, photo.grayscale)
            return photo
    except ImageReadError:
        raise
    except (OSError, SyntaxError, ValueError, StopIteration) as err:
        raise ImageReadError(f"{name}: not a readable image ({err})") from None


def _fitting_profile(icc: bytes | None, grayscale: bool) -> bytes | None:
    """The photo's ICC profile where it describes the pixels deblur writes (RGB, or gray for a grayscale photo).
    A CMYK photo's profile does not once the pixels are RGB: written with them, it made an invalid file, which
    colour-managed programs refuse or misread. (Its bytes 16 to 20 name the colour space it describes.)"""
    if icc is None:
        return None
    return icc if icc[16:20] == (b"GRAY" if grayscale else b"RGB ") else None


def peek_photo(source: Path | BinaryIO, name: str, *, max_pixels: int = DEFAULT_MAX_PIXELS) -> tuple[int, int]:
    """(width, height) from the header alone, with the checks `decode_photo` makes before decoding."""
    check_max_pixels(max_pixels)
    if tiff := _unopened_tiff(source, _head(source), name, max_pixels):
        return tiff.width, tiff.height
    with _opened(source, name, max_pixels) as image:
        return image.size


@cache
def _register_plugins() -> bool:
    """HEIC and HEIF, the photos iPhones and many Android phones save (pillow-heif; Pillow reads AVIF itself): True
    when they can be read. Without pillow-heif (a machine given only some of deblur's packages, as a GPU machine
    with no package index) every other format still reads."""
    try:
        from pillow_heif import register_heif_opener
    except ImportError:
        return False
    register_heif_opener()
    return True


def _is_empty(source: Path | BinaryIO) -> bool:
    if isinstance(source, (str, Path)):
        return Path(source).stat().st_size == 0
    return source.seek(0, io.SEEK_END) == 0


@contextlib.contextmanager
def _opened(source: Path | BinaryIO, name: str, max_pixels: int) -> Iterator[Image.Image]:
    # Pillow's own guard is replaced by this one, which names the file and the setting. Opening reads only the
    # header, so an oversized image is refused before any of it is decoded.
    suffix = Path(name).suffix.lower()
    if suffix in RAW_SUFFIXES:
        raise NotAnImageError(f"{name}: a camera RAW file ({suffix}); {RAW_ADVICE}")
    heif = _register_plugins()
    Image.MAX_IMAGE_PIXELS = None
    try:
        image = Image.open(source)
    except UnidentifiedImageError:
        if _is_empty(source):  # a download or a copy that never happened, which "a format" would not tell
            raise NotAnImageError(f"{name}: an empty file (0 bytes), not an image") from None
        if not heif and Path(name).suffix.lower() in HEIF_SUFFIXES:
            raise NotAnImageError(f"{name}: HEIC and HEIF photos need pillow-heif: pip install pillow-heif") from None
        raise NotAnImageError(f"{name}: not a readable image (not in a format Pillow reads)") from None
    except (OSError, SyntaxError, ValueError) as err:
        raise ImageReadError(f"{name}: not a readable image ({err})") from None
    with image:
        _check_pixels(image.width, image.height, name, max_pixels)
        _check_jpeg_length(source, image, name)
        if getattr(image, "n_frames", 1) > 1 and image.format == "TIFF":
            _refuse_pages(image.n_frames, name)
        if getattr(image, "is_animated", False) and image.format in ("GIF", "PNG", "WEBP"):
            raise AnimationError(
                f"{name}: an animation of {image.n_frames} frames; deblur takes still photos and video clips: make "
                "it a clip first (for example ffmpeg -i animation.gif clip.mp4) and deblur that"
            )
        yield image


def _check_pixels(width: int, height: int, name: str, max_pixels: int) -> None:
    if width * height > max_pixels:
        raise ImageTooLargeError(
            f"{name}: {width}x{height} = {width * height:,} pixels, over the limit of {max_pixels:,} (max_pixels) "
            "that guards against decompression bombs"
        )


def _refuse_pages(pages: int, name: str) -> None:
    raise AnimationError(
        f"{name}: a TIFF of {pages} pages; deblur takes one photo a file, so that none is left out unseen: split it "
        "first (for example tiffsplit, or magick in.tif page-%d.png) and deblur the pages"
    )


def _unopened_tiff(source: Path | BinaryIO, head: bytes | None, name: str, max_pixels: int) -> TiffPage | None:
    """A TIFF that Pillow cannot open (floating-point, or 16-bit gray with alpha), checked as `_opened` checks what
    Pillow opens; None for any other file."""
    # `_opened` refuses a RAW file by name (many are TIFFs) and says why a file cannot be read, as for any photo
    if head is None or Path(name).suffix.lower() in RAW_SUFFIXES:
        return None
    tiff = unopened_tiff(_rewound(source), head)
    _rewound(source)
    if tiff is None:
        return None
    _check_pixels(tiff.width, tiff.height, name, max_pixels)
    if tiff.pages > 1:
        _refuse_pages(tiff.pages, name)
    if (tiff.photometric, tiff.channels) not in {(GRAY, 1), (GRAY, 2), (RGB, 3), (RGB, 4)}:
        raise ImageReadError(
            f"{name}: a floating-point TIFF of {tiff.channels} channel(s) in photometric {tiff.photometric}; "
            "deblur reads float TIFFs in gray or RGB, with or without alpha: save it as one of those"
        )
    return tiff


def _tiff_photo(source: Path | BinaryIO, tiff: TiffPage, name: str) -> Photo:
    """A TIFF read here as a photo: in floats 1.0 is white, as in RAW developers' float exports; written out as 16
    bits."""
    pixels, orientation, icc = read_tiff_page(_rewound(source))
    grayscale = tiff.channels <= 2
    kind = f"{tiff.bits}-bit {'float' if tiff.floats else 'integer'} {'grayscale' if grayscale else 'colour'}"
    values = _on_scale(_turn_like(pixels, orientation), tiff.white, kind, name)
    rgb = np.repeat(values[:, :, :1], 3, axis=-1) if grayscale else values[:, :, :3]
    alpha = values[:, :, -1] if tiff.channels in (2, 4) else None
    return Photo(np.ascontiguousarray(rgb), alpha, grayscale, True, icc=_fitting_profile(icc, grayscale))


# Start-of-frame markers of arithmetic-coded JPEGs, which can hold a flat block in a fraction of a bit.
ARITHMETIC_FRAMES = {0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF}


def _check_jpeg_length(source: Path | BinaryIO, image: Image.Image, name: str) -> None:
    """Refuse a JPEG too short for the pixels its header declares, from its length alone, before decoding.

    libjpeg fills what a cut file lacks with grey and only warns, so a 600-byte file that declares 7000x7000 would
    be deblurred at full size. In a Huffman-coded JPEG (all but a rare few) every 8x8 block of the full-resolution
    component costs at least one bit (its DC code), so the file is at least a bit a block long."""
    if image.format not in ("JPEG", "MPO"):
        return
    with _bytes_of(source) as file:
        head = file.read(2**18)
        length = file.seek(0, 2)
    if _jpeg_frame(head) in ARITHMETIC_FRAMES:
        return
    blocks = -(-image.width // 8) * -(-image.height // 8)
    if length * 8 < blocks:
        raise TruncatedImageError(
            f"{name}: truncated: a {image.width}x{image.height} JPEG needs at least {blocks // 8:,} bytes for its "
            f"pixels, and the file has {length:,}"
        )


@contextlib.contextmanager
def _bytes_of(source: Path | BinaryIO) -> Iterator[BinaryIO]:
    """The source from its first byte: a file opened for it, or the stream rewound (left where it was after)."""
    if isinstance(source, Path):
        with source.open("rb") as file:
            yield file
        return
    where = source.tell()
    source.seek(0)
    try:
        yield source
    finally:
        source.seek(where)


def _jpeg_frame(head: bytes) -> int | None:
    """The start-of-frame marker's second byte (0xC0 baseline, 0xC2 progressive, ...), walking the segments of a
    JPEG's first bytes; None if it is not among them."""
    at = 2  # after SOI
    while at + 4 <= len(head) and head[at] == 0xFF:
        marker = head[at + 1]
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):  # not DHT, JPG, DAC
            return marker
        if marker == 0xDA:  # the scan starts: no frame before it
            return None
        at += 2 + int.from_bytes(head[at + 2 : at + 4], "big")
    return None


def _rewound(source: Path | BinaryIO) -> Path | BinaryIO:
    if not isinstance(source, Path):
        source.seek(0)
    return source


def _head(source: Path | BinaryIO) -> bytes | None:
    """A file's or stream's first 32 bytes, which say its format; None where it cannot be read (`_opened` says why)."""
    try:
        with _bytes_of(source) as file:
            return file.read(32)
    except OSError:
        return None


def _turn_like(pixels: np.ndarray, orientation: int) -> np.ndarray:
    """The pixels turned upright as EXIF's orientation (1 to 8) says, as `ImageOps.exif_transpose` turns images."""
    flips = {2: (False, False, True), 3: (False, True, True), 4: (False, True, False)}
    flips |= {5: (True, False, False), 6: (True, False, True), 7: (True, True, True), 8: (True, True, False)}
    transpose, rows, columns = flips.get(orientation, (False, False, False))
    if transpose:
        pixels = pixels.transpose(1, 0, 2)
    return pixels[:: -1 if rows else 1, :: -1 if columns else 1]


# Grayscale kept in more than 8 bits, and what white is in each: 16-bit integers (which Pillow may hand over as 32-bit
# "I"), and floats, whose convention is 0 to 1.
DEEP_GRAY_WHITE = {"I;16": 65535.0, "I;16B": 65535.0, "I;16L": 65535.0, "I": 65535.0, "F": 1.0}


def _to_photo(image: Image.Image, name: str, **metadata: bytes | None) -> Photo:
    if image.mode in DEEP_GRAY_WHITE:
        kind = f"32-bit {'float' if image.mode == 'F' else 'integer'} grayscale"
        gray = _on_scale(np.asarray(image, dtype=np.float32), DEEP_GRAY_WHITE[image.mode], kind, name)
        return Photo(np.repeat(gray[:, :, None], 3, axis=-1), None, True, True, **metadata)
    alpha = None
    if image.mode in ("RGBA", "LA", "PA") or (image.mode == "P" and "transparency" in image.info):
        rgba = image.convert("RGBA")
        alpha = np.asarray(rgba, dtype=np.float32)[:, :, 3] / 255.0
    grayscale = image.mode in ("L", "LA", "1")
    rgb = np.asarray(image.convert("RGB"), dtype=np.float32) / 255.0
    return Photo(rgb, alpha, grayscale, False, **metadata)


def _on_scale(values: np.ndarray, white: float, kind: str, name: str) -> np.ndarray:
    """Values from black (0) to `white` as [0, 1]; `kind` says what the image is ("32-bit float grayscale"). Values
    outside that range are refused rather than clipped: a file scaled otherwise (an HDR float, integers over 16
    bits) would come out nearly black or white, written as if all were well."""
    if not np.isfinite(values).all():
        raise ImageReadError(f"{name}: a {kind} image holding NaN or infinite values")
    low, high = float(values.min()), float(values.max())
    if low < 0.0 or high > white:
        raise ImageReadError(
            f"{name}: a {kind} image with values from {low:g} to {high:g}; deblur reads them as 0 (black) to "
            f"{white:g} (white): scale it into that range first (or save it as 8 or 16 bits)"
        )
    return values / white


def write_photo(path: str | Path, rgb: np.ndarray, like: Photo, options: WriteOptions | str = "png") -> None:
    """Write `rgb` (HWC float in [0, 1]) as `like` came in, atomically: the file appears whole or not at all."""
    options = WriteOptions(options) if isinstance(options, str) else options
    path = Path(path)
    with atomic_path(path, suffix=path.suffix) as tmp:
        if _deep_colour(like) and options.fmt == "tiff":
            icc = None if options.strip_metadata else like.icc
            write_tiff16(Path(tmp), _deep_pixels(rgb, like), icc)
        else:
            Path(tmp).write_bytes(encode_photo(rgb, like, options))


def encode_photo(rgb: np.ndarray, like: Photo, options: WriteOptions | str = "png") -> bytes:
    """The file `write_photo` would write, as bytes (a 16-bit colour TIFF as 8 bits: tifffile writes to files)."""
    options = WriteOptions(options) if isinstance(options, str) else options
    metadata = {} if options.strip_metadata or options.fmt not in METADATA_FORMATS else _metadata(like)
    if _deep_colour(like) and options.fmt == "png":
        return encode_png16(_deep_pixels(rgb, like), metadata.get("icc_profile"), metadata.get("exif"))
    buffer = io.BytesIO()
    extra = {"quality": options.quality or DEFAULT_QUALITY} if options.fmt in LOSSY_FORMATS else {}
    _to_image(rgb, like, options.fmt).save(buffer, format=WRITE_FORMATS[options.fmt], **extra, **metadata)
    return buffer.getvalue()


def raw_files(paths: Sequence[str | Path]) -> str:
    """What a folder's camera RAW files are told: how many, the first few, and what to do with them."""
    return f"{len(paths)} camera RAW file(s) ({first_few(paths)}): {RAW_ADVICE}"


def first_few(items: Sequence[object]) -> str:
    """The first three of `items` (files or folders), and "..." where there are more: how a message names many."""
    return ", ".join(str(item) for item in items[:3]) + (", ..." if len(items) > 3 else "")


def check_format_holds(width: int, height: int, fmt: str, name: str) -> None:
    """Raise FormatLimitError, naming `name`, where `fmt` cannot hold a `width` x `height` image."""
    most = MAX_SIDES.get(fmt)
    if most and max(width, height) > most:
        raise FormatLimitError(
            f"{name}: {width}x{height} is more than {fmt} holds ({most} px a side): choose another format (png, tiff)"
        )


def flattens_alpha(like: Photo, fmt: str) -> bool:
    """Whether writing `like` as `fmt` loses its transparency (flattened onto white: the format has no alpha)."""
    return like.alpha is not None and fmt not in ALPHA_FORMATS


def narrows_depth(like: Photo, fmt: str) -> bool:
    """Whether writing `like` as `fmt` loses bits: a 16-bit photo in a format of 8 bits a channel."""
    return like.sixteen_bit and fmt not in DEEP_FORMATS


def lost_in(fmt: str, like: Photo) -> list[str]:
    """What of `like` the format `fmt` cannot hold: "transparency" (flattened onto white), "depth" (16 bits as 8)."""
    return [loss for loss, loses in (("transparency", flattens_alpha), ("depth", narrows_depth)) if loses(like, fmt)]


def _metadata(like: Photo) -> dict:
    return {key: value for key, value in (("exif", like.exif), ("icc_profile", like.icc)) if value}


def _deep_colour(like: Photo) -> bool:
    """Whether `like` is written at 16 bits by `deblur.photo16`, in colour: 16-bit colour, and 16-bit grayscale with
    alpha (Pillow holds no 16-bit gray with alpha: it had been written without its alpha)."""
    return like.sixteen_bit and (not like.grayscale or like.alpha is not None)


def _deep_pixels(rgb: np.ndarray, like: Photo) -> np.ndarray:
    if like.grayscale:  # its three channels equal, as the grayscale photo's
        rgb = np.repeat(rgb.mean(axis=-1, keepdims=True), 3, axis=-1)
    pixels = np.round(np.clip(rgb, 0.0, 1.0) * 65535).astype(np.uint16)
    if like.alpha is not None:
        alpha = np.round(like.alpha * 65535).astype(np.uint16)[:, :, None]
        pixels = np.concatenate([pixels, alpha], axis=2)
    return pixels


def _to_image(rgb: np.ndarray, like: Photo, fmt: str) -> Image.Image:
    """Grayscale stays grayscale, 16-bit grayscale PNG stays 16-bit, alpha is put back where the format has it and
    flattened onto white where it has none (the colours under transparent pixels are not the photo's)."""
    if flattens_alpha(like, fmt):
        rgb = rgb * like.alpha[:, :, None] + (1.0 - like.alpha[:, :, None])
    if like.grayscale:
        gray = np.clip(rgb.mean(axis=-1), 0.0, 1.0)
        if like.sixteen_bit and fmt in DEEP_FORMATS:
            image = Image.fromarray(np.round(gray * 65535).astype(np.uint16))
        else:
            image = Image.fromarray(np.round(gray * 255).astype(np.uint8))
    else:
        image = Image.fromarray(to_uint8(rgb))
    # 8 bits here (16-bit colour goes to deblur.photo16): a 16-bit photo's transparency is kept in webp too
    if like.alpha is not None and fmt in ALPHA_FORMATS and image.mode in ("L", "RGB"):
        image = image.convert("LA" if like.grayscale else "RGBA")
        image.putalpha(Image.fromarray(np.round(like.alpha * 255).astype(np.uint8)))
    return image


def to_uint8(rgb: np.ndarray, rows: int = 256) -> np.ndarray:
    """[0, 1] floats to 0-255, clipped and rounded half to even, as every 8-bit file deblur writes."""
    # In bands of rows: a float copy of a whole 24-megapixel image would be another 288 MB.
    out = np.empty(rgb.shape, dtype=np.uint8)
    for top in range(0, rgb.shape[0], rows):
        band = np.clip(rgb[top : top + rows], 0.0, 1.0) * 255.0
        out[top : top + rows] = np.round(band)
    return out


_VIDEO_HEADERS = {"MPEG"}


def is_photo(path: Path) -> bool:
    """True for a photo's suffix, or a header Pillow recognises as an image it reads: never a clip, even where
    FFmpeg would open it as one frame (a HEIC photo once became a one-frame video)."""
    if path.suffix.lower() in READ_SUFFIXES | RAW_SUFFIXES:  # RAW: refused as a photo (a CR3 opens as a clip)
        return True
    _register_plugins()
    try:
        with Image.open(path) as image:
            # Pillow names an MPEG-1/2 video stream (a .m2v, or a DVD's video) by its header but cannot decode it
            return image.format not in _VIDEO_HEADERS
    except (OSError, SyntaxError, ValueError, UnidentifiedImageError):
        return False


def expand_patterns(inputs: Sequence[str]) -> list[str]:
    """The inputs, each pattern with `*` or `?` that names no file itself replaced by the files it matches, in name
    order: what a POSIX shell does before the command starts, and what Windows' shells leave to it (`deblur predict
    photos\\*.jpg` there, or a quoted pattern here, had been "no such file or folder"). A pattern that matches
    nothing, and anything with `://` (the engine's URLs), are kept as given; `[` is only itself (photo [1].jpg)."""
    expanded: list[str] = []
    for item in inputs:
        if "://" in item or not any(mark in item for mark in "*?") or os.path.lexists(item):
            expanded.append(item)
            continue
        matches = sorted(glob.glob(item.replace("[", "[[]"), recursive=True))
        expanded += matches or [item]
    return expanded


def find_images(
    inputs: list[Path],
    *,
    suffixes: set[str] = READ_SUFFIXES,
    skip: Path | None = None,
    outputs: list[Path] | None = None,
) -> list[tuple[Path, Path]]:
    """(file, name relative to what was given) for files given and, in folders, recursively, files with one of
    `suffixes` (photos by default), except those under the folder `skip` (the outputs', when it lies inside a
    folder of inputs: results are not inputs) and hidden ones (`is_hidden`: a phone's DCIM/.thumbnails, a Mac's ._
    files, a run's .clip.mp4.parts, a NAS's @eaDir), as a bucket's listing leaves them out too. Given a list as
    `outputs`, folders below those given that hold an earlier predict's outputs (`OUTPUTS_MARK`) are left out too,
    and added to it. Linked folders are searched as `walk` walks them, never the outputs' through a link."""
    found = []
    for item in inputs:
        if item.is_dir():
            inside = []
            for folder, files in walk(item, leave_out=skip, outputs=outputs):
                for file in files:
                    path = folder / file
                    if path.is_file() and path.suffix.lower() in suffixes:
                        inside.append((path, path.relative_to(item)))
            found += sorted(inside)  # one order on every file system, as a bucket's listing
        else:
            found.append((item, Path(item.name)))
    return found


def walk(
    root: Path, *, leave_out: Path | None = None, outputs: list[Path] | None = None
) -> Iterator[tuple[Path, list[str]]]:
    """(folder, the names of what it holds that is not a folder) for `root` and each folder below it, hidden ones
    (`is_hidden`) left out, and `leave_out` below it, however reached; given a list as `outputs`, the folders below
    `root` marked as holding predict's outputs (`OUTPUTS_MARK`) too, each added to it. A linked folder is walked as
    the folder it links to (as a file manager shows it; it had been passed by without a word), each folder once
    however many links reach it (a link back up is no loop, nor one to a folder above `root`: a training set's link
    up had reached its held-out pairs), in name order: of two links to one folder, the same one names its files on
    every file system."""
    walked = {_folder_key(above) for above in root.resolve().parents}
    if leave_out is not None and leave_out.is_dir() and not root.samefile(leave_out):
        walked.add(_folder_key(leave_out))
    for folder, folders, files in os.walk(root, followlinks=True):
        try:
            key = _folder_key(Path(folder))
        except OSError:  # gone since it was listed
            key = None
        if key is None or key in walked:
            folders[:] = []  # pruned in place: os.walk then does not descend into them
            continue
        walked.add(key)
        if outputs is not None and OUTPUTS_MARK in files and folder != str(root):
            outputs.append(Path(folder))
            folders[:] = []
            continue
        folders[:] = sorted(name for name in folders if not is_hidden(name))  # a .git of many files costs nothing
        yield Path(folder), [name for name in files if not is_hidden(name)]


def find_photos_and_raw(
    inputs: list[Path],
    *,
    suffixes: set[str] = READ_SUFFIXES,
    skip: Path | None = None,
    outputs: list[Path] | None = None,
) -> tuple[list[tuple[Path, Path]], list[Path]]:
    """What `find_images` finds (`outputs` as it takes it), and apart the camera RAW files in the folders among
    `inputs` (to be told of, not read), in one walk of each folder: a NAS's folder of many thousands had been walked
    twice. Each file once (`given_once`)."""
    found: list[tuple[Path, Path]] = []
    raw: list[Path] = []
    for item in inputs:
        folder = item.is_dir()
        for path, name in find_images([item], suffixes=suffixes | RAW_SUFFIXES, skip=skip, outputs=outputs):
            if folder and path.suffix.lower() in RAW_SUFFIXES - suffixes:
                raw.append(path)
            else:
                found.append((path, name))
    if len(inputs) == 1:  # a folder alone holds each file once
        return found, raw
    return given_once(found), list(dict.fromkeys(raw))


F = TypeVar("F", str, Path)
N = TypeVar("N", str, Path)


def given_once(found: list[tuple[F, N]], key: Callable[[F], str] = os.path.abspath) -> list[tuple[F, N]]:
    """Each file of `found` ((path, name)) once, as first given: one given twice (`photos/*.jpg photos/best.jpg`,
    or a folder and a file in it) had been a name clash with itself. `key` tells two paths of one file alike."""
    firsts: dict[str, tuple[F, N]] = {}
    for path, name in found:
        firsts.setdefault(key(path), (path, name))
    return list(firsts.values())


# The hidden file `deblur predict` leaves in a folder it writes outputs into: a later search of a folder above it
# leaves that folder out (`find_images`' `outputs`), as `deblur predict . --out second` had deblurred the outputs
# of `deblur predict .` (in ./deblurred) a second time, beside the photos. Given by name, the folder is searched.
OUTPUTS_MARK = ".deblur-outputs"
OUTPUTS_NOTE = (
    "deblur predict wrote its outputs into this folder. A search of a folder above it (deblur predict photos/) leaves\n"
    "this folder out, so that they are not deblurred a second time; given by name, it is searched.\n"
)


def outputs_only(folder: Path) -> bool:
    """Whether `folder` may be marked as holding outputs alone (`mark_outputs`): it is not there yet, holds nothing
    but hidden files, or is marked. A folder of the user's own, given as --out, is never marked: a later search
    would leave out their photos in it with the outputs."""
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return OUTPUTS_MARK in names or all(is_hidden(name) for name in names)


def mark_outputs(folder: Path) -> None:
    """`OUTPUTS_MARK` left in `folder`, where outputs were written, once: a folder `outputs_only` allowed."""
    mark = folder / OUTPUTS_MARK
    if mark.is_file():
        return
    with contextlib.suppress(OSError, DeblurError):  # a help to the next run's search, never worth failing this one
        atomic_write_text(mark, OUTPUTS_NOTE)


# Folders a NAS keeps its thumbnails in beside the photos (Synology's @eaDir holds five JPEGs for each photo): not
# photos, nor data, though their names do not start with ".".
THUMBNAIL_FOLDERS = {"@eaDir"}


def is_hidden(name: str) -> bool:
    """Whether a file or folder name is one a search leaves out: hidden (".thumbnails", a Mac's "._" files), or a
    NAS's thumbnail folder."""
    return name.startswith(".") or name in THUMBNAIL_FOLDERS


def in_hidden(name: str | PurePath) -> bool:
    """Whether a relative path (a/b/c.png; "/"-separated in a bucket) names something hidden or inside a hidden
    folder (`is_hidden` for any of its parts)."""
    return any(is_hidden(part) for part in PurePath(name).parts)


def _folder_key(folder: Path) -> tuple[int, int]:
    """What tells one folder from another, whatever path (a link among them) reaches it."""
    stat = folder.stat()
    return stat.st_dev, stat.st_ino
