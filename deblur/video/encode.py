"""Writing deblurred frames as video: segments encoded one by one, then joined with the clip's audio and
subtitles into one file.

Each segment is a file of its own, written whole or not at all, so a killed run keeps every finished one. The
segments are encoded without B-frames: every packet's decoding time is then its presentation time, so segments
joined end to end keep increasing timestamps (with B-frames, a segment's first packets decode before the last
frame of the one before it is shown). Each frame keeps the clip's own timestamp, so a variable frame rate stays
as it was, and the display matrix (rotation) is copied.
"""

from __future__ import annotations

import contextlib
import heapq
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Literal

import numpy as np

from deblur.errors import SettingError, check_choice, is_whole_number
from deblur.files import atomic_path
from deblur.imageio import to_uint8
from deblur.video.clips import Clip, picture_stream
from deblur.video.pixels import rgb_to_frame, tag_stream

Codec = Literal["h264", "h265", "vp9", "av1"]
# FFmpeg's encoder for each, and its quality setting that looks visually lossless on photographic video
# (x264's CRF 18 is the usual "visually lossless"; the others' scales differ).
ENCODERS = {"h264": "libx264", "h265": "libx265", "vp9": "libvpx-vp9", "av1": "libsvtav1"}
DEFAULT_CRF = {"h264": 18, "h265": 20, "vp9": 24, "av1": 24}
MAX_CRF = {"h264": 51, "h265": 51, "vp9": 63, "av1": 63}  # x265 refused 52 as "Invalid data"; x264 clamps it
NO_B_FRAMES = {
    "libx264": {"bframes": "0"},
    "libx265": {"x265-params": "bframes=0:log-level=error"},
    "libvpx-vp9": {"auto-alt-ref": "0", "lag-in-frames": "0"},
    "libsvtav1": {"svtav1-params": "pred-struct=1"},
}
# Containers the output keeps from the input (they hold what they held), with the codecs FFmpeg's muxer takes in
# each (its MOV muxer refuses VP9 and AV1: such a clip had ended on "Invalid argument"); anything else becomes MP4,
# which holds every codec above and plays everywhere (WebM would refuse H.264, AVI is from another age).
KEPT_SUFFIXES: dict[str, set[str]] = {".mkv": set(ENCODERS), ".mov": {"h264", "h265"}}


def check_container(target: Path, codec: Codec) -> None:
    """Refuse, before any frame is deblurred, a `target` whose suffix names no container FFmpeg writes, or one that
    cannot hold `codec` (the Python API takes any target; predict names its own by `video_suffix`). Such a clip had
    been deblurred whole and then failed to join, on FFmpeg's ValueError."""
    import io

    import av

    written = {"h264": "h264", "h265": "hevc", "vp9": "vp9", "av1": "av1"}[codec]  # FFmpeg's names
    suffix = target.suffix.lower()
    memory = io.BytesIO()  # the muxer FFmpeg picks by the name is only asked: no file, and nothing is written
    memory.name = f"clip{suffix}"
    try:
        with av.open(memory, "w") as probe:
            kind, holds = probe.format.name, written in probe.supported_codecs
    except ValueError:
        kind, holds = None, False
    if suffix in KEPT_SUFFIXES and codec not in KEPT_SUFFIXES[suffix]:
        holds = False  # FFmpeg's MOV muxer lists VP9 and AV1, then refuses their packets
    if not holds:
        if kind:
            said = f"a {suffix} file ({kind} to FFmpeg) cannot hold {codec} video"
        else:
            said = f"FFmpeg writes no video to a file named {f'*{suffix}' if suffix else 'without a suffix'}"
        raise SettingError(
            f"{target}: {said}: name it .mp4 (it holds every codec, and plays everywhere) or .mkv",
            settings=("target", "codec"),
        )


def video_suffix(source: Path, codec: Codec = "h264") -> str:
    """The output's container, by the input's suffix: MKV stays, MOV stays where it holds `codec`, everything
    else is MP4."""
    suffix = source.suffix.lower()
    return suffix if codec in KEPT_SUFFIXES.get(suffix, set()) else ".mp4"


