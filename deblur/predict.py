"""`deblur predict`: photos and clips, files in and out, with the model opened once.

Each input is judged by its content: what Pillow reads is a photo (written as `--format`), what FFmpeg opens with
a moving video stream is a clip (written as video: deblur.video). A file that fails is reported by name and the
others go on; nothing is written for it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

import numpy as np

from deblur.errors import DeblurError, OutputExistsError, SettingError
from deblur.imageio import (
    DEFAULT_MAX_PIXELS,
    DEFAULT_QUALITY,
    READ_SUFFIXES,
    ImageReadError,
    WriteOptions,
    find_images,
    flattens_alpha,
    is_photo,
    read_photo,
    write_photo,
)
from deblur.inference import Deblurrer, check_min_side, open_deblurrer
from deblur.runtime import DEFAULT_RUNTIME
from deblur.shake import DEFAULT_METHOD
from deblur.strength import DEFAULT_STRENGTH
from deblur.tiling import DEFAULT_OVERLAP, DEFAULT_TILE
from deblur.video.clips import VIDEO_SUFFIXES, is_media_file
from deblur.video.encode import Encoding, video_suffix
from deblur.video.predict import ClipReport, VideoOptions, deblur_clip


class Progress(Protocol):
    """What `predict_files` reports as it goes (the CLI draws progress bars from it)."""

    def start(self, images: int) -> None: ...

    # `calls`: tiles times ensemble copies; the callable returned is told how many more calls are done
    def image(self, name: str, calls: int) -> Callable[[int], None]: ...

    # a clip of `frames` frames (None: unknown), `done` of them finished before; told how many more are done
    def clip(self, name: str, frames: int | None, done: int) -> Callable[[int], None]: ...

    def finished(self) -> None: ...  # after each input, written or failed


@dataclass
class PredictReport:
    model: Path
    written: list[Path] = field(default_factory=list)
    failed: list[tuple[Path, DeblurError]] = field(default_factory=list)  # the input, and why it failed
    clips: list[ClipReport] = field(default_factory=list)  # what each written clip took
    ways: dict[Path, str] = field(default_factory=dict)  # under --method auto: each written photo's way
    # the photos auto left to the network as sharp somewhere, but not by much (`deblur.shake.choose.MAYBE_SHAKEN`)
    maybe_shaken: list[Path] = field(default_factory=list)
    skipped: list[Path] = field(default_factory=list)  # outputs already there, whole (a finished earlier run's)
    flattened: list[Path] = field(default_factory=list)  # photos whose transparency the format could not keep


@dataclass(frozen=True)
class PredictOptions:
    """How `predict_files` writes its results."""

    fmt: str = "png"  # photos: one of WRITE_FORMATS
    overwrite: bool = False  # replace existing outputs; otherwise such an input fails and the others go on
    side_by_side: bool = False  # photos: also write <name>_side_by_side: blurry | deblurred
    max_pixels: int = DEFAULT_MAX_PIXELS  # refuse larger images and frames (a decompression-bomb guard)
    encoding: Encoding = Encoding()  # clips: the video codec and quality
    quality: int = DEFAULT_QUALITY  # photos written as JPEG or WebP
    strip_metadata: bool = False  # photos: leave out EXIF (camera, date, place) and the ICC profile
    # outputs named with the input's extension too (photo.webp -> photo.webp.png), so inputs that differ only by
    # it do not clash
    keep_extension: bool = False

    def __post_init__(self) -> None:
        self.write  # checks the format and quality  # noqa: B018

    @property
    def write(self) -> WriteOptions:
        return WriteOptions(self.fmt, self.quality, self.strip_metadata)


def input_kind(path: Path) -> str:
    """ "photo" or "video": a photo's suffix (or a file Pillow reads) is a photo, never a clip, even where FFmpeg
    would open it as one frame (a HEIC photo once became a one-frame video); else what FFmpeg opens is a clip; a
    file neither reads is judged by its suffix, so that its error speaks of what it claims to be."""
    if path.suffix.lower() in READ_SUFFIXES or is_photo(path):
        return "photo"
    if is_media_file(path) or path.suffix.lower() in VIDEO_SUFFIXES:
        return "video"
    return "photo"


class NameClashError(SettingError):
    """Two inputs would be written to one output, or an output would replace an input."""


def output_paths(
    inputs: list[tuple[Path, Path, str]], out_dir: Path, fmt: str, *, keep_extension: bool = False
) -> dict[Path, Path]:
    """Where each input's result goes (photos as `fmt`, clips as video; with `keep_extension` the input's
    extension stays in the name: photo.webp -> photo.webp.png); refuses, listing every one at once, inputs that
    would write one file or an output over an input."""
    outputs: dict[Path, Path] = {}
    taken: dict[Path, list[Path]] = {}
    given = {path.resolve() for path, _, _ in inputs}
    over_inputs = []
    for path, name, kind in inputs:
        suffix = video_suffix(path) if kind == "video" else f".{fmt}"
        target = out_dir / (name.with_name(name.name + suffix) if keep_extension else name.with_suffix(suffix))
        if target.resolve() in given:
            over_inputs.append(f"{target} would overwrite an input")
        taken.setdefault(target, []).append(path)
        outputs[path] = target
    clashes = [
        f"{', '.join(str(p) for p in sources)} would all be written to {target}"
        for target, sources in taken.items()
        if len(sources) > 1
    ]
    if over_inputs:
        raise NameClashError("; ".join(over_inputs) + ": choose another output folder", settings=("out",))
    if clashes:
        listed = "\n".join(f"  - {clash}" for clash in clashes)
        raise NameClashError(
            f"{len(clashes)} output name(s) taken by more than one input; nothing was deblurred:\n{listed}\n"
            "keep each input's extension in its output's name to tell them apart (keep_extension)",
            settings=("keep_extension",),
        )
    return outputs


def deblur_photos(
    inputs: list[Path],
    out_dir: Path,
    *,
    model: str | Path | None = None,
    precision: str = "auto",
    tile: int = DEFAULT_TILE,
    overlap: int = DEFAULT_OVERLAP,
    ensemble: int = 1,
    strength: float = DEFAULT_STRENGTH,
    runtime: str = DEFAULT_RUNTIME,
    method: str = DEFAULT_METHOD,
    options: PredictOptions = PredictOptions(),
    progress: Progress | None = None,
    log: Callable[[str], None] = print,
) -> PredictReport:
    """`deblur predict`: choose and load the model (`model` as `deblur.paths.choose_model` takes it), say which,
    and deblur every photo and clip in `inputs` into `out_dir`."""
    # Before the model loads (seconds, for nothing): folders with nothing in them, missing files, name clashes.
    check_found(inputs)
    check_missing(inputs)
    output_paths(_kinds(inputs), out_dir, options.fmt, keep_extension=options.keep_extension)
    deblurrer, chosen = open_deblurrer(
        model,
        precision=precision,
        tile=tile,
        overlap=overlap,
        ensemble=ensemble,
        strength=strength,
        runtime=runtime,
        method=method,
        log=log,
    )
    return predict_files(inputs, deblurrer, chosen.path, out_dir, options, progress, log=log)


def check_missing(inputs: list[Path]) -> None:
    """Refuse inputs that do not exist, naming every one: a mistyped path, said before any work."""
    missing = [str(path) for path in inputs if not path.exists()]
    if missing:
        raise ImageReadError(f"no such file or folder: {', '.join(missing)}; nothing was deblurred")


def _kinds(inputs: list[Path]) -> list[tuple[Path, Path, str]]:
    """(file, name, photo or video) of every existing input file, folders searched."""
    found = find_images(inputs, suffixes=READ_SUFFIXES | VIDEO_SUFFIXES)
    return [(path, name, input_kind(path)) for path, name in found if path.exists()]


class NothingFoundError(DeblurError, FileNotFoundError):
    """The inputs name folders only, and none holds a photo or a clip."""


def check_found(inputs: list[Path]) -> None:
    """Refuse inputs that are all folders without a photo or clip in them: a run that deblurs nothing is a mistake
    (a wrong folder, or files of another kind), not a success."""
    if (
        inputs
        and all(path.is_dir() for path in inputs)
        and not find_images(inputs, suffixes=READ_SUFFIXES | VIDEO_SUFFIXES)
    ):
        kinds = " ".join(sorted(READ_SUFFIXES | VIDEO_SUFFIXES))
        folders = ", ".join(str(path) for path in inputs)
        raise NothingFoundError(f"no photos or clips in {folders} (searched all its folders for {kinds})")


def predict_files(
    inputs: list[Path],
    deblurrer: Deblurrer,
    model_path: Path,
    out_dir: Path,
    options: PredictOptions = PredictOptions(),
    progress: Progress | None = None,
    log: Callable[[str], None] = print,
) -> PredictReport:
    """Deblur every photo and clip in `inputs` (files, or folders searched recursively) into `out_dir`.

    A file that fails is reported in the result and the others go on. Outputs that are already there (they only
    ever appear whole) are skipped and counted, unless `options.overwrite`: running a finished job again does
    nothing, as with `--engine ray`.
    """
    found = find_images(inputs, suffixes=READ_SUFFIXES | VIDEO_SUFFIXES)
    report = PredictReport(model_path)
    for path, _ in found:
        if not path.exists():
            report.failed.append((path, ImageReadError(f"{path}: no such file")))
    found = _kinds(inputs)
    outputs = output_paths(found, out_dir, options.fmt, keep_extension=options.keep_extension)
    if not options.overwrite:
        done = [(path, name, kind) for path, name, kind in found if finished(outputs[path], options, kind)]
        report.skipped = [outputs[path] for path, _, _ in done]
        found = [item for item in found if item not in done]
    if progress and found:  # no bar at all when every input was missing
        progress.start(len(found))
    for path, _, kind in found:
        try:
            if kind == "video":
                clip = predict_clip(path, outputs[path], deblurrer, options, progress, log)
                report.clips.append(clip)
                report.written.append(clip.target)
            else:
                report.written.append(
                    predict_one(path, outputs[path], deblurrer, options, progress, on_flattened=report.flattened.append)
                )
                if deblurrer.last_choice:
                    report.ways[report.written[-1]] = deblurrer.last_choice
                if deblurrer.last_maybe_shaken:
                    report.maybe_shaken.append(path)
        except (ImageReadError, OutputExistsError) as err:
            report.failed.append((path, err))
        if progress:
            progress.finished()
    return report


def finished(target: Path, options: PredictOptions, kind: str) -> bool:
    """Whether `target` is there whole, with a photo's side-by-side when one is asked for (files appear
    atomically, so one that is there is whole)."""
    pair = target.with_name(f"{target.stem}_side_by_side{target.suffix}")
    return target.exists() and (kind == "video" or not options.side_by_side or pair.exists())


def predict_clip(
    path: Path,
    target: Path,
    deblurrer: Deblurrer,
    options: PredictOptions,
    progress: Progress | None = None,
    log: Callable[[str], None] = print,
) -> ClipReport:
    """Deblur one clip into the video `target`, resumably (deblur.video.predict)."""
    if not options.overwrite and target.exists():
        raise OutputExistsError(f"{target}: exists; allow overwriting to replace it", settings=("overwrite",))
    video = VideoOptions(encoding=options.encoding, max_pixels=options.max_pixels)
    return deblur_clip(path, target, deblurrer, video, progress, log)


def predict_one(
    path: Path,
    target: Path,
    deblurrer: Deblurrer,
    options: PredictOptions,
    progress: Progress | None = None,
    *,
    on_flattened: Callable[[Path], None] | None = None,
) -> Path:
    """Deblur one photo file into `target` (and its side-by-side); returns `target`. An input that cannot be
    used raises ImageReadError naming it, an existing output OutputExistsError; nothing is written for it.
    `on_flattened` is told of a photo whose transparency the output format cannot hold (it is flattened onto
    white)."""
    pair_target = target.with_name(f"{target.stem}_side_by_side{target.suffix}")
    if not options.overwrite and (target.exists() or (options.side_by_side and pair_target.exists())):
        raise OutputExistsError(f"{target}: exists; allow overwriting to replace it", settings=("overwrite",))
    photo = read_photo(path, max_pixels=options.max_pixels)
    height, width = photo.rgb.shape[:2]
    check_min_side(width, height, str(path))
    on_tiles = progress.image(path.name, deblurrer.calls(height, width)) if progress else None
    restored = deblurrer(photo.rgb, on_tiles)
    write_photo(target, restored, photo, options.write)
    if on_flattened and flattens_alpha(photo, options.fmt):
        on_flattened(path)
    if options.side_by_side:
        side_by_side = np.concatenate([photo.rgb, restored], axis=1)
        write_photo(pair_target, side_by_side, replace(photo, alpha=None), options.write)
    return target
