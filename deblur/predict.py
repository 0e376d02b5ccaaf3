"""`deblur predict`: photos and clips, files in and out, with the model opened once.

The inputs are resolved once, before the model loads, into a plan (`plan_inputs`): every file with its kind, its
output and whether that output is already there; every later step reads the plan. Each input is judged by its
content: what Pillow reads is a photo (written as the write settings' format), what FFmpeg opens with a moving
video stream is a clip (written as video: deblur.video). A file that fails is reported by name and the others go
on; nothing is written for it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np

from deblur.console import Hint
from deblur.errors import (
    DeblurError,
    Interrupted,
    NothingFoundError,
    OutputExistsError,
    SettingError,
    check_reporter,
    given_log,
)
from deblur.files import check_folder, longest_name, side_by_side_path, to_write, work_folder
from deblur.imageio import (
    DEFAULT_MAX_PIXELS,
    OUTPUTS_MARK,
    READ_SUFFIXES,
    ImageReadError,
    find_photos_and_raw,
    first_few,
    is_photo,
    lost_in,
    mark_outputs,
    outputs_only,
    raw_files,
    read_photo,
    write_photo,
)
from deblur.min_side import check_min_side
from deblur.settings import PredictSettings, ReadSettings, WriteSettings, check_predict_settings
from deblur.video.clips import VIDEO_SUFFIXES, clips_named_as_photos, is_media_file
from deblur.video.encode import Codec, video_suffix
from deblur.video.predict import ClipReport, VideoOptions, deblur_clip, finished_segment_files

if TYPE_CHECKING:
    from deblur.inference import Deblurrer
    from deblur.ways import Way

MEDIA_SUFFIXES = READ_SUFFIXES | VIDEO_SUFFIXES  # what a folder is searched for
ESTIMATING = "estimating the camera shake"  # what a photo's progress shows before its first model call, by default
# px: a photo whose longer side is under this is deblurred worse alone than as part of the photo it was cut from.
# The network's normalization measures the photo it is given, and a small crop's measure (a wall, some sky) misleads
# it. Measured with the shipped models on 44 square crops of the 11 real GOPRO dev frames at each size (2-core Zen
# 5), the default's mean gain deblurred alone against the same crops of the frame deblurred whole: 64 px -2.96 dB
# against +0.32 (mirrored out to 128 px; -3.86 to 64), 128 px -1.62 against +0.57, 256 px -0.86 against +0.60, 384 px
# +0.61 against +0.61.
SMALL_PHOTO = 384


class Progress(Protocol):
    """What `predict_files` reports as it goes (the CLI draws progress bars from it)."""

    def start(self, images: int) -> None: ...

    # `calls`: tiles times ensemble copies; the callable returned is told how many more calls are done. `waiting`:
    # what runs before the first call, when something does (the shake's estimate, most of a photo's time by default)
    def image(self, name: str, calls: int, waiting: str | None = None) -> Callable[[int], None]: ...

    # a clip of `frames` frames (None: unknown), `done` of them finished before; told how many more are done
    def clip(self, name: str, frames: int | None, done: int) -> Callable[[int], None]: ...

    def finished(self) -> None: ...  # after each input, written or failed


@dataclass
class PredictReport:
    model: Path
    written: list[Path] = field(default_factory=list)
    failed: list[tuple[Path, DeblurError]] = field(default_factory=list)  # the input, and why it failed
    clips: list[ClipReport] = field(default_factory=list)  # what each written clip took
    skipped: list[Path] = field(default_factory=list)  # outputs already there, whole (a finished earlier run's)
    lost: dict[str, list[Path]] = field(default_factory=dict)  # what the format could not hold of photos (lost_in)
    raw: list[Path] = field(default_factory=list)  # cameras' RAW files in the folders, left out (`InputPlan.raw`)
    small: list[Path] = field(default_factory=list)  # photos under SMALL_PHOTO deblurred by the network
    earlier: list[Path] = field(default_factory=list)  # folders of earlier runs' outputs, left out (`InputPlan`)

    def note_lost(self, loss: str, photo: Path) -> None:
        self.lost.setdefault(loss, []).append(photo)


@dataclass(frozen=True)
class Input:
    """One file to deblur: where it is, its name relative to what was given, photo or video, and its output."""

    source: Path
    name: Path
    kind: str
    target: Path


@dataclass
class InputPlan:
    """The inputs resolved once: what to deblur, what an earlier run finished, what was given and is not there."""

    todo: list[Input] = field(default_factory=list)
    done: list[Input] = field(default_factory=list)  # outputs already there, whole: skipped unless overwrite
    missing: list[Path] = field(default_factory=list)
    max_pixels: int = DEFAULT_MAX_PIXELS  # larger images and frames are refused, from their header
    raw: list[Path] = field(default_factory=list)  # cameras' RAW files in the folders given, left out
    earlier: list[Path] = field(default_factory=list)  # folders below those given holding earlier runs' outputs
    mark: bool = False  # whether the outputs' folder is marked as theirs, at the first written (`outputs_only`)


def input_kind(path: Path) -> str:
    """ "photo" or "video": a photo (`deblur.imageio.is_photo`: by its suffix or its header) is never a clip; else
    what FFmpeg opens is a clip; a file neither reads is judged by its suffix, so that its error speaks of what it
    claims to be."""
    if is_photo(path):
        return "photo"
    if is_media_file(path) or path.suffix.lower() in VIDEO_SUFFIXES:
        return "video"
    return "photo"


class NameClashError(SettingError):
    """Two inputs would be written to one output, or an output would replace an input."""


def check_output_folder(out: str | Path, inputs: Sequence[Path] = ()) -> None:
    """`check_folder` for --out, which also refuses a new folder named as a photo or clip (`--out sharp.jpg`):
    outputs go in it named after their inputs, and a folder called sharp.jpg is not what was meant; and refuses
    a folder of `inputs` itself: the results would lie among the photos, read as inputs by the next run. (An
    output folder inside a folder of inputs is left out of the search, see `find_images`.)"""
    out = Path(out)
    if out.is_dir() and out.resolve() in {item.resolve() for item in inputs if item.is_dir()}:
        raise SettingError(
            f"{out} is the folder the inputs are read from: the results would be mixed with them, and the next run "
            "would read them as inputs; give the results a folder of their own (e.g. --out deblurred)",
            settings=("out",),
        )
    if not out.exists() and out.suffix.lower() in MEDIA_SUFFIXES:
        raise SettingError(
            f"{out} looks like a photo's or clip's name, but --out is a folder: each output in it is named after "
            "its input (e.g. --out deblurred)",
            settings=("out",),
        )
    check_folder(out, "out")


def plan_inputs(
    inputs: Sequence[str | Path], write: WriteSettings | None = None, max_pixels: int = DEFAULT_MAX_PIXELS
) -> InputPlan:
    """Every input resolved once (files, and folders searched recursively): its kind, its output in `write.out`,
    and whether that output is already there. Refuses, before any work, inputs that are all folders without a
    photo or clip in them (a wrong folder is a mistake, not a success) and outputs that would clash."""
    # As `deblur_photos` takes them: one path as a string had been read letter by letter (its "." this folder),
    # and a max_pixels of NaN let any size through.
    inputs = ReadSettings(inputs, max_pixels).inputs
    write = WriteSettings() if write is None else write
    if not isinstance(write, WriteSettings):  # a folder's name had ended on "'str' object has no attribute 'out'"
        raise SettingError(f"write is {type(write).__name__}: give WriteSettings(out=folder, ...)", settings=("write",))
    urls = [str(item) for item in [*inputs, write.out] if "://" in str(item)]
    if urls:  # as paths they would name local folders "s3:/bucket/..."
        raise SettingError(
            f"{', '.join(urls)}: {'URLs' if len(urls) > 1 else 'a URL'}, which predict reads and writes only with "
            "--engine ray (without it, files and folders here)",
            settings=("engine",),
        )
    given = [Path(item) for item in inputs]
    check_output_folder(write.out, given)
    earlier: list[Path] = []
    found, raw = find_photos_and_raw(given, suffixes=MEDIA_SUFFIXES, skip=Path(write.out), outputs=earlier)
    if given and all(path.is_dir() for path in given) and not found:
        kinds = " ".join(sorted(MEDIA_SUFFIXES))
        where = ", ".join(str(path) for path in given)
        held = f"; it holds {raw_files(raw)}" if raw else ""
        held += f"; {earlier_outputs(earlier)}" if earlier else ""
        raise NothingFoundError(f"no photos or clips in {where} (searched all its folders for {kinds}){held}")
    plan = InputPlan(
        missing=[path for path, _ in found if not path.exists()],
        max_pixels=max_pixels,
        raw=raw,
        earlier=earlier,
        mark=outputs_only(Path(write.out)),
    )
    kinds = [(path, name, input_kind(path)) for path, name in found if path.exists()]
    outputs = output_paths(
        kinds,
        Path(write.out),
        write.fmt,
        keep_extension=write.keep_extension,
        codec=write.encoding.codec,
        side_by_side=write.side_by_side,
        longest=longest_name(Path(write.out)),
    )
    for path, name, kind in kinds:
        item = Input(path, name, kind, outputs[path])
        finished = not write.overwrite and _finished(item, write)
        (plan.done if finished else plan.todo).append(item)
    return plan


def output_paths(
    inputs: list[tuple[Path, Path, str]],
    out_dir: Path,
    fmt: str,
    *,
    keep_extension: bool = False,
    codec: Codec = "h264",
    side_by_side: bool = False,
    longest: int | None = None,
) -> dict[Path, Path]:
    """Where each input's result goes (photos as `fmt`, clips as video in `codec`'s container; with
    `keep_extension` the input's extension stays in the name: photo.webp -> photo.webp.png); refuses, listing every
    one at once, inputs that would write one file or an output over an input, each one's `side_by_side` included
    (a.png's is a_side_by_side.png, which an input of that name had found there and kept as its output), and output
    names over `longest` bytes (`deblur.files.longest_name`; None for a bucket's): they had failed on the OS's
    traceback."""
    outputs: dict[Path, Path] = {}
    taken: dict[Path, list[str]] = {}
    names: dict[Path, set[Path]] = {}  # the inputs' names (within the folders given) that each output is made from
    given = {path.resolve() for path, _, _ in inputs}
    over_inputs = []
    for path, name, kind in inputs:
        suffix = video_suffix(path, codec) if kind == "video" else f".{fmt}"
        target = out_dir / (name.with_name(name.name + suffix) if keep_extension else name.with_suffix(suffix))
        written = (
            {target: str(path), side_by_side_path(target): f"{path}'s side-by-side"}
            if side_by_side
            else {target: str(path)}
        )
        for output, source in written.items():
            if output.resolve() in given:
                over_inputs.append(f"{output} would overwrite an input")
            taken.setdefault(output, []).append(source)
            names.setdefault(output, set()).add(name)
        outputs[path] = target
    clashes = [
        f"{', '.join(sources)} would all be written to {target}"
        for target, sources in taken.items()
        if len(sources) > 1
    ]
    # x/a.png and y/a.png, given as files or as the folders x and y, have one name with or without its extension
    same_name = any(len(names[target]) < len(sources) for target, sources in taken.items())
    if over_inputs:
        # an input and another whose output it is (a.png -> a.jpg, beside a.jpg) name it twice: once is enough
        said = "; ".join(dict.fromkeys(over_inputs))
        raise NameClashError(f"{said}: choose another output folder", settings=("out",))
    too_long = [
        f"  - {sources[0]}: {output} ({size} bytes)"
        for output, sources in taken.items()
        if longest is not None and (size := len(os.fsencode(output.name))) > longest
    ]
    if too_long:
        listed = "\n".join(too_long)
        raise SettingError(
            f"{len(too_long)} output name(s) longer than the {longest} bytes a name can have in {out_dir} (its file "
            f"system's longest, less room for the hidden names of the work); nothing was deblurred:\n{listed}\n"
            "give those inputs shorter names"
        )
    if clashes:
        listed = "\n".join(f"  - {clash}" for clash in clashes)
        head = f"{len(clashes)} output name(s) taken by more than one input; nothing was deblurred:\n{listed}\n"
        if same_name:  # keep_extension, which had been the advice, names them alike too
            raise NameClashError(
                f"{head}inputs of one name from different folders: deblur each folder into its own output folder",
                settings=("out",),
            )
        raise NameClashError(
            f"{head}keep each input's extension in its output's name to tell them apart (keep_extension)",
            settings=("keep_extension",),
        )
    return outputs


def _finished(item: Input, write: WriteSettings) -> bool:
    """Whether the output is there, with its side-by-side when one is asked for (files appear atomically, so one
    that is there is whole; a folder there is no output)."""
    return item.target.is_file() and (not write.side_by_side or side_by_side_path(item.target).is_file())


def deblur_photos(
    settings: PredictSettings, progress: Progress | None = None, log: Callable[[str], None] = print
) -> PredictReport:
    """`deblur predict` in this process: resolve the inputs (before the model loads: missing files, folders with
    nothing in them and name clashes are refused at once), open the model and say which, and deblur every photo
    and clip into the output folder."""
    check_predict_settings(settings)
    log = given_log(log)
    if settings.run.engine is not None:  # it had run here, without a word, as if no engine were named
        raise SettingError(
            f"the settings name the {settings.run.engine!r} engine, and deblur_photos deblurs in this process: give "
            "them to deblur.scale.run.predict_at_scale, or leave the engine out",
            settings=("engine",),
        )
    plan = plan_inputs(settings.read.inputs, settings.write, settings.read.max_pixels)
    if plan.missing:
        missing = ", ".join(str(path) for path in plan.missing)
        raise ImageReadError(
            f"no such file or folder: {missing}; nothing was deblurred{_out_hint(settings.read.inputs, plan.missing)}"
        )
    from deblur.inference import open_deblurrer  # Keras: not for `--engine` planning, whose workers deblur

    kinds = {item.kind for item in plan.todo + plan.done}
    calls = ("start", "image", "finished") + (("clip",) if any(item.kind == "video" for item in plan.todo) else ())
    check_reporter(progress, calls, "deblur.predict.Progress")
    for unused in settings.write.unused_for(kinds) if kinds else []:
        log(Hint(unused))
    deblurrer, _ = open_deblurrer(settings.deblur, log=log)
    return predict_files(plan, deblurrer, settings.write, progress, log=log)


def _out_hint(inputs: Sequence[str | Path], missing: list[Path]) -> str:
    """`deblur predict photo.jpg results`, as `cp` is called, names a new output folder as the last input."""
    last = Path(inputs[-1])
    if len(inputs) < 2 or last not in missing or last.suffix.lower() in MEDIA_SUFFIXES:
        return ""
    return f" (if {last} is meant as the output folder: it is given with --out, as in --out {last})"


def predict_files(
    plan: InputPlan,
    deblurrer: Deblurrer,
    write: WriteSettings | None = None,
    progress: Progress | None = None,
    log: Callable[[str], None] = print,
) -> PredictReport:
    """Deblur every input `plan` has to do into its output. A file that fails (missing ones among them) is
    reported in the result and the others go on; outputs already there are counted as skipped."""
    write = write or WriteSettings()
    report = PredictReport(deblurrer.model_file, raw=list(plan.raw), earlier=list(plan.earlier))
    report.failed = [(path, ImageReadError(f"{path}: no such file")) for path in plan.missing]
    report.skipped = [item.target for item in plan.done]
    if progress and plan.todo:  # no bar at all when every input was missing
        progress.start(len(plan.todo))
    for item in plan.todo:
        try:
            if item.kind == "video":
                clip = predict_clip(item, deblurrer, write, plan.max_pixels, progress, log)
                report.clips.append(clip)
                report.written.append(clip.target)
            else:
                lost, small = report.note_lost, report.small.append
                report.written.append(predict_one(item, deblurrer, write, plan.max_pixels, progress, lost, small))
            if plan.mark and len(report.written) == 1:
                mark_outputs(Path(write.out))
        except OutputExistsError as err:
            if _finished(item, write):  # another run (one beside this) finished it since the plan was made
                report.skipped.append(item.target)
            else:
                report.failed.append((item.source, err))
        except ImageReadError as err:
            report.failed.append((item.source, err))
        except KeyboardInterrupt:
            raise _stopped(item, report, plan) from None
        if progress:
            progress.finished()
    return report


def _stopped(item: Input, report: PredictReport, plan: InputPlan) -> Interrupted:
    """What a stopped predict kept: the outputs written (which the same command skips) and a clip's segments."""
    work = work_folder(item.target)
    segments = len(finished_segment_files(work)) if item.kind == "video" and work.is_dir() else 0
    kept = f"; {segments} finished segment(s) of {item.source} are kept in {work}" if segments else ""
    return Interrupted(
        f"stopped: {len(report.written)} of {len(plan.todo)} output(s) written{kept}; the same command goes on from "
        "there"
    )


def predict_clip(
    item: Input,
    deblurrer: Deblurrer,
    write: WriteSettings,
    max_pixels: int = DEFAULT_MAX_PIXELS,
    progress: Progress | None = None,
    log: Callable[[str], None] = print,
) -> ClipReport:
    """Deblur one clip into its output (and its side-by-side), resumably (deblur.video.predict); an output there
    already raises OutputExistsError unless `write` allows overwriting."""
    strip, side_by_side = write.strip_metadata, write.side_by_side
    video = VideoOptions(write.encoding, max_pixels, strip_metadata=strip, side_by_side=side_by_side)
    return deblur_clip(item.source, item.target, deblurrer, video, progress, log, overwrite=write.overwrite)


def predict_one(
    item: Input,
    deblurrer: Deblurrer,
    write: WriteSettings,
    max_pixels: int = DEFAULT_MAX_PIXELS,
    progress: Progress | None = None,
    on_lost: Callable[[str, Path], None] | None = None,
    on_small: Callable[[Path], None] | None = None,
) -> Path:
    """Deblur one photo file into its output (and its side-by-side); returns the output (the side-by-side where only
    it was written). An input that cannot be used raises ImageReadError naming it, outputs all there already
    OutputExistsError; nothing is written for it. `on_lost` is told what of the photo its output format cannot hold
    (`lost_in`), and the photo; `on_small`, a photo under SMALL_PHOTO that the network deblurred."""
    target, pair_target = item.target, side_by_side_path(item.target)
    # one of the two there (a run stopped between them, or one without --side-by-side before) is kept
    missing = to_write((target, pair_target) if write.side_by_side else (target,), overwrite=write.overwrite)
    with clips_named_as_photos(item.source):
        photo = read_photo(item.source, max_pixels=max_pixels)
    height, width = photo.rgb.shape[:2]
    check_min_side(width, height, str(item.source))
    write.check_holds(width, height, str(item.source))
    waiting = ESTIMATING if progress and deblurrer.estimates_shake() else None
    on_tiles = progress.image(item.source.name, deblurrer.calls(height, width), waiting) if progress else None
    restored = deblurrer(photo.rgb, on_tiles)
    if target in missing:
        write_photo(target, restored, photo, write.photo)
    for loss in lost_in(write.fmt, photo) if on_lost else ():
        on_lost(loss, item.source)
    if on_small and is_small(height, width, deblurrer.way(), deblurrer.strength):
        on_small(item.source)
    if pair_target in missing:
        side_by_side = np.concatenate([photo.rgb, restored], axis=1)
        write_photo(pair_target, side_by_side, replace(photo, alpha=None), write.photo)
    return missing[0]


def earlier_outputs(folders: Sequence[Path | str]) -> str:
    """What is said of the folders of earlier runs' outputs a search left out (`deblur.imageio.OUTPUTS_MARK`)."""
    return (
        f"left out {len(folders)} folder(s) of an earlier run's outputs ({first_few(folders)}; each holds a "
        f"{OUTPUTS_MARK} file), not to deblur them twice; give one by name to deblur what is in it"
    )


def is_small(height: int, width: int, way: Way, strength: float) -> bool:
    """Whether a photo of this size, deblurred `way` at `strength`, is one `small_photos_hint` speaks of: under
    SMALL_PHOTO, through a network (at strength 0, which returns the photo as it is, it is deblurred by none)."""
    return max(height, width) < SMALL_PHOTO and bool(way.model_channels) and strength > 0


def small_photos_hint(photos: Sequence[Path | str]) -> Hint:
    """What is said of photos under SMALL_PHOTO that the network deblurred: worse alone than within a larger photo.
    A photo is a path, or a location on an engine (a URL too: named by its last part)."""
    names = ", ".join(str(path).rsplit("/", 1)[-1] if isinstance(path, str) else path.name for path in photos[:3])
    names += f" and {len(photos) - 3} more" if len(photos) > 3 else ""
    return Hint(
        f"{len(photos)} photo(s) under {SMALL_PHOTO} px a side ({names}): the network measures the whole photo it is "
        "given, and a small one cut from a larger photo misleads it (on 256 px crops of real video frames the default "
        "lost 0.9 dB where the frames deblurred whole gained 0.6); if you have the photo it was cut from, deblur that "
        "and crop after"
    )
