"""Synthetic training pairs from any folder of sharp photos: `deblur data synth`.

Each photo is blurred `pairs_per_photo` times with random camera-shake kernels (`deblur.data.kernels`, the code
the embedded demo uses) and written in GOPRO's layout, one "sequence" per photo, with each kernel saved beside its pair:

    OUT/train/<photo>/blur/000.png   OUT/train/<photo>/sharp/000.png   OUT/train/<photo>/kernel/000.npy
    OUT/test/<photo>/...             (a share of the photos, never of one photo's pairs, is held out)

`blurry = clip(round(255 * (reflect-padded sharp/255 convolved with kernel + noise)))`, so with the kernel file a
pair can be reproduced (exactly, when noise is 0).

The pairs are made in a hidden folder beside OUT, renamed to OUT when every photo's are there; a run that is stopped
goes on from the photos it finished when the same command is run again (a photo's pairs depend only on the recipe
and the photo's name, so the result is the one an unstopped run gives):

    .OUT.parts/recipe.json        what the pairs are made with: another recipe starts over
    .OUT.parts/train/<photo>/...  finished photos (each renamed into place when its pairs are all written, with
                                  the size and time of the photo it was made from: a photo changed since is
                                  made again)
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path

import numpy as np
from PIL import Image

from deblur.config import SMALLEST_MAX_SIDE, ConfigError, SynthConfig, check_recipe, load_config
from deblur.console import progress_bar
from deblur.data.pairs import DatasetError, held_out_count, problem_listing
from deblur.data.writer import write_pairs
from deblur.errors import Interrupted, SettingError, check_switches, given_log, is_real_number, is_whole_number
from deblur.files import (
    as_path,
    atomic_write_text,
    check_outside,
    check_parent,
    file_stamp,
    fitted_name,
    full_disk_named,
    one_run_at_a_time,
    read_manifest,
    start_work,
    work_folder,
)
from deblur.imageio import ImageReadError, find_photos_and_raw, first_few, peek_photo, raw_files, read_photo

PARTS_FORMAT = 1  # the work folder's layout and the pairs' recipe: another version's parts start over
RECIPE = "recipe.json"  # in the work folder: what the pairs are made with
ANOTHER_RECIPE = "pairs of an earlier run with another recipe or another version of deblur"
STAMP = ".photo.json"  # in a finished photo's folder while the work goes on: the photo it was made from
# The longest name of a photo's folder of pairs: room, in the usual 255 bytes, for `.<name>.<process id>.part` beside
# it while it is made, whatever the photo is called (a 245-byte name had failed on the OS's traceback)
SEQUENCE_NAME_BYTES = 200


@dataclass
class SynthReport:
    out: Path
    train_photos: int
    val_photos: int
    pairs: int


def synth_recipe(config: str | Path | None = None, **overrides) -> SynthConfig:
    """The blur recipe (`data.synth`) of a config, by name or file, or the built-in one when None, with the
    `overrides` that are not None applied (and checked)."""
    base = load_config(config).data.synth if config else SynthConfig()
    given = {key: value for key, value in overrides.items() if value is not None}
    try:
        return dataclasses.replace(base, **given)
    except ConfigError as err:  # the settings it names that were given, for the command line's flags
        named = tuple(key for key in dict.fromkeys(re.findall(r"data\.synth\.(\w+)", str(err))) if key in given)
        raise ConfigError(str(err), settings=named) from None


def _outputs_left_out(folders: list[Path]) -> str:
    """What is said of the folders of `deblur predict`'s outputs under --src (`deblur.imageio.OUTPUTS_MARK`)."""
    return (
        f"left out {len(folders)} folder(s) of deblur predict's outputs ({first_few(folders)}): deblurred photos are "
        "not the sharp photos pairs are made from, and would repeat their originals, across the split too; give one "
        "as --src to use it"
    )