@dataclass(frozen=True)
class Encoding:
    codec: Codec = "h264"
    crf: int | None = None  # None: DEFAULT_CRF of the codec

    def __post_init__(self) -> None:
        # it had been taken, and ended on KeyError with a crf or at the encoder; a list on "unhashable type"
        check_choice("codec", self.codec, MAX_CRF)
        if self.crf is not None and not is_whole_number(self.crf):  # 18.5 had gone to the encoder as it was
            raise SettingError(f"crf must be a whole number (or None); got {self.crf!r}", settings=("crf",))
        if self.crf is not None and not 0 <= self.crf <= MAX_CRF[self.codec]:
            raise SettingError(
                f"crf {self.crf} is outside {self.codec}'s range, 0 to {MAX_CRF[self.codec]}", settings=("crf", "codec")
            )

    @property
    def quality(self) -> int:
        return DEFAULT_CRF[self.codec] if self.crf is None else self.crf


def pixel_format(width: int, height: int, codec: Codec = "h264") -> str:
    """yuv420p plays everywhere, but the H.264, H.265 and VP9 encoders need even sides for it: an odd side keeps
    its size with 4:4:4 chroma instead (H.264 High 4:4:4 and the others' equivalents: fewer players, but no pixel
    is cropped or added). AV1 takes odd sides in 4:2:0, and SVT-AV1 encodes nothing else (4:4:4 failed to open)."""
    return "yuv420p" if codec == "av1" or (width % 2 == 0 and height % 2 == 0) else "yuv444p"


class SegmentWriter:
    """One segment's frames into `path` (written atomically when `close` succeeds)."""

    def __init__(self, path: Path, clip: Clip, encoding: Encoding) -> None:
        import av

        self._atomic = atomic_path(path, suffix=path.suffix)
        self._tmp = self._atomic.__enter__()
        self._container = av.open(str(self._tmp), "w")
        encoder = ENCODERS[encoding.codec]
        options = {"crf": str(encoding.quality), **NO_B_FRAMES[encoder]}
        if encoder == "libvpx-vp9":
            options.update({"b:v": "0", "row-mt": "1"})
        self._stream = self._container.add_stream(encoder, rate=clip.rate, options=options)
        self._stream.width, self._stream.height = clip.width, clip.height
        self._stream.pix_fmt = pixel_format(clip.width, clip.height, encoding.codec)
        tag_stream(self._stream, clip.primaries, clip.transfer)
        if clip.pixel_aspect:
            self._stream.codec_context.sample_aspect_ratio = clip.pixel_aspect
        self._stream.time_base = clip.time_base
        self._stream.codec_context.time_base = clip.time_base
        if clip.rotation:
            self._stream.set_display_rotation(clip.rotation)
        self._time_base = clip.time_base

    def write(self, rgb: np.ndarray, pts: int) -> None:
        frame = rgb_to_frame(to_uint8(rgb), self._stream.pix_fmt)
        frame.pts, frame.time_base = pts, self._time_base
        self._container.mux(self._stream.encode(frame))

    def close(self) -> None:
        """Flush the encoder and put the segment in place."""
        self._container.mux(self._stream.encode())
        self._container.close()
        self._atomic.__exit__(None, None, None)

    def abandon(self) -> None:
        """Leave nothing behind (the temporary file is removed)."""
        with contextlib.suppress(Exception):  # a half-written container may fail to close; it goes either way
            self._container.close()
        self._atomic.__exit__(RuntimeError, RuntimeError("abandoned"), None)


@dataclass
class JoinReport:
    copied: list[str]  # streams carried over as they were, e.g. "audio 1 (aac)"
    reencoded: list[str]  # streams the output container cannot hold as they were, and what they became
    dropped: list[str]


def join_segments(
    segments: list[Path], clip: Clip, target: Path, log: Callable[[str], None] = print, *, tags: bool = True
) -> JoinReport:
    """The segments' video, end to end, with the clip's audio and subtitle streams, its timecode, its chapters,
    (into MKV) its attachments and, with `tags`, its own tags (when and where it was recorded, its title, the
    camera), into `target` (atomically).

    Streams the output container holds as they are are copied packet by packet, not re-encoded; audio it cannot
    hold is re-encoded to AAC (Opus into WebM, which holds no AAC); subtitles it cannot hold are left out (MKV holds
    them all), as are data streams. A muxer that accepts a stream and then fails on its packets (PCM from AVI into
    MP4, say) gets every audio stream re-encoded instead. Each is said in the report, and logged.
    """
    import av

    try:
        return _join(segments, clip, target, log, reencode_audio=False, tags=tags)
    except av.FFmpegError as err:
        log(f"copying the audio into {target.suffix} failed ({str(err)[:120]}): re-encoding it")
        return _join(segments, clip, target, log, reencode_audio=True, tags=tags)


