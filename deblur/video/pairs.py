"""`deblur data from-video`: real blurry/sharp pairs from a high-frame-rate clip, as GOPRO was made.

For each window of N consecutive frames (N drawn per window from the odd numbers in [min_frames, max_frames],
GOPRO's 7 to 13, so that there is a middle frame): the frames are averaged in linear light (the camera's response
inverted as gamma 2.2, as GOPRO did), the response re-applied and the result rounded to 8 bits: the blurry image.
The window's middle frame is the sharp one. Windows follow each other without overlap. A window with almost no
motion (its first and last frames nearly the same) is skipped: its pair would teach the model to do nothing.

The pairs are written in GOPRO's layout, `OUT/train/<clip>/{blur,sharp}/` and `OUT/test/<clip>/...`, with the last
`val_fraction` of the clip's windows held out by time (one window between them left out): neighbouring frames are
near-duplicates, so a random split would validate on frames the model trained on.

Frames are HWC RGB; only a running sum and the middle frame of a window are held, so memory does not grow with N,
and each pair is written as it is made, so it does not grow with the clip's length either.

The pairs are made in a hidden folder beside OUT, renamed to OUT at the end; a run that is stopped goes on from the
windows it finished when the same command is run again (`deblur.video.window_parts`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from deblur.config import MAX_SEED
from deblur.console import progress_bar
from deblur.errors import (
    Interrupted,
    OutputExistsError,
    SettingError,
    check_switches,
    given_log,
    is_real_number,
    is_whole_number,
)
from deblur.files import (
    as_path,
    check_outside,
    check_parent,
    file_stamp,
    full_disk_named,
    one_run_at_a_time,
    work_folder,
)
from deblur.imageio import find_images, is_photo, read_photo
from deblur.video.clips import VideoReadError, probe_clip, read_frames
from deblur.video.pixels import HDR_TRANSFERS
from deblur.video.window_parts import PARTS_FORMAT, WindowWriter, finish_work, read_windows, start_windows

GAMMA = 2.2  # GOPRO's inverse camera response
# Each 8-bit value in linear light, looked up: the same float64 values as a power per pixel, in half its time.
LINEAR = (np.arange(256, dtype=np.float64) / 255.0) ** GAMMA
HIGH_FRAME_RATE = 120  # below this, consecutive frames are too far apart to average into blur
MAX_FRAME_RATE = 1_000_000  # a million frames a second, beyond the fastest cameras: a larger --fps is a slip


@dataclass(frozen=True)
class WindowRecipe:
    min_frames: int = 7
    max_frames: int = 13
    min_motion: float = 0.01  # mean |last - first| frame difference, in [0, 1] units, below which a window is skipped
    val_fraction: float = 0.1  # of the windows, the last ones in time, held out in test/
    seed: int = 0

    def __post_init__(self) -> None:
        # Each by its kind first: 3.5 frames, a string or a seed of 0.5 had ended on a TypeError from inside, and a
        # min_motion of NaN or -1 had skipped no window, of 5 every one.
        for name in ("min_frames", "max_frames", "seed"):
            if not is_whole_number(getattr(self, name)):
                raise SettingError(f"{name} must be a whole number: {getattr(self, name)!r}", settings=(name,))
        for name in ("min_motion", "val_fraction"):
            if not is_real_number(getattr(self, name)):
                raise SettingError(f"{name} must be a number: {getattr(self, name)!r}", settings=(name,))
        if not 0 <= self.min_motion <= 1:  # `not` refuses NaN too
            raise SettingError(
                f"min_motion must be from 0 to 1 (a mean difference of frames in [0, 1]): {self.min_motion}",
                settings=("min_motion",),
            )
        if not 3 <= self.min_frames <= self.max_frames:
            raise SettingError(
                f"min_frames must be at least 3 and at most max_frames: {self.min_frames}, {self.max_frames}",
                settings=("min_frames", "max_frames"),
            )
        if not 0 <= self.val_fraction < 1:
            raise SettingError(f"val_fraction must be in [0, 1): {self.val_fraction}", settings=("val_fraction",))
        if not 0 <= self.seed <= MAX_SEED:
            raise SettingError(f"seed must be between 0 and {MAX_SEED}: {self.seed}", settings=("seed",))

    def sizes(self) -> list[int]:
        """The window lengths drawn from: odd, so that the sharp frame is the true middle."""
        odd = [n for n in range(self.min_frames, self.max_frames + 1) if n % 2]
        return odd or [self.min_frames]


@dataclass
class VideoPairsReport:
    out: Path
    fps: float | None
    frames: int = 0
    train_pairs: int = 0
    val_pairs: int = 0
    skipped_still: int = 0  # windows with almost no motion
    motion: list[float] = field(default_factory=list)  # per kept window: mean |last - first|, [0, 1] units
    blur_psnr: list[float] = field(default_factory=list)  # per kept window: blurry against sharp, dB
    warnings: list[str] = field(default_factory=list)
    read: int = 0  # frames read, a last window cut short included

    def summary(self) -> str:
        kept = self.train_pairs + self.val_pairs
        lines = [
            f"{kept} pairs ({self.train_pairs} train, {self.val_pairs} held out in test/) from {self.frames} frames"
            f"{f' at {self.fps:.0f} fps' if self.fps else ''}; {self.skipped_still} window(s) with almost no "
            "motion skipped"
        ]
        if kept:
            lines.append(
                f"motion: first to last frame of a window differ by {100 * np.median(self.motion):.1f}% "
                f"(median; {100 * min(self.motion):.1f} to {100 * max(self.motion):.1f}%); blurry against sharp: "
                f"{np.median(self.blur_psnr):.1f} dB PSNR (median; lower is more blur)"
            )
        return "\n".join(lines)


@dataclass
class FrameSource:
    frames: Iterator[np.ndarray]  # uint8 HWC RGB
    rate: float | None  # frames per second: the clip's, or --fps for a folder
    count: int | None  # where known
    hdr: str | None = None  # the clip's HDR transfer function (`deblur.video.pixels.HDR_TRANSFERS`), if any
    stamp: object = None  # what tells a resumed run that the frames are the same: the clip's size and time, or
    # a digest of the folder's frame names, sizes and times
    turned: int = 0  # degrees counter-clockwise the frames were turned, upright as a player shows the clip


def frames_from(source: Path, *, fps: float | None = None) -> FrameSource:
    """The frames of a clip, or of a folder of frames in name order."""
    if source.is_dir():
        paths = [path for path, _ in find_images([source])]
        if not paths:
            raise VideoReadError(f"{source}: no frames (images) in this folder")
        listing = [[path.relative_to(source).as_posix(), *file_stamp(path)] for path in paths]
        digest = hashlib.sha256(json.dumps(listing).encode()).hexdigest()
        return FrameSource(_folder_frames(paths), fps, len(paths), stamp=digest)
    if is_photo(source):
        # FFmpeg would open it as a clip of one frame, and the error would speak of motion
        raise VideoReadError(f"{source}: a photo, not a clip: give a slow-motion clip, or a folder of its frames")
    clip = probe_clip(source)
    # A phone's upright clip is stored on its side and turned by the player: its pairs had come out on their side.
    turns = clip.rotation // 90 % 4
    frames = (np.round(np.rot90(frame.rgb, turns) * 255).astype(np.uint8) for frame in read_frames(clip))
    transfer = HDR_TRANSFERS.get(clip.transfer)
    return FrameSource(frames, fps or float(clip.rate), clip.frames, transfer, file_stamp(source), 90 * turns)


def _folder_frames(paths: list[Path]) -> Iterator[np.ndarray]:
    """The frames of a folder, refusing one whose size differs from the first's (frames of two clips)."""
    first, size = None, None
    for path in paths:
        frame = np.round(read_photo(path).rgb * 255).astype(np.uint8)
        height, width = frame.shape[:2]
        if first is None:
            first, size = path, (width, height)
        elif (width, height) != size:
            raise VideoReadError(
                f"{path}: {width}x{height}, where the first frame, {first.name}, is {size[0]}x{size[1]}: a folder "
                "of frames holds one clip's frames, all one size"
            )
        yield frame


