"""Checking a downloaded GOPRO_Large and, where needed, arranging it into the layout the loader reads.

GOPRO_Large (Nah, Kim and Lee, CVPR 2017) unpacks as `GOPRO_Large/{train,test}/<sequence>/{blur,blur_gamma,sharp}`
with 2103 training and 1111 test pairs of 1280x720 PNGs. The loader reads that as it is. Arranging is needed for
the gamma-corrected blur (`blur_gamma`, which the loader would not see) and for repackaged copies that name the
folders `input/` and `target/`; it makes a new folder of symbolic links, so nothing is copied or moved.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from deblur.data.pairs import IMAGE_SUFFIXES, DatasetError, Pair, check_pairs
from deblur.errors import check_switches
from deblur.files import atomic_dir, check_parent

SPLITS = ("train", "test")
PUBLISHED_PAIRS = {"train": 2103, "test": 1111}
BLUR_FOLDERS = ("blur", "blur_gamma")


@dataclass(frozen=True)
class Source:
    split: str
    sequence: str  # "" for a split stored flat (input/ + target/)
    blurry: Path
    sharp: Path


@dataclass
class GoproCheck:
    root: Path  # the folder holding train/ and test/
    sources: list[Source] = field(default_factory=list)
    pairs: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    needs_arranging: bool = False


def find_root(path: Path) -> Path:
    """The folder with train/ and test/: `path` itself or one folder inside it (zips often add a level)."""
    path = Path(path)
    if not path.is_dir():
        raise DatasetError(f"{path} does not exist or is not a folder")
    candidates = [path] + sorted(p for p in path.iterdir() if p.is_dir())
    for candidate in candidates:
        if all((candidate / split).is_dir() for split in SPLITS):
            return candidate
    raise DatasetError(f"{path}: no train/ and test/ folders in it or one level down; is this GOPRO_Large?")


def check_gopro(path: Path, blur: str = "blur", *, progress: bool = True) -> GoproCheck:
    """Every sequence of both splits checked: partners present, images readable, sizes equal."""
    if blur not in BLUR_FOLDERS:
        raise DatasetError(f"blur must be one of {', '.join(BLUR_FOLDERS)}; got {blur!r}")
    check_switches(progress=progress)  # "no" had drawn bars: a string is true
    check = GoproCheck(find_root(path))
    check.needs_arranging = blur != "blur"
    for split in SPLITS:
        split_dir = check.root / split
        if (split_dir / "input").is_dir() and (split_dir / "target").is_dir():
            check.sources.append(Source(split, "", split_dir / "input", split_dir / "target"))
            check.needs_arranging = True
            continue
        sequences = sorted(p for p in split_dir.iterdir() if p.is_dir())
        if not sequences:
            check.problems.append(f"{split_dir}: no sequence folders in it")
        for sequence in sequences:
            missing = [name for name in (blur, "sharp") if not (sequence / name).is_dir()]
            if missing:
                check.problems.append(f"{sequence}: no {' or '.join(m + '/' for m in missing)} folder")
                continue
            check.sources.append(Source(split, sequence.name, sequence / blur, sequence / "sharp"))
    _check_files(check, progress)
    for split in SPLITS:
        found, published = check.pairs.get(split, 0), PUBLISHED_PAIRS[split]
        if found != published:
            check.notes.append(f"{split}: {found} pairs, where the published GOPRO_Large has {published}")
    return check


def _check_files(check: GoproCheck, progress: bool) -> None:
    matched: list[Pair] = []
    for source in check.sources:
        blurry = {p.name for p in source.blurry.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES}
        sharp = {p.name for p in source.sharp.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES}
        check.problems += [f"{source.blurry / n}: no sharp partner in {source.sharp}" for n in sorted(blurry - sharp)]
        check.problems += [f"{source.sharp / n}: no blurry partner in {source.blurry}" for n in sorted(sharp - blurry)]
        both = sorted(blurry & sharp)
        matched += [Pair(source.blurry / n, source.sharp / n, f"{source.split}/{source.sequence}/{n}") for n in both]
        check.pairs[source.split] = check.pairs.get(source.split, 0) + len(both)
    check.problems += check_pairs(matched, progress=progress)  # unreadable files, sizes that differ


def arrange_gopro(check: GoproCheck, out: Path) -> Path:
    """`out/{train,test}/<sequence>/{blur,sharp}` as links to the checked folders; `out` must be new."""
    out = Path(out)
    if check.problems:
        raise DatasetError(f"{check.root} has problems; fix them before arranging it")
    check_parent(out, "out")
    if out.exists():
        raise DatasetError(f"{out} already exists: choose a new folder", settings=("out",))
    with atomic_dir(out) as tmp:
        for source in check.sources:
            folder = tmp / source.split / (source.sequence or "all")
            folder.mkdir(parents=True)
            os.symlink(source.blurry.resolve(), folder / "blur", target_is_directory=True)
            os.symlink(source.sharp.resolve(), folder / "sharp", target_is_directory=True)
    return out
