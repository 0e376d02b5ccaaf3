"""`deblur predict` on a clip: frames through the model in batches, written in segments of a few seconds to a
work folder beside the output, then joined into the output with the clip's audio and subtitles.

A killed or interrupted run keeps every finished segment; the same command again continues after the last one,
and the result holds the frames an uninterrupted run does (each segment is made from the same frames with the same
settings; x264 may encode one a little differently).
The output appears only complete (temporary name, then rename); the work folder goes once it is in place.

    OUT/.<name>.parts/job.json        what the parts were made with: other settings start over
    OUT/.<name>.parts/00000.mp4 ...   finished segments

With `side_by_side`, `<name>_side_by_side` (blurry | deblurred, as a player shows the clip) is made beside it from the
same frames, in segments of its own (`OUT/.<name>_side_by_side.parts/`); a segment counts as finished when both are.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np

from deblur.errors import SettingError, check_reporter, check_switches, given_log, is_positive_number
from deblur.files import (
    as_path,
    full_disk_named,
    one_run_at_a_time,
    refuse_over_input,
    side_by_side_path,
    start_work,
    to_write,
    work_folder,
)
from deblur.imageio import DEFAULT_MAX_PIXELS, check_max_pixels
from deblur.video.clips import Clip, Frame, VideoReadError, frames_per_segment, probe_clip, read_frames
from deblur.video.encode import Encoding, JoinReport, SegmentWriter, check_container, join_segments, pixel_format
from deblur.video.pixels import HDR_TRANSFERS

if TYPE_CHECKING:
    from deblur.inference import Deblurrer

SEGMENT_SECONDS = 2.0  # at most this much of the clip is deblurred again after a kill
# What a segment holds, raised when that changes, so that segments an earlier deblur made are not joined with the
# new ones (2: colour and pixel-aspect tags, which the join takes from the first segment).
SEGMENT_FORMAT = 2


class ClipProgress(Protocol):
    """What `deblur_clip` reports as it goes (the CLI draws a frame bar with an ETA from it)."""

    # a clip of `frames` frames (None: unknown), `done` of them finished before; told how many more are done
    def clip(self, name: str, frames: int | None, done: int) -> Callable[[int], None]: ...


@dataclass(frozen=True)
class VideoOptions:
    encoding: Encoding = Encoding()
    max_pixels: int = DEFAULT_MAX_PIXELS  # per frame
    segment_seconds: float = SEGMENT_SECONDS
    strip_metadata: bool = False  # leave out the clip's tags (when and where it was recorded, the camera)
    side_by_side: bool = False  # also <name>_side_by_side: blurry | deblurred

    def __post_init__(self) -> None:
        if not isinstance(self.encoding, Encoding):  # a codec's name had ended on AttributeError ... 'codec'
            raise SettingError(
                f"encoding is {type(self.encoding).__name__}: give deblur.video.encode.Encoding(codec, crf)",
                settings=("encoding",),
            )
        check_max_pixels(self.max_pixels)
        if not is_positive_number(self.segment_seconds):  # NaN had ended on "cannot convert float NaN to integer"
            raise SettingError(
                f"segment_seconds must be a finite number above 0; got {self.segment_seconds!r}",
                settings=("segment_seconds",),
            )
        check_switches(strip_metadata=self.strip_metadata, side_by_side=self.side_by_side)


@dataclass
class ClipReport:
    source: Path
    target: Path
    frames: int
    resumed_frames: int  # frames found already done in the work folder
    seconds: float  # this run's, decoding, deblurring and encoding
    streams: JoinReport | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def frames_per_second(self) -> float:
        done = self.frames - self.resumed_frames
        return done / self.seconds if self.seconds > 0 else 0.0


def join_outputs(
    clip: Clip, segments: list[Path], target: Path, missing: list[Path], log: Callable[[str], None], *, tags: bool
) -> JoinReport:
    """The finished `segments` (in `target`'s work folder) joined into those of the clip's outputs that are
    `missing` (`deblur.files.to_write`): `target`, and its side-by-side from the segments of the same names in its
    own work folder, joined there first and put in place after the clip, so that the clip is never there without
    it but for the instant between two renames. Plain predict and the engine join a clip this way."""
    pair = side_by_side_path(target)
    streams = None
    if pair in missing:
        pair_work = work_folder(pair)
        joined = pair_work / f".joined{pair.suffix}"
        # what a join says of the clip's streams, the output's says too: once is enough
        quiet = target in missing
        pair_segments = [pair_work / path.name for path in segments]
        streams = join_segments(
            pair_segments, side_by_side_clip(clip), joined, log=(lambda _: None) if quiet else log, tags=tags
        )
    if target in missing:
        streams = join_segments(segments, clip, target, log=log, tags=tags)
    if pair in missing:
        os.replace(joined, pair)
    return streams


def pair_segment(segment: Path) -> Path:
    """Where the side-by-side's segment of the clip's `segment` goes: the same name, in the side-by-side's work
    folder."""
    return work_folder(side_by_side_path(clip_of(segment.parent))) / segment.name


def clip_of(work: Path) -> Path:
    """The clip whose work folder `work` is (`work_folder`'s inverse)."""
    return work.parent / work.name.removeprefix(".").removesuffix(".parts")


def deblur_clip(
    source: str | Path,
    target: str | Path,
    deblurrer: Deblurrer,
    options: VideoOptions = VideoOptions(),
    progress: ClipProgress | None = None,
    log: Callable[[str], None] = print,
    name: str | None = None,
    overwrite: bool = True,
) -> ClipReport:
    """Deblur every frame of `source` into the video `target`, resumably (see the module's docstring). A clip
    that cannot be used raises VideoReadError naming it (`name`, default its path); nothing is then left for it.
    Without `overwrite`, a `target` that exists raises OutputExistsError, one that another run finished while this
    one was reading the clip included."""
    source, target = as_path(source, "the clip", "source"), as_path(target, "the target", "target")
    if not callable(getattr(deblurrer, "many", None)):  # a model's path had been an AttributeError ... 'method'
        raise SettingError(
            f"the deblurrer is {type(deblurrer).__name__}: deblur.load_deblurrer(model) opens one",
            settings=("deblurrer",),
        )
    check_switches(overwrite=overwrite)
    check_reporter(progress, ("clip",), "deblur.video.predict.ClipProgress")
    log = given_log(log)
    started = time.perf_counter()
    pair = side_by_side_path(target) if options.side_by_side else None
    outputs = (target, pair) if pair else (target,)
    for output in outputs:  # with overwrite (the default here), the clip had been replaced by its result
        refuse_over_input(output, source, "the clip deblurred")
    to_write(outputs, overwrite=overwrite)  # one of the two there (a run stopped between them) is kept
    check_container(target, options.encoding.codec)
    clip = probe_clip(source, max_pixels=options.max_pixels, name=name)
    notes = clip_notes(clip, options.encoding)
    if deblurrer.method != "network":
        deblurrer, note = deblurrer.for_clips()
        notes += [note] if note else []
    work = work_folder(target)
    pair_work = work_folder(pair) if pair else None
    works = (work, pair_work) if pair_work else (work,)
    per_segment = frames_per_segment(clip, options.segment_seconds)
    job = clip_job(clip, deblurrer.identity(), options, per_segment)
    # A segment's temporary name, in a hidden folder and gone once abandoned, would not say which output had no room.
    with (
        one_run_at_a_time(work, target, "out"),
        full_disk_named(target, work),
        full_disk_named(pair, pair_work) if pair else contextlib.nullcontext(),
    ):
        missing = to_write(outputs, overwrite=overwrite)  # again, with the lock held: the run that held it may be done
        done = finished_segments(work, job, log, side_by_side=pair is not None)
        resumed = min(len(done) * per_segment, clip.frames or 0)
        on_frames = progress.clip(source.name, clip.frames, resumed) if progress else (lambda _: None)
        writer = _Segments(clip, deblurrer, options, on_frames)
        segments: list[Path] = []
        frames, resized = 0, False
        try:
            for frame in read_frames(clip):
                frames += 1
                if frame.scaled_from and not resized:  # said once, at the first frame of another size
                    notes.append(_size_change(frame, clip))
                    resized = True
                index = frame.index // per_segment
                if index == len(segments):  # the first frame of a segment
                    segments.append(work / f"{index:05d}{target.suffix}")
                    writer.close_segment()
                    if segments[-1] not in done:
                        writer.open_segment(segments[-1], pair_segment(segments[-1]) if pair else None)
                writer.add(frame)
            writer.close_segment()
            if frames == 0:
                raise VideoReadError(f"{clip.name}: the video stream has no frames")
            streams = join_outputs(clip, segments, target, missing, log, tags=not options.strip_metadata)
        except VideoReadError:
            writer.abandon()
            for folder in works:
                shutil.rmtree(folder, ignore_errors=True)  # a clip that cannot be used leaves nothing behind
            raise
        except BaseException:
            writer.abandon()  # Ctrl-C or a failure: the finished segments stay, the one in progress goes
            raise
    for folder in works:
        shutil.rmtree(folder, ignore_errors=True)
    resumed = min(len(done) * per_segment, frames)
    return ClipReport(source, missing[0], frames, resumed, time.perf_counter() - started, streams, notes)


def clip_notes(clip: Clip, encoding: Encoding) -> list[str]:
    """What the output will not be as the clip came, known from its probe (the frames may add a size change)."""
    notes = []
    if pixel_format(clip.width, clip.height, encoding.codec) == "yuv444p":
        notes.append(
            f"{clip.width}x{clip.height} has an odd side: written with 4:4:4 chroma to keep its size, which fewer "
            "players (Safari, phones, TVs) play; --codec av1 keeps it in 4:2:0"
        )
    if clip.alpha:
        notes.append("its transparency (alpha) is left out: written opaque, it shows what its clear parts hid")
    if clip.transfer in HDR_TRANSFERS:
        notes.append(
            f"an HDR clip ({HDR_TRANSFERS[clip.transfer]}): deblurred and written in 8 bits, tagged as HDR as it came "
            "so that players show its colours; smooth gradients may band"
        )
    return notes


def _size_change(frame: Frame, clip: Clip) -> str:
    width, height = frame.scaled_from
    return (
        f"from frame {frame.index + 1} the clip's frames are {width}x{height}: scaled to its first frames' "
        f"{clip.width}x{clip.height}, as a video holds one size"
    )


def side_by_side_clip(clip: Clip) -> Clip:
    """The clip `side_by_side_frame`'s frames make: twice as wide as a player shows it."""
    across = clip.rotation % 180 == 0  # a clip a player turns by 90 degrees is stored on its side
    return replace(clip, width=clip.width * (2 if across else 1), height=clip.height * (1 if across else 2))


def side_by_side_frame(blurry: np.ndarray, deblurred: np.ndarray, rotation: int) -> np.ndarray:
    """blurry | deblurred as a player shows a clip it turns `rotation` degrees counter-clockwise: frames are stored
    unturned, so a phone's upright clip (stored on its side) is stacked top and bottom."""
    turn = rotation % 360
    first, second = (blurry, deblurred) if turn in (0, 90) else (deblurred, blurry)
    return np.concatenate([first, second], axis=0 if turn in (90, 270) else 1)


class _Segments:
    """Frames into the open segment, as many to a model call as `frames_per_call` allows: memory holds that
    many frames, whatever the length of a segment or of the clip. Frames of finished segments are passed over.
    With `options.side_by_side`, each frame also goes into the side-by-side's segment, blurry | deblurred."""

    def __init__(self, clip: Clip, deblurrer: Deblurrer, options: VideoOptions, on_frames: Callable[[int], None]):
        self.clip, self.deblurrer, self.options, self.on_frames = clip, deblurrer, options, on_frames
        self.step = deblurrer.frames_per_call(clip.height, clip.width)
        self.writer: SegmentWriter | None = None
        self.pair_clip = side_by_side_clip(clip) if options.side_by_side else None
        self.pair_writer: SegmentWriter | None = None
        self.pending: list[Frame] = []

    def open_segment(self, path: Path, pair_path: Path | None = None) -> None:
        self.writer = SegmentWriter(path, self.clip, self.options.encoding)
        if pair_path is not None:
            self.pair_writer = SegmentWriter(pair_path, self.pair_clip, self.options.encoding)

    def add(self, frame: Frame) -> None:
        if self.writer is None:
            return  # in a finished segment
        self.pending.append(frame)
        if len(self.pending) == self.step:
            self._deblur_pending()

    def close_segment(self) -> None:
        if self.writer is not None:
            self._deblur_pending()
            self.writer.close()
            self.writer = None
        if self.pair_writer is not None:
            self.pair_writer.close()
            self.pair_writer = None

    def abandon(self) -> None:
        for writer in (self.writer, self.pair_writer):
            if writer is not None:
                writer.abandon()
        self.writer = self.pair_writer = None

    def _deblur_pending(self) -> None:
        if not self.pending:
            return
        restored = self.deblurrer.many([frame.rgb for frame in self.pending])
        for frame, image in zip(self.pending, restored, strict=True):
            self.writer.write(image, _pts(frame, self.clip))
            if self.pair_writer is not None:
                pair = side_by_side_frame(frame.rgb, image, self.clip.rotation)
                self.pair_writer.write(pair, _pts(frame, self.clip))
        self.on_frames(len(self.pending))
        self.pending = []


def deblur_segment(
    clip: Clip, frames: Iterable[Frame], path: Path, deblurrer: Deblurrer, options: VideoOptions = VideoOptions()
) -> int:
    """Deblur `frames` of `clip` into the segment file `path` (atomically), and with `options.side_by_side` into
    the side-by-side's (`pair_segment`), as `deblur_clip` writes each of its segments; returns how many frames it
    held. A distributed engine's workers make a clip's segments this way."""
    count = 0

    def counted(done: int) -> None:
        nonlocal count
        count += done

    writer = _Segments(clip, deblurrer, options, counted)
    writer.open_segment(path, pair_segment(path) if options.side_by_side else None)
    try:
        for frame in frames:
            writer.add(frame)
        writer.close_segment()
    except BaseException:
        writer.abandon()
        raise
    return count


def _pts(frame: Frame, clip: Clip) -> int:
    if frame.pts is not None and frame.time_base == clip.time_base:
        return frame.pts
    seconds = frame.index / clip.rate if frame.pts is None else frame.pts * frame.time_base
    return round(seconds / clip.time_base)


def clip_job(clip: Clip, identity: dict, options: VideoOptions, per_segment: int) -> dict:
    """What a clip's segments are made from (`identity`: the Deblurrer's): a work folder with another job.json
    starts over."""
    stat = clip.path.stat()
    return {
        "source": {"path": str(clip.path.resolve()), "bytes": stat.st_size, "modified_ns": stat.st_mtime_ns},
        "model": identity,
        "encoding": asdict(options.encoding),
        "frames_per_segment": per_segment,
        "segment_format": SEGMENT_FORMAT,
    }


def finished_segment_files(work: Path) -> set[Path]:
    """The segments in a clip's work folder (a segment being written has a hidden name until it is whole)."""
    return {path for path in work.iterdir() if path.name[:5].isdigit() and not path.name.startswith(".")}


def finished_segments(work: Path, job: dict, log: Callable[[str], None], *, side_by_side: bool = False) -> set[Path]:
    """The segments a previous run finished with the same clip and settings (with `side_by_side`, those whose
    side-by-side segment is finished too); other parts are cleared."""
    done = finished_segment_files(work) if start_work(work, "job.json", job, _made_otherwise, log) else set()
    if side_by_side:
        pair_work = work_folder(side_by_side_path(clip_of(work)))
        started = start_work(pair_work, "job.json", job, _made_otherwise, log)
        pairs = {path.name for path in finished_segment_files(pair_work)} if started else set()
        done = {path for path in done if path.name in pairs}
    if done:
        log(f"resuming: {len(done)} finished segment(s) in {work}")
    return done


def _made_otherwise(before: object) -> str:
    if isinstance(before, dict) and before.get("segment_format") != SEGMENT_FORMAT:
        return "made by another version of deblur"
    return "made from another clip or with other settings"