def pairs_from_video(
    source: str | Path,
    out: str | Path,
    recipe: WindowRecipe = WindowRecipe(),
    *,
    fps: float | None = None,
    progress: bool = True,
    log: Callable[[str], None] = print,
) -> VideoPairsReport:
    """Make the pairs of `source` (a clip or a folder of frames) in the new folder `out` (see the module's
    docstring); `out` appears complete or not at all, and a stopped run's windows are kept for the next."""
    source, out = as_path(source, "the clip", "source"), as_path(out, "the pairs' folder", "out")
    if not isinstance(recipe, WindowRecipe):  # a dict had ended on "asdict() should be called on dataclass instances"
        raise SettingError(
            f"recipe is {type(recipe).__name__}: give a WindowRecipe (WindowRecipe(**settings))", settings=("recipe",)
        )
    check_switches(progress=progress)  # "no" had drawn bars: a string is true
    log = given_log(log)
    # `not` refuses NaN too; "30" had ended on a TypeError
    if fps is not None and not (is_real_number(fps) and 1 <= fps <= MAX_FRAME_RATE):
        raise SettingError(f"fps must be between 1 and {MAX_FRAME_RATE}: {fps!r}", settings=("fps",))
    check_parent(out, "out")
    _refuse_existing(out)
    if not source.exists():
        raise VideoReadError(f"{source}: no such file or folder")
    check_outside(out, source, ("out",))
    found = frames_from(source, fps=fps)
    warnings = _warnings(found)
    for warning in warnings:
        log(f"warning: {warning}")
    name = source.stem if source.is_file() else source.name
    work = work_folder(out)
    with one_run_at_a_time(work, out, "out"), full_disk_named(out, work):
        _refuse_existing(out)  # again, with the lock held: another run may just have finished it
        earlier = start_windows(work, _recipe(source, found, recipe), log)
        try:
            report, windows = _make_windows(found, work, recipe, earlier, progress)
            if not report.frames:
                raise VideoReadError(
                    f"{source}: {report.read} frame(s), too few for one window of {recipe.min_frames} to "
                    f"{recipe.max_frames} (--min-frames, --max-frames)"
                )
            if not windows:
                raise VideoReadError(
                    f"{source}: no window of frames moved enough to make a pair ({report.skipped_still} skipped, "
                    f"{report.frames} frames)"
                )
            report.train_pairs, report.val_pairs = finish_work(work, out, name, windows, recipe.val_fraction)
        except KeyboardInterrupt:
            kept = len(read_windows(work))
            raise Interrupted(
                f"stopped: {kept} window(s) of frames are kept in {work}; the same command goes on from them"
            ) from None
        except VideoReadError:
            shutil.rmtree(work)  # the same frames would fail the same way
            raise
    report.out, report.fps, report.warnings = out, found.rate, warnings
    return report