def synthesize_pairs(
    src: Path,
    out: Path,
    synth: SynthConfig | None = None,
    *,
    val_fraction: float = 0.1,
    max_side: int | None = None,
    progress: bool = True,
    log: Callable[[str], None] = print,
) -> SynthReport:
    """Make the pairs; `out` appears complete or not at all, and is never an existing folder. A stopped run goes
    on from the photos it finished (the module's docstring). `synth` None is the default recipe, `SynthConfig()`."""
    src, out = as_path(src, "the photos' folder", "src"), as_path(out, "the output folder", "out")
    synth = synth or SynthConfig()
    check_recipe(synth)
    check_switches(progress=progress)  # "no" had drawn bars: a string is true
    log = given_log(log)
    if not src.is_dir():
        raise DatasetError(f"{src} is not a folder", settings=("src",))
    check_parent(out, "out")
    _refuse_existing(out)
    check_outside(out, src, ("out", "src"))
    if not (is_real_number(val_fraction) and 0.0 <= val_fraction < 1.0):  # "0.1" had ended on a TypeError
        raise SettingError(f"val_fraction must be in [0, 1); got {val_fraction!r}", settings=("val_fraction",))
    # 0 and NaN had been read as no limit, -5 and 10.5 had refused every photo as too small
    if max_side is not None and not (is_whole_number(max_side) and max_side >= SMALLEST_MAX_SIDE):
        raise SettingError(
            f"max_side must be a whole number of px, at least {SMALLEST_MAX_SIDE} (or None: the photos' own size); "
            f"got {max_side!r}",
            settings=("max_side",),
        )
    earlier: list[Path] = []
    found, raw = find_photos_and_raw([src], outputs=earlier)
    photos = [path for path, _ in found]
    if not photos:
        held = f"; it holds {raw_files(raw)}" if raw else ""
        held += f"; {_outputs_left_out(earlier)}" if earlier else ""
        raise DatasetError(f"no photos under {src} (JPEG, PNG, BMP, WebP or TIFF){held}")
    if raw:  # a camera's RAW + JPEG pairs: the JPEGs are used
        log(f"left out {raw_files(raw)}")
    if earlier:
        log(_outputs_left_out(earlier))
    names = _sequence_names(src, photos)
    order = np.random.default_rng(synth.photo_seed).permutation(len(photos))
    held_out = held_out_count(len(photos), val_fraction)
    val_indices = set(order[:held_out].tolist())
    # A kernel must be small against the photo; with log_length it never passes 12% of the photo's long side.
    min_side = int(np.ceil(synth.min_length if synth.log_length else synth.max_length)) * 4
    # From the headers, before any work: a photo found too small or animated after an hour of pairs wastes the hour.
    problems = [problem for path in photos if (problem := _size_problem(path, max_side, min_side, synth))]
    if problems:
        raise DatasetError(
            f"{len(problems)} photo(s) in {src} cannot be used; nothing was written:\n{problem_listing(problems)}"
        )
    work = work_folder(out)
    with one_run_at_a_time(work, out, "out"), full_disk_named(out, work):
        _refuse_existing(out)  # again, with the lock held: another run may just have finished it
        start_work(work, RECIPE, _recipe(src, synth, max_side), lambda _: ANOTHER_RECIPE, log)
        folders = [work / ("test" if i in val_indices else "train") / names[i] for i in range(len(photos))]
        jobs = [
            (photos[i], folders[i], names[i], synth, max_side, min_side)
            for i in range(len(photos))
            if not _finished(folders[i], photos[i])
        ]
        if len(jobs) < len(photos):
            log(f"going on from {work}: {len(photos) - len(jobs)} of {len(photos)} photos' pairs were made before")
        workers = _workers(synth, len(jobs))
        try:
            # A Pool, not an executor: leaving it (Ctrl-C, SIGTERM) terminates its processes, which would otherwise
            # finish their photos beside the next run.
            with get_context("spawn").Pool(workers) if workers > 1 else _Inline() as pool:
                done = pool.imap(_photo_pairs, jobs)
                for problem in progress_bar(done, total=len(jobs), desc="photos", unit="photo", disable=not progress):
                    if problem:
                        problems.append(problem)
        except KeyboardInterrupt:
            finished = sum(folder.is_dir() for folder in folders)
            raise Interrupted(
                f"stopped: {finished} of {len(photos)} photos' pairs are kept in {work}; the same command goes on "
                "from them"
            ) from None
        if problems:
            kept = ""
            if any(folder.is_dir() for folder in folders):
                kept = f" (the other photos' pairs are kept in {work} for the next run)"
            else:
                shutil.rmtree(work)
            raise DatasetError(
                f"{len(problems)} photo(s) in {src} cannot be used; nothing was written to {out}{kept}:\n"
                f"{problem_listing(problems)}"
            )
        _finish_work(work, out, set(folders))
    report = SynthReport(out, len(photos) - held_out, held_out, len(photos) * synth.pairs_per_photo)
    alone = "; validation scores the one photo's own pairs: give two or more to hold one out"
    alone = alone if len(photos) == 1 else ""
    log(f"wrote {report.pairs} pairs from {len(photos)} photos to {out} ({held_out} photo(s) held out in test/{alone})")
    return report


def _refuse_existing(out: Path) -> None:
    if out.exists():
        raise DatasetError(
            f"{out} already exists: choose a new folder (nothing is written into an old one)", settings=("out",)
        )


def _recipe(src: Path, synth: SynthConfig, max_side: int | None) -> dict:
    """What a photo's pairs are made from, besides the photo: a run with other values starts over."""
    return {"format": PARTS_FORMAT, "src": str(src.resolve()), "max_side": max_side, "synth": dataclasses.asdict(synth)}


def _finished(folder: Path, photo: Path) -> bool:
    """Whether a photo's pairs are all there, made from the photo as it is now, in `folder` or in the other
    split's (where the photo was held out, or not, by an earlier run over other photos: its pairs are the same, so
    they are moved). Pairs of a photo changed since are removed."""
    other = folder.parent.parent / ("train" if folder.parent.name == "test" else "test") / folder.name
    for found in (folder, other):
        if found.is_dir() and _read_stamp(found) != file_stamp(photo):
            shutil.rmtree(found)
    if other.is_dir() and not folder.is_dir():
        folder.parent.mkdir(exist_ok=True)
        os.rename(other, folder)
    return folder.is_dir()