def _join(
    segments: list[Path], clip: Clip, target: Path, log: Callable[[str], None], *, reencode_audio: bool, tags: bool
) -> JoinReport:
    import av

    report = JoinReport([], [], [])
    source = av.open(str(clip.path), metadata_errors="ignore")
    try:
        options = _muxer_options(source, target, tags)
        with atomic_path(target, suffix=target.suffix) as tmp, av.open(str(tmp), "w", options=options) as out:
            with av.open(str(segments[0])) as first:
                video = _copy_of(out, first.streams.video[0])
            if clip.pixel_aspect:  # in MP4's and MOV's pasp box too: VP9's and AV1's frames cannot say it
                video.codec_context.sample_aspect_ratio = clip.pixel_aspect
            supported = out.supported_codecs
            carried = []  # (input stream, output stream, whether it is re-encoded)
            for stream in [*source.streams.audio, *source.streams.subtitles]:
                codec, label = _named(stream)
                if codec in supported and not (reencode_audio and stream.type == "audio"):
                    carried.append((stream, out.add_stream_from_template(stream), False))
                    carried[-1][1].metadata.update(_stream_tags(stream, tags))
                    report.copied.append(label)
                elif stream.type == "audio" and (into := _audio_codec(supported)):
                    # PyAV resamples the decoded audio to the encoder's rate (Opus takes 48 kHz, not 44.1)
                    rate = (stream.codec_context.sample_rate or 48000) if into == "aac" else 48000
                    encoder = out.add_stream(AUDIO_ENCODERS[into], rate=rate)
                    encoder.metadata.update(_stream_tags(stream, tags))
                    carried.append((stream, encoder, True))
                    why = "copying it failed" if codec in supported else f"{target.suffix} cannot hold {codec}"
                    report.reencoded.append(f"{label} -> {into} ({why})")
                elif stream.type == "audio":
                    report.dropped.append(f"{label}: {target.suffix} holds no audio deblur encodes (.mp4 does)")
                else:
                    report.dropped.append(f"{label}: {target.suffix} cannot hold {codec} subtitles (.mkv keeps them)")
            picture = picture_stream(source)
            video.metadata.update(_stream_tags(picture, tags))
            timecode = _timecode([picture, *source.streams.data])
            if timecode:  # MOV and MP4 rewrite their timecode track from it, counting frames at the stream's rate
                video.metadata["timecode"] = timecode
                video.codec_context.framerate = clip.rate  # the segments' is their time base's, 12288 a second
                report.copied.append(f"the timecode ({timecode})")
            for stream in source.streams.data:
                if not (timecode and stream.metadata.get("timecode") == timecode):  # not the timecode track itself
                    report.dropped.append(f"data {stream.index}: a data stream (camera telemetry or metadata)")
            for stream in source.streams.attachments:  # fonts that styled subtitles need, cover art, files
                label = f"attachment {stream.index} ({stream.name})"
                if target.suffix == ".mkv":
                    out.add_attachment(stream.name, stream.mimetype, stream.data)
                    report.copied.append(label)
                else:
                    report.dropped.append(f"{label}: {target.suffix} cannot hold attachments (.mkv keeps them)")
            _carry_tags_and_chapters(source, out, report, tags)
            for stream in source.streams.video:
                if stream.index != picture.index:  # a cover picture, or a second angle: only the video is deblurred
                    cover = stream.disposition & av.stream.Disposition.attached_pic
                    what = "the clip's cover picture" if cover else "a second video stream"
                    report.dropped.append(f"{_named(stream)[1]}: {what}")
            for line in report.reencoded:
                log(f"re-encoded {line}")
            for line in report.dropped:
                log(f"left out {line}")
            packets = [_video_packets(segments, video), _carried_packets(source, carried)]
            for _, packet in heapq.merge(*packets, key=lambda item: item[0]):
                out.mux(packet)
            for _, output, reencode in carried:
                if reencode:
                    out.mux(output.encode())
    finally:
        source.close()
    return report


# Audio a container cannot hold as it is becomes AAC, or Opus where the container does not hold AAC (WebM): FFmpeg's
# encoder for each. A clip with AAC into WebM had failed at its end, all its frames deblurred, on "'webm' format does
# not support 'aac' codec".
AUDIO_ENCODERS = {"aac": "aac", "opus": "libopus"}


def _audio_codec(supported: set[str]) -> str | None:
    """The codec audio is re-encoded to for a container that holds `supported` (FFmpeg's names); None: neither."""
    return next((codec for codec in AUDIO_ENCODERS if codec in supported), None)