def _refuse_existing(out: Path) -> None:
    if out.exists():
        raise OutputExistsError(f"{out} already exists: choose a new folder for the pairs", settings=("out",))


def _warnings(found: FrameSource) -> list[str]:
    warnings = []
    if found.hdr:
        warnings.append(
            f"an HDR clip ({found.hdr}): its frames are averaged as if their values were sRGB's, which they are "
            "not, and the pairs keep its HDR values, which photos do not have; record in SDR for training pairs"
        )
    if found.rate is None:
        warnings.append("the frame rate is unknown (give --fps): it cannot be checked")
    elif found.rate < HIGH_FRAME_RATE:
        warnings.append(
            f"{found.rate:.0f} fps is below about {HIGH_FRAME_RATE}: frames this far apart average into ghosts "
            "(separate, faded copies of what moved), not the smooth streaks of real blur. The pairs will teach the "
            "model to remove ghosts; film in slow motion (120 or 240 fps) for real blur"
        )
    return warnings


def _recipe(source: Path, found: FrameSource, recipe: WindowRecipe) -> dict:
    """What the windows are made from: a run with anything else starts over (the frame rate only warns)."""
    return {
        "format": PARTS_FORMAT,
        "source": str(source.resolve()),
        "stamp": found.stamp,
        "windows": dataclasses.asdict(recipe),
        **({"turned": found.turned} if found.turned else {}),  # an earlier version's parts of such a clip were not
    }


