"""`deblur data check`: the pre-flight check of `deblur train` as a report a user can read before training."""

from __future__ import annotations

import filecmp
import hashlib
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from deblur.data.pairs import (
    NO_TRAINING_PAIRS,
    DatasetError,
    Pair,
    check_not_held_out,
    check_pairs,
    check_patch_size,
    discover,
    inspect_images,
    problem_listing,
)
from deblur.data.writer import kernel_file
from deblur.errors import check_switches


@dataclass
class DataSummary:
    root: Path
    layout: str
    train: int
    val: int
    sizes: Counter = field(default_factory=Counter)  # (width, height) of readable pairs -> count
    kernels: int = 0  # pairs with a saved blur kernel (kernel/<name>.npy), as `deblur data synth` writes
    deconvolved: int = 0  # pairs with the kernel path's deconvolution (deconvolved/), for the kernel-aware network
    problems: list[str] = field(default_factory=list)
    shared: bool = False  # no pair held out: training validates on its own pair (data of one pair)
    seen: list[tuple[Path, Path]] = field(default_factory=list)  # held-out sharp photos that are training's too

    @property
    def ok(self) -> bool:
        return not self.problems


def summarize(root: str | Path, patch_size: int | None = None, *, deep: bool = False, progress: bool = True):
    """Every pair under `root` checked as `deblur train` would (every file, each problem listed), with counts."""
    if patch_size is not None:  # 0 or 2.5 had checked no size, "64" ended on a TypeError
        check_patch_size(patch_size, "summarize")
    check_switches(deep=deep, progress=progress)  # deep="no" read every file whole: a string is true
    splits, problems = discover(root)
    try:
        check_not_held_out(root)
    except DatasetError as err:
        problems.append(str(err))
    pairs = splits.every
    info = inspect_images([path for p in pairs for path in p.files], deep, progress)
    if not splits.train and not problems:  # train refuses it: "no problems found" had sent the user on to that
        problems.append(NO_TRAINING_PAIRS.format(root=root))
    problems += check_pairs(splits.train, patch_size, info=info)
    problems += check_pairs(splits.held_out, None, info=info)
    sizes = Counter(info[p.blurry][0] for p in pairs if info[p.blurry][0] and info[p.blurry][0] == info[p.sharp][0])
    kernels = sum(kernel_file(p.blurry).is_file() for p in pairs)
    deconvolved = sum(p.deconvolved is not None for p in pairs)
    return DataSummary(
        Path(root),
        splits.layout,
        len(splits.train),
        len(splits.val),
        sizes,
        kernels,
        deconvolved,
        problems,
        shared=not splits.held_out,
        seen=seen_in_training(splits.train, splits.held_out),
    )


def seen_in_training(train: list[Pair], held_out: list[Pair]) -> list[tuple[Path, Path]]:
    """(held-out sharp photo, training's) for each held-out pair whose sharp photo is byte for byte a training
    pair's: validation would score a photo that training saw. Files are compared by size, then by their first and
    last `SAMPLE` bytes, and only then whole: a set of BMPs, all of one size, is not read through at each start."""
    by_size: dict[int, list[Path]] = defaultdict(list)
    for pair in train:
        if (size := _size(pair.sharp)) is not None:
            by_size[size].append(pair.sharp)
    samples: dict[Path, str | None] = {}

    def sample(path: Path) -> str | None:
        if path not in samples:
            samples[path] = _ends_digest(path)
        return samples[path]

    seen = []
    for pair in held_out:
        for path in by_size.get(_size(pair.sharp), ()):
            if sample(pair.sharp) is not None and sample(pair.sharp) == sample(path) and _same_bytes(pair.sharp, path):
                seen.append((pair.sharp, path))
                break
    return seen


SAMPLE = 1 << 16


def _ends_digest(path: Path) -> str | None:
    try:
        with path.open("rb") as file:
            head = file.read(SAMPLE)
            file.seek(max(file.seek(0, 2) - SAMPLE, 0))
            return hashlib.blake2b(head + file.read(SAMPLE)).hexdigest()
    except OSError:  # listed among the problems already
        return None


def _same_bytes(first: Path, second: Path) -> bool:
    try:
        return filecmp.cmp(first, second, shallow=False)
    except OSError:
        return False


def seen_line(seen: list[tuple[Path, Path]]) -> str:
    """The warning of `seen_in_training`'s pairs, as data check and train give it."""
    named = ", ".join(f"{held} is {trained}" for held, trained in seen[:3])
    more = f", and {len(seen) - 3} more" if len(seen) > 3 else ""
    return (
        f"warning: {len(seen)} held-out pair(s) have a training pair's sharp photo, so validation scores what "
        f"training saw: {named}{more}; keep each photo's pairs on one side of the split (deblur data synth "
        "--val-fraction holds photos out in test/)"
    )


def _size(path: Path) -> int | None:
    try:
        return path.stat().st_size
    except OSError:
        return None


def format_summary(summary: DataSummary) -> str:
    held_out = "the test/ or val/ folder" if summary.layout == "gopro" else "every 10th pair, held out"
    pairs = f"{summary.train} for training, {summary.val} for validation: {held_out}"
    if summary.shared:
        pairs = f"{summary.train}, for training and validation both (too few to hold one out)"
    lines = [f"{summary.root}: {summary.layout} layout", f"  pairs: {pairs}"]
    if summary.sizes:
        common = ", ".join(f"{w}x{h} ({n})" for (w, h), n in summary.sizes.most_common(5))
        more = f", and {len(summary.sizes) - 5} other sizes" if len(summary.sizes) > 5 else ""
        smallest = min(summary.sizes, key=lambda size: min(size))
        lines.append(f"  sizes: {common}{more}; smallest side {min(smallest)} px")
    if summary.kernels:
        lines.append(f"  blur kernels saved for {summary.kernels} pair(s)")
    if summary.deconvolved:
        lines.append(f"  deconvolutions for the kernel-aware network beside {summary.deconvolved} pair(s)")
    if summary.seen:
        lines.append(f"  {seen_line(summary.seen)}")
    if summary.problems:
        lines.append(f"  {len(summary.problems)} problem(s):")
        lines.append(problem_listing(summary.problems))
    else:  # the files are good, and the warning is not a problem of theirs
        aside = " (the warning is about what validation measures)" if summary.seen else ""
        lines.append(f"  no problems found{aside}")
    return "\n".join(lines)
