"""16-bit colour photos, which Pillow reads and writes only as 8-bit (Pillow 13: a 48-bit PNG opens as "RGB"),
floating-point TIFFs (as RAW developers export them: darktable's 16 and 32-bit float), which Pillow reads only as
32-bit grayscale, and 16-bit gray and alpha TIFFs, which it cannot open.

PNG goes through FFmpeg's PNG codec (PyAV, already deblur's video library), TIFF through tifffile (scikit-image's).
A written PNG gets the photo's ICC profile and EXIF as iCCP and eXIf chunks, written here from the PNG
specification (W3C, third edition); a TIFF gets the ICC profile (tag 34675). Arrays are HWC uint16.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
TIFF_SIGNATURES = (b"II*\x00", b"MM\x00*", b"II+\x00", b"MM\x00+")  # little and big-endian; TIFF and BigTIFF
ICC_TAG = 34675  # TIFF's InterColorProfile
ORIENTATION_TAG = 274
SEPARATE_PLANES = 2  # TIFF's PlanarConfiguration: a plane per channel (RRR...GGG...BBB) instead of RGBRGB...
FLOATS = 3  # TIFF's SampleFormat for IEEE floating point
GRAY, RGB = 1, 2  # TIFF's PhotometricInterpretation: BlackIsZero, RGB


@dataclass(frozen=True)
class TiffPage:
    """The first page of a TIFF that Pillow cannot open (`unopened_tiff`), from its tags."""

    width: int
    height: int
    channels: int  # 1 gray, 2 gray and alpha, 3 RGB, 4 RGBA
    bits: int  # 16, 32 or 64
    pages: int
    photometric: int
    floats: bool = True  # floating point, white at 1.0; else 16-bit integers, white at 65535

    @property
    def white(self) -> float:
        return 1.0 if self.floats else 65535.0


def is_deep_colour(path: Path, head: bytes) -> bool:
    """Whether a file is a 16-bit RGB(A) PNG or TIFF, or a 16-bit gray and alpha PNG (which Pillow opens as 8-bit
    RGBA), from its first bytes and, for a TIFF, its tags."""
    if head.startswith(PNG_SIGNATURE) and head[12:16] == b"IHDR":
        depth, colour = head[24], head[25]
        return depth == 16 and colour in (2, 4, 6)  # truecolour, with or without alpha; gray with alpha
    if head[:4] in (b"II*\x00", b"MM\x00*"):
        import tifffile

        with tifffile.TiffFile(path) as tiff:
            page = tiff.pages[0]
            integers = page.sampleformat != FLOATS  # a 16-bit float TIFF is `float_tiff`'s
            return integers and page.bitspersample == 16 and page.samplesperpixel in (3, 4) and page.photometric == RGB
    return False


def is_deep_gray(head: bytes) -> bool:
    """Whether an `is_deep_colour` file is gray (a PNG of gray and alpha, read as RGBA of equal channels)."""
    return head.startswith(PNG_SIGNATURE) and head[25] == 4


def read_deep_colour(source: Path | BinaryIO, head: bytes) -> np.ndarray:
    """The pixels of a 16-bit RGB or RGBA PNG or TIFF, HWC uint16 (3 or 4 channels), from a file or a binary stream
    (a server's upload, a Ray worker's download: both had failed on `read_bytes`, which only a path has) whose
    first bytes are `head`."""
    if head.startswith(PNG_SIGNATURE):
        import av

        with av.open(str(source) if isinstance(source, Path) else source) as container:
            frame = next(container.decode(video=0))
            alpha = "a" in frame.format.name.replace("gbr", "")
            return frame.to_ndarray(format="rgba64le" if alpha else "rgb48le")
    return _first_page(source)[0]


def unopened_tiff(source: Path | BinaryIO, head: bytes) -> TiffPage | None:
    """The first page's description where the file is a TIFF that Pillow cannot open: floating-point (Pillow reads
    only 32-bit gray), or 16-bit integer gray with alpha (as a scanner or an editor saves a cut-out); None for any
    other file."""
    if head[:4] not in TIFF_SIGNATURES:
        return None
    import tifffile

    try:
        with tifffile.TiffFile(source) as tiff:
            page = tiff.pages[0]
            floats = page.sampleformat == FLOATS
            gray_alpha = page.bitspersample == 16 and page.samplesperpixel == 2 and page.photometric == GRAY
            if not (floats or gray_alpha):
                return None
            size = (page.imagewidth, page.imagelength, page.samplesperpixel, page.bitspersample)
            return TiffPage(*size, pages=len(tiff.pages), photometric=int(page.photometric), floats=floats)
    except (tifffile.TiffFileError, ValueError, IndexError):
        return None  # Pillow's reading then says what is wrong with it


def read_tiff_page(source: Path | BinaryIO) -> tuple[np.ndarray, int, bytes | None]:
    """A TIFF's first page as HWC float32 (1 to 4 channels) on its own scale, its EXIF orientation tag (1: upright)
    and its ICC profile."""
    pixels, page_tags = _first_page(source)
    pixels = pixels.astype(np.float32)
    orientation = page_tags.get(ORIENTATION_TAG)
    icc = page_tags.get(ICC_TAG)
    return pixels if pixels.ndim == 3 else pixels[:, :, None], int(orientation or 1), bytes(icc) if icc else None


def _first_page(source: Path | BinaryIO) -> tuple[np.ndarray, dict]:
    """A TIFF's first page, HWC whichever way its channels are stored (a plane per channel had been read as an
    image 3 pixels high), and its tags' values."""
    import tifffile

    with tifffile.TiffFile(source) as tiff:
        page = tiff.pages[0]
        pixels = page.asarray()
        if page.planarconfig == SEPARATE_PLANES and page.samplesperpixel > 1:
            pixels = np.moveaxis(pixels, 0, -1)
        return pixels, {tag.code: tag.value for tag in page.tags.values()}


def encode_png16(pixels: np.ndarray, icc: bytes | None = None, exif: bytes | None = None) -> bytes:
    """A 16-bit RGB or RGBA PNG of HWC uint16 `pixels`, with the ICC profile and EXIF given."""
    import av

    height, width, channels = pixels.shape
    codec = av.CodecContext.create("png", "w")
    codec.width, codec.height = width, height
    codec.pix_fmt = "rgba64be" if channels == 4 else "rgb48be"
    frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(pixels), format="rgba64le" if channels == 4 else "rgb48le")
    data = b"".join(bytes(packet) for packet in [*codec.encode(frame), *codec.encode(None)])
    chunks = []
    if icc:
        chunks.append(_chunk(b"iCCP", b"ICC profile\x00\x00" + zlib.compress(icc)))
    if exif:
        chunks.append(_chunk(b"eXIf", exif.removeprefix(b"Exif\x00\x00")))
    # after IHDR (8 signature bytes + 25 of the IHDR chunk), before any image data, as the specification orders them
    return data[:33] + b"".join(chunks) + data[33:]


def write_tiff16(target: Path, pixels: np.ndarray, icc: bytes | None = None) -> None:
    """A 16-bit RGB or RGBA TIFF of HWC uint16 `pixels`, with the ICC profile given."""
    import tifffile

    extratags = [(ICC_TAG, "B", len(icc), icc, True)] if icc else []
    extrasamples = (2,) if pixels.shape[2] == 4 else None  # unassociated alpha
    tifffile.imwrite(target, pixels, photometric="rgb", extrasamples=extrasamples, extratags=extratags)


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