def _make_windows(
    found: FrameSource, work: Path, recipe: WindowRecipe, earlier: list[dict], progress: bool
) -> tuple[VideoPairsReport, int]:
    """Every window of the frames: the first ones `earlier`'s records (an earlier run's), the others made, their
    pairs written and recorded in `work`; the report (its out, fps and warnings left to the caller) and the pairs'
    count."""
    from deblur.losses import image_psnr  # Keras: loaded when pairs are made, not with the CLI

    report, done = VideoPairsReport(work, None), len(earlier)
    rng = np.random.default_rng(recipe.seed)
    pairs = 0  # of the windows that moved, in time order
    bar = progress_bar(total=found.count, desc="frames", unit="frame", disable=not progress)
    try:
        with WindowWriter(work) as writer:
            made = _windows(_tally(found.frames, report), rng, recipe, done)
            for index, (blurry, sharp, motion, used) in enumerate(made):
                if index < done:
                    record = earlier[index]
                else:
                    still = motion < recipe.min_motion
                    psnr = None if still else image_psnr(sharp / 255.0, blurry / 255.0)
                    record = {"frames": used, "motion": motion, "psnr": psnr}
                    writer.add(record, None if still else {"blur": blurry, "sharp": sharp}, pairs)
                report.frames += used
                bar.update(used)
                if record["psnr"] is None:
                    report.skipped_still += 1
                    continue
                report.motion.append(record["motion"])
                report.blur_psnr.append(record["psnr"])
                pairs += 1
        # every frame read, those of the last window too short to use among them: the bar had ended short of 100%
        # (35 of 40 frames), as a job stopped part way does; the header's count is only an estimate in some clips
        bar.total = report.read
        bar.update(report.read - bar.n)
    finally:
        bar.close()
    return report, pairs


def _tally(frames: Iterator[np.ndarray], report: VideoPairsReport) -> Iterator[np.ndarray]:
    for frame in frames:
        report.read += 1
        yield frame


def _windows(
    frames: Iterator[np.ndarray], rng: np.random.Generator, recipe: WindowRecipe, done: int = 0
) -> Iterator[tuple[np.ndarray | None, np.ndarray | None, float, int]]:
    """(blurry uint8, sharp uint8, motion, frames used) for consecutive windows; a last window shorter than the
    one drawn is left out. The first `done` windows (an earlier run's) are read past: (None, None, 0.0, size)."""
    sizes = recipe.sizes()
    size = int(rng.choice(sizes))
    window, total, first, middle, taken = 0, None, None, None, 0
    for frame in frames:
        taken += 1
        if window >= done:
            if total is None:
                total = np.zeros(frame.shape, np.float64)
                first = frame
            total += LINEAR[frame]
            if taken == size // 2 + 1:
                middle = frame
        if taken == size:
            if window < done:
                yield None, None, 0.0, size
            else:
                blurry = np.round(np.clip(total / size, 0, 1) ** (1 / GAMMA) * 255).astype(np.uint8)
                motion = float(np.mean(np.abs(frame.astype(np.float32) - first.astype(np.float32))) / 255.0)
                yield blurry, middle, motion, size
            window += 1
            size = int(rng.choice(sizes))
            total, first, middle, taken = None, None, None, 0