def _muxer_options(source, target: Path, tags: bool) -> dict[str, str]:
    """MOV and MP4 write an iPhone's tags (com.apple.quicktime.location.ISO6709, its place) only as QuickTime
    metadata keys: asked for where the clip's own tags are such. Not for others: an Android phone's place is an
    ordinary tag (location), which those keys would write in a form other programs may not read."""
    apple = any(key.startswith("com.apple.quicktime.") for key in source.metadata)
    return {"movflags": "use_metadata_tags"} if tags and apple and target.suffix in (".mov", ".mp4", ".m4v") else {}


# Tags each muxer writes of its own (the file's brand, the program that wrote it): not the clip's to carry.
MUXER_TAGS = {"major_brand", "minor_version", "compatible_brands", "encoder"}


def _carry_tags_and_chapters(source, out, report: JoinReport, tags: bool) -> None:
    """The clip's chapters, and with `tags` its own tags: a photo library dates and places a clip by them
    (creation_time, location), as it does a photo by its EXIF, and they had been dropped. Before the header."""
    kept = {key: value for key, value in source.metadata.items() if key.lower() not in MUXER_TAGS}
    if tags and kept:
        out.metadata.update(kept)
        report.copied.append(f"its tags ({', '.join(sorted(kept))})")
    chapters = source.chapters()
    if chapters:
        out.set_chapters(chapters)
        report.copied.append(f"{len(chapters)} chapter(s)")


def _stream_tags(stream, tags: bool) -> dict[str, str]:
    """A stream's tags to carry: which track is which (an audio track's language and title had been dropped); with
    `tags` off (--strip-metadata) its language only. Not what the muxer writes anew (a duration, an encoder,
    mkvmerge's statistics, which a re-encoded stream would falsify)."""
    kept = {}
    for key, value in stream.metadata.items():
        name = key.upper()
        if name in ("DURATION", "ENCODER", "BPS", "NUMBER_OF_FRAMES", "NUMBER_OF_BYTES") or name.startswith("_STAT"):
            continue
        if tags or name == "LANGUAGE":
            kept[key] = value
    return kept


def _timecode(streams: list) -> str | None:
    """The clip's start timecode (a camera's HH:MM:SS:FF), where its video stream or a timecode track says one."""
    return next((stream.metadata["timecode"] for stream in streams if stream.metadata.get("timecode")), None)


def _named(stream) -> tuple[str, str]:
    """A source stream's codec, and how the report calls the stream: "audio 1 (aac)"."""
    codec = stream.codec_context.name if stream.codec_context else stream.codec.name
    return codec, f"{stream.type} {stream.index} ({codec})"


def _copy_of(out, template):
    """A stream in `out` for `template`'s packets, copied as they are. PyAV names the new stream's codec by the
    decoder FFmpeg chose to read `template`; for AV1 that is libdav1d, which no encoder is called, and --codec av1
    ended there on UnknownCodecError. The decoder itself then stands in: remuxing opens neither."""
    import av

    try:
        return out.add_stream_from_template(template)
    except av.codec.codec.UnknownCodecError:
        return out.add_stream_from_template(template, opaque=True)


def _video_packets(segments: list[Path], video) -> Iterator[tuple[float, object]]:
    """The segments' packets end to end, one segment file open at a time (an hour is 1800 of them)."""
    import av

    for segment in segments:
        with av.open(str(segment)) as container:
            stream = container.streams.video[0]
            for packet in container.demux(stream):
                if packet.dts is None and packet.pts is None:
                    continue  # the demuxer's empty flush packet
                packet.stream = video
                yield _seconds(packet, stream.time_base), packet


def _carried_packets(source, carried) -> Iterator[tuple[float, object]]:
    """The clip's audio and subtitle packets in the order they are stored, one pass over the file (a demuxer
    reading one stream at a time would skip the others' packets)."""
    if not carried:
        return
    by_index = {stream.index: (stream, output, reencode) for stream, output, reencode in carried}
    for packet in source.demux(*(stream for stream, _, _ in carried)):
        if packet.dts is None and packet.pts is None:
            continue
        stream, output, reencode = by_index[packet.stream.index]
        when = _seconds(packet, stream.time_base)
        if not reencode:
            packet.stream = output
            yield when, packet
            continue
        for frame in packet.decode():
            frame.pts = None  # the encoder numbers its samples itself
            for encoded in output.encode(frame):
                yield when, encoded


def _seconds(packet, time_base: Fraction) -> float:
    stamp = packet.dts if packet.dts is not None else packet.pts
    return float(stamp * (packet.time_base or time_base))
