"""What a clip is, read with PyAV (FFmpeg in its wheel): its video stream checked before any work, and its frames
decoded one at a time as HWC RGB float32 in [0, 1], each with its own timestamp.

A file is taken as a clip by its content: whatever FFmpeg opens with a video stream that is not a still image.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import BinaryIO

import numpy as np

from deblur.imageio import DEFAULT_MAX_PIXELS, RAW_SUFFIXES, ImageReadError, NotAnImageError
from deblur.video.pixels import frame_to_rgb

# Suffixes searched for in folders (a file named on the command line is judged by its content).
VIDEO_SUFFIXES = {".mp4", ".m4v", ".mov", ".mkv", ".webm", ".avi", ".mpg", ".mpeg", ".ts", ".mts", ".m2ts", ".wmv"}
VIDEO_SUFFIXES |= {".flv", ".3gp", ".ogv", ".m2v", ".m1v", ".mpv"}  # the last three: MPEG video streams alone
# a DVD's, professional cameras' (MXF), DV camcorders', and other containers FFmpeg reads that a folder search
# had passed by
VIDEO_SUFFIXES |= {".vob", ".mxf", ".dv", ".3g2", ".f4v", ".asf", ".divx", ".m2t"}
# FFmpeg opens still images too (its image2 demuxers): those are photos, read by Pillow.
_STILL_FORMATS = ("image2", "_pipe", "png", "jpeg", "webp", "bmp", "tiff", "gif")


class VideoReadError(ImageReadError):
    """A clip cannot be used; the message names the file and what is wrong."""


@dataclass(frozen=True)
class Clip:
    path: Path
    name: str  # what messages call it
    width: int
    height: int
    frames: int | None  # from the container, or estimated from the stream's duration; None where neither says
    counted: bool  # `frames` is the container's own count, not an estimate
    time_base: Fraction  # of the video stream: frame timestamps are in these units
    rate: Fraction  # frames per second, average (a variable frame rate keeps each frame's own timestamp)
    duration: float | None  # seconds
    rotation: int  # degrees counter-clockwise a player turns the frames (the display matrix)
    codec: str
    container: str  # FFmpeg's name of the container format
    audio: int  # streams of each kind, carried over to the output
    subtitles: int
    # FFmpeg's codes for the colour primaries and transfer function its frames say they have (2: unspecified),
    # carried to the output: an HDR clip (BT.2020 with PQ or HLG) written without them plays washed out and grey.
    primaries: int = 2
    transfer: int = 2
    alpha: bool = False  # its frames carry transparency (ProRes 4444, PNG in MOV, VP9 in WebM), which is not kept
    # The width of a pixel against its height where it is not square (None: square): anamorphic video (HDV's
    # 1440x1080 shown at 16:9, DV's 720x480) is shown stretched by it, and written without it plays squeezed.
    pixel_aspect: Fraction | None = None

    @property
    def megapixels(self) -> float:
        return self.width * self.height / 1e6


@dataclass
class Frame:
    index: int
    rgb: np.ndarray  # HWC float32 in [0, 1]
    pts: int | None
    time_base: Fraction
    scaled_from: tuple[int, int] | None = None  # (width, height) as decoded, where it differs from the clip's


def is_media_file(path: Path) -> bool:
    """True when FFmpeg opens `path` as a media container (not a still image): a clip, or a file that claims to
    be one (an audio-only file is then refused for having no video stream, not for not being a photo)."""
    import av

    try:
        with av.open(str(path), metadata_errors="ignore") as container:
            return not any(name in container.format.name for name in _STILL_FORMATS)
    except (av.FFmpegError, OSError, UnicodeDecodeError, ValueError):
        return False


@contextlib.contextmanager
def clips_named_as_photos(path: Path | None) -> Iterator[None]:
    """A photo at `path` (a local file; None for a URL) that Pillow cannot read and that is a video clip (a "GIF"
    saved from a site that sends MP4, a renamed clip) is said to be one: it had been called no readable image."""
    try:
        yield
    except NotAnImageError as err:
        # a camera's RAW file keeps its own advice: FFmpeg opens a CR3 as a clip
        kind = clip_format(path) if path is not None and path.suffix.lower() not in RAW_SUFFIXES else None
        if kind is None:
            raise
        raise NotAnImageError(
            f"{path}: a video clip ({kind}) under a photo's name: name it as a clip (e.g. {path.stem}.mp4) to deblur it"
        ) from err


def clip_format(source: Path | BinaryIO) -> str | None:
    """FFmpeg's name of the container of the clip at `source` (a path, or an upload's bytes); None where it is no
    clip."""
    import av

    try:
        with av.open(str(source) if isinstance(source, Path) else source, metadata_errors="ignore") as container:
            if any(name in container.format.name for name in _STILL_FORMATS) or picture_stream(container) is None:
                return None
            names = container.format.name.split(",")  # FFmpeg's "mov,mp4,m4a,3gp,3g2,mj2"
            return "MP4" if "mp4" in names else names[0].upper()
    except (av.FFmpegError, OSError, UnicodeDecodeError, ValueError):
        return None


def picture_stream(container):
    """The clip's video: its first video stream that is not a cover picture (an "attached picture": one still
    that music files and downloaded videos carry as a video stream), or None."""
    import av

    attached = av.stream.Disposition.attached_pic
    return next((stream for stream in container.streams.video if not stream.disposition & attached), None)


def probe_clip(path: Path, *, max_pixels: int = DEFAULT_MAX_PIXELS, name: str | None = None) -> Clip:
    """The clip's facts, after the checks that need no decoding of the whole clip: it opens, it has a video
    stream FFmpeg can decode, that stream has a first frame, and its frames are within `max_pixels`. Errors call
    it `name` (default: its path; a server names the upload, never its own folders)."""
    import av

    name = name or str(path)
    try:
        container = av.open(str(path), metadata_errors="ignore")
    except (av.FFmpegError, OSError, UnicodeDecodeError) as err:
        if path.is_file() and path.stat().st_size == 0:  # FFmpeg's "Invalid data found" said less than a photo's
            raise VideoReadError(f"{name}: an empty file (0 bytes), not a video") from None
        if _unfinished_recording(path):
            raise VideoReadError(
                f"{name}: an MP4 or MOV without its index (moov): a recording that was never finished (the camera "
                "stopped or its battery ran out mid-clip) or a copy cut short; tools such as untrunc rebuild the "
                "index from a good clip of the same camera"
            ) from None
        raise VideoReadError(f"{name}: not a readable video ({_reason(err)})") from None
    with container:
        stream = picture_stream(container)
        if stream is None:
            cover = " with a cover picture" if container.streams.video else ""
            raise VideoReadError(f"{name}: no video stream (a {container.format.name} file{cover})")
        codec = stream.codec_context
        if codec is None or not getattr(codec, "name", None):
            raise VideoReadError(f"{name}: its video codec cannot be decoded here (unsupported codec)")
        width, height = codec.width, codec.height
        if width * height > max_pixels:
            raise VideoReadError(
                f"{name}: {width}x{height} = {width * height:,} pixels a frame, over the limit of {max_pixels:,} "
                "(max_pixels)"
            )
        try:
            first = next(container.decode(stream), None)
        except av.FFmpegError as err:
            raise VideoReadError(f"{name}: its first frame cannot be decoded ({_reason(err)})") from None
        if first is None:
            raise VideoReadError(f"{name}: the video stream has no frames")
        rate = stream.average_rate or stream.guessed_rate or Fraction(30)
        duration = float(stream.duration * stream.time_base) if stream.duration else None
        counted = bool(stream.frames)  # MP4 and MOV count their frames; MKV and WebM do not
        frames = stream.frames or (max(1, round(duration * float(rate))) if duration else None)
        return Clip(
            path=path,
            name=name,
            width=first.width,
            height=first.height,
            frames=frames,
            counted=counted,
            time_base=stream.time_base or Fraction(1, 90000),
            rate=Fraction(rate),
            duration=duration,
            rotation=int(round(first.rotation or 0)),
            codec=codec.name,
            container=container.format.name,
            audio=len(container.streams.audio),
            subtitles=len(container.streams.subtitles),
            primaries=int(first.color_primaries),
            transfer=int(first.color_trc),
            # FFmpeg's own VP9 decoder leaves WebM's alpha layer undecoded: only the stream's tag tells of it
            alpha=any(part.is_alpha for part in first.format.components) or stream.metadata.get("alpha_mode") == "1",
            pixel_aspect=_non_square(stream.sample_aspect_ratio or codec.sample_aspect_ratio),
        )


def _non_square(aspect: Fraction | None) -> Fraction | None:
    return Fraction(aspect) if aspect and aspect != 1 else None


def read_frames(clip: Clip, first: int = 0, stop: int | None = None, times: list[int] | None = None) -> Iterator[Frame]:
    """The clip's frames `first` to `stop` (default: every one), in order, decoded one at a time (memory holds a
    few frames, whatever its length). With `times` (`frame_times`), decoding starts at the key frame before
    `first` instead of at the clip's start. A frame that cannot be decoded, or a clip that ends early, raises
    VideoReadError naming the file."""
    import av

    name = clip.name
    with av.open(str(clip.path), metadata_errors="ignore") as container:
        stream = picture_stream(container)
        stream.thread_type = "AUTO"  # decoding threads: the model, not the decoder, should be the bottleneck
        index, started, last = 0, False, None
        seek = bool(times) and 0 < first < len(times)
        if seek:
            position = {pts: i for i, pts in enumerate(times)}
            container.seek(times[first], stream=stream, backward=True)  # to the key frame at or before it
        try:
            for frame in container.decode(stream):
                if seek:
                    index = position.get(frame.pts, index)
                    if index > first and not started:  # the seek went past the first frame: decode from the start
                        break
                    started = True
                if stop is not None and index >= stop:
                    return
                if frame.pts is not None:  # an encoder takes rising timestamps: the muxer's refusal named no frame
                    if last is not None and frame.pts <= last:
                        raise VideoReadError(_time_goes_back(name, index, frame.pts, last, frame.time_base))
                    last = frame.pts
                if index >= first:  # frames before it (from the key frame, or from the start) are passed over
                    # A size change midway (a spliced .ts, a stream's new resolution) is scaled to the first
                    # frame's, as FFmpeg does: an encoder takes one size, and the audio stays in step.
                    rgb = frame_to_rgb(frame, clip.width, clip.height)
                    own = (frame.width, frame.height)
                    scaled = own if own != (clip.width, clip.height) else None
                    yield Frame(index, rgb, frame.pts, frame.time_base or clip.time_base, scaled)
                index += 1
        except av.FFmpegError as err:
            raise VideoReadError(f"{name}: frame {index + 1} cannot be decoded ({_reason(err)})") from None
    if seek and not started:
        yield from read_frames(clip, first, stop)
        return
    if stop is None and clip.counted and index < clip.frames:
        # A clip that stops short of its own count was cut off (a container without a count says nothing).
        raise VideoReadError(f"{name}: truncated: {index} of its {clip.frames} frames could be decoded")


def frame_times(clip: Clip) -> list[int] | None:
    """Every frame's timestamp in presentation order, read from the packets without decoding (an hour of video
    takes seconds), so that a worker can seek to its segment; None when some packet has no timestamp."""
    import av

    times = []
    with av.open(str(clip.path), metadata_errors="ignore") as container:
        stream = picture_stream(container)
        try:
            for packet in container.demux(stream):
                if packet.size == 0:
                    continue  # the demuxer's end-of-stream marker
                if packet.pts is None:
                    return None
                times.append(packet.pts)
        except av.FFmpegError as err:
            raise VideoReadError(f"{clip.name}: cannot be read to the end ({_reason(err)})") from None
    return sorted(times)


def _time_goes_back(name: str, index: int, pts: int, last: int, time_base: Fraction | None) -> str:
    at = f" ({float(pts * time_base):.2f} s after {float(last * time_base):.2f} s)" if time_base else ""
    return (
        f"{name}: its timestamps go back at frame {index + 1}{at}, as in pieces joined end to end; join them so "
        "that time runs on (FFmpeg's concat demuxer does), or deblur each piece"
    )


def frames_per_segment(clip: Clip, seconds: float) -> int:
    return max(1, math.ceil(float(clip.rate) * seconds))


def _unfinished_recording(path: Path) -> bool:
    """Whether the file is an ISO media file (MP4, MOV: an ftyp box first) whose top-level boxes hold media data
    (mdat) and no moov, the index cameras write last: its frames are there, and nothing says where. (A HEIC or AVIF
    photo has a top-level meta box in place of a moov.)"""
    try:
        with path.open("rb") as file:
            size = file.seek(0, 2)
            at, kinds = 0, []
            while at + 8 <= size and len(kinds) < 1000:
                file.seek(at)
                head = file.read(16)
                length, kind = int.from_bytes(head[:4], "big"), head[4:8]
                if length == 1 and len(head) == 16:  # a 64-bit size follows the type
                    length = int.from_bytes(head[8:16], "big")
                kinds.append(kind)
                if length < 8:  # 0: the box runs to the end of the file
                    break
                at += length
    except OSError:
        return False
    return kinds[:1] == [b"ftyp"] and b"mdat" in kinds and not {b"moov", b"meta"} & set(kinds)


def _reason(err: Exception) -> str:
    text = getattr(err, "strerror", None) or str(err)
    return text.splitlines()[0][:160] if text else type(err).__name__