def _read_stamp(folder: Path) -> object:
    return read_manifest(folder / STAMP)


def _finish_work(work: Path, out: Path, folders: set[Path]) -> None:
    """`work` renamed to `out`, without what is not the pairs of this run's photos (the recipe, the pairs of photos
    taken out of the folder since an earlier run, a photo's unfinished folder)."""
    (work / RECIPE).unlink()
    for split in (work / "train", work / "test"):
        for folder in split.iterdir() if split.is_dir() else ():
            if folder not in folders:
                shutil.rmtree(folder)
            else:
                (folder / STAMP).unlink()
        if split.is_dir() and not any(split.iterdir()):
            split.rmdir()
    os.rename(work, out)


def _size_problem(path: Path, max_side: int | None, min_side: int, synth: SynthConfig) -> str | None:
    """What is wrong with a photo that its header tells (its size, scaled to `max_side`; an animation, an empty
    file, a JPEG too short for its pixels, not a photo at all), or None. What only decoding finds (a PNG cut short)
    is left to the reading."""
    try:
        width, height = peek_photo(path, str(path))
    except ImageReadError as err:  # the reading would refuse it as well, after the other photos' work
        return str(err)
    scale = min(1.0, max_side / max(width, height)) if max_side else 1.0
    if min(round(width * scale), round(height * scale)) < min_side:
        length = synth.min_length if synth.log_length else synth.max_length
        return f"{path}: {width}x{height} is too small for blur of {length:g} px (at least {min_side} px a side)"
    return None


def _photo_pairs(job: tuple[Path, Path, str, SynthConfig, int | None, int]) -> str | None:
    """Write one photo's pairs; what is wrong with the photo, or None."""
    path, folder, name, synth, max_side, min_side = job
    try:
        sharp = _load(path, max_side)
    except ImageReadError as err:
        return str(err)
    if min(sharp.shape[:2]) < min_side:  # its header said otherwise (an EXIF turn does not change the short side)
        return f"{path}: {sharp.shape[1]}x{sharp.shape[0]} is too small (at least {min_side} px a side)"
    # Written aside (a folder of this process's own: one a killed run left is removed when the work is done) and
    # renamed into place: a folder under the photo's name is its pairs, whole.
    part = folder.with_name(f".{folder.name}.{os.getpid()}.part")
    shutil.rmtree(part, ignore_errors=True)
    try:
        # One stream per photo: its pairs do not depend on which other photos are in the folder, nor on the workers.
        write_pairs(sharp, part, synth, np.random.default_rng([synth.seed, zlib.crc32(name.encode())]))
        atomic_write_text(part / STAMP, json.dumps(file_stamp(path)))
    except BaseException:  # a stop, a full disk: the half-made photo had kept, until the next run, room it needs
        shutil.rmtree(part, ignore_errors=True)
        raise
    try:
        os.rename(part, folder)
    except OSError:
        if not folder.is_dir():
            raise
        shutil.rmtree(part)  # a killed run's process, still going, made the same pairs first
    return None


def _workers(synth: SynthConfig, photos: int) -> int:
    """Processes for the photos: all cores when each pair is deconvolved (seconds a pair, single-threaded), else
    one (a pair takes milliseconds; starting processes would cost more)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(cores, photos)) if synth.deconvolve else 1


class _Inline:
    """The pool's `imap` in this process."""

    def __enter__(self) -> _Inline:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def imap(self, function, items):  # noqa: ANN001, ANN201 - the pool's signature
        return map(function, items)


def _load(path: Path, max_side: int | None) -> np.ndarray:
    """A photo as HWC RGB uint8 (EXIF orientation applied), scaled down so its longer side is <= max_side."""
    photo = read_photo(path)
    rgb = np.round(photo.rgb * 255).astype(np.uint8)
    if max_side and max(rgb.shape[:2]) > max_side:
        scale = max_side / max(rgb.shape[:2])
        size = (max(1, round(rgb.shape[1] * scale)), max(1, round(rgb.shape[0] * scale)))
        rgb = np.asarray(Image.fromarray(rgb).resize(size, Image.Resampling.LANCZOS))
    return rgb


def _sequence_names(src: Path, photos: list[Path]) -> list[str]:
    """A folder name per photo, from its path under `src` (subfolders joined by '__'), unique, and short enough
    for the hidden names made beside it (`SEQUENCE_NAME_BYTES`)."""
    names = []
    for path in photos:
        rel = path.relative_to(src).with_suffix("")
        name = "__".join(rel.parts)
        if name in names:  # a.jpg and a.png
            name = f"{name}__{path.suffix.lstrip('.').lower()}"
        names.append(name)
    return [fitted_name(name, SEQUENCE_NAME_BYTES) for name in names]
