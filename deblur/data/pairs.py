"""Finding blurry/sharp pairs on disk and checking them before any training starts.

Two layouts are read, matched by path relative to the `blur/` and `sharp/` folders:
- GOPRO: `<root>/<split>/<sequence>/blur/<name>` with `.../sharp/<name>` (split: train, val or test);
- flat: `<root>/blur/<name>` with `<root>/sharp/<name>` (names may include subfolders).
Any folder named `blur` beside a `sharp` folder is a source of pairs, so both layouts are one rule. A
`deconvolved` folder beside them (`deblur data synth --deconvolve`) gives each pair the kernel path's
deconvolution of its blurry photo, the kernel-aware network's second input.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

from PIL import Image, UnidentifiedImageError

from deblur.config import MIN_PATCH_SIZE, MIN_VAL_CROP
from deblur.console import progress_bar
from deblur.errors import DeblurError, SettingError, check_switches, is_whole_number
from deblur.files import as_path
from deblur.imageio import JPEG_SUFFIXES, READ_SUFFIXES, find_images, walk

IMAGE_SUFFIXES = {".png", *JPEG_SUFFIXES, ".bmp"}
READABLE_FORMATS = {"PNG", "JPEG", "BMP", "MPO"}  # MPO: JPEGs from some cameras
TRAIN_SPLIT = "train"
VAL_SPLITS = ("val", "validation", "test")  # GOPRO calls its held-out split "test"
MAX_LISTED_PROBLEMS = 20


class DatasetError(DeblurError, ValueError):
    """The data cannot be trained on; the message lists every offending file found."""


@dataclass(frozen=True)
class Pair:
    blurry: Path
    sharp: Path
    name: str  # the pair's path relative to the dataset root, for messages and reports
    deconvolved: Path | None = None  # the blurry photo deconvolved by the kernel path, when the data has it

    @property
    def files(self) -> tuple[Path, ...]:
        return (self.blurry, self.sharp) + ((self.deconvolved,) if self.deconvolved else ())


@dataclass(frozen=True)
class Splits:
    train: list[Pair]
    val: list[Pair]
    layout: str  # "gopro" (split folders) or "flat" (validation carved off by name)
    skipped: tuple[str, ...] = ()  # unreadable files left out (only with skip_unreadable)

    @property
    def held_out(self) -> list[Pair]:
        return held_out(self.train, self.val)

    @property
    def every(self) -> list[Pair]:
        """Each pair once."""
        return self.train + self.held_out


def held_out(train: list[Pair], val: list[Pair]) -> list[Pair]:
    """The validation pairs training never sees: all of them, except where data of one pair validates on it."""
    seen = set(train)
    return [pair for pair in val if pair not in seen]


def held_out_count(items: int, share: float, *, fewest: int = 2) -> int:
    """How many of `items` (photos, a clip's windows) a `share` holds out for validation: rounded, at least one
    where a share is asked of `fewest` or more, and never so many that fewer than `fewest - 1` are left to train on.
    (Rounded alone, 0.1 of 2 to 5 photos held none out: validation then scored another blur of a trained photo.)"""
    if share <= 0 or items < fewest:
        return 0
    return min(max(1, round(items * share)), items - fewest + 1)


def find_pairs(root: str | Path) -> tuple[list[Pair], list[str]]:
    """All pairs under `root`, sorted by name, and the structural problems met (missing partners, non-images)."""
    root = Path(root)
    pairs: list[Pair] = []
    problems: list[str] = []
    # walked, not globbed: a sequence folder linked in from another disk had been passed by without a word
    for blur_dir in sorted(folder for folder, _ in walk(root) if folder.name == "blur" and folder != root):
        sharp_dir = blur_dir.parent / "sharp"
        if not sharp_dir.is_dir():
            problems.append(f"{blur_dir}: no sharp/ folder beside it")
            continue
        blurry_files = _files(blur_dir)
        sharp_files = _files(sharp_dir)
        deconvolved_dir = blur_dir.parent / "deconvolved"
        deconvolved_files = _files(deconvolved_dir) if deconvolved_dir.is_dir() else None
        partners = _partners(blurry_files, sharp_files)
        for rel in sorted(blurry_files | (sharp_files - set(partners.values()))):
            blurry, sharp = blur_dir / rel, sharp_dir / partners.get(rel, rel)
            if rel not in blurry_files:
                problems.append(f"{sharp}: no blurry partner (expected {blurry})")
            elif rel not in partners:
                problems.append(f"{blurry}: no sharp partner (expected {sharp})")
            elif blurry.suffix.lower() not in IMAGE_SUFFIXES:
                problems.append(_unread(blurry))
            elif deconvolved_files is not None and rel not in deconvolved_files:
                problems.append(f"{blurry}: no deconvolution beside it (expected {deconvolved_dir / rel})")
            else:
                name = str(blur_dir.parent.relative_to(root) / rel)
                deconvolved = deconvolved_dir / rel if deconvolved_files is not None else None
                pairs.append(Pair(blurry, sharp, name.removeprefix("./"), deconvolved))
    return pairs, problems


def _unread(path: Path) -> str:
    """Why training leaves out a file of a blur/ folder: a photo in a format predict reads (a TIFF) had been called
    no image at all."""
    if path.suffix.lower() in READ_SUFFIXES:
        kind = Image.registered_extensions().get(path.suffix.lower(), path.suffix.lstrip(".").upper())  # TIFF
        return f"{path}: a {kind} photo, which training does not read (PNG, JPEG or BMP expected: convert the pairs)"
    return f"{path}: not an image file (PNG, JPEG or BMP expected)"


def _partners(blurry_files: set[Path], sharp_files: set[Path]) -> dict[Path, Path]:
    """Each blurry file's sharp partner: the file of the same name, else the one image of the same name but for its
    extension (blur/a.jpg with sharp/a.png: a photo saved as JPEG and its reference as PNG), where it is the only
    blurry image of that name too."""
    partners = {rel: rel for rel in blurry_files & sharp_files}
    spare: dict[Path, tuple[list[Path], list[Path]]] = {}
    for side, files in enumerate((blurry_files - sharp_files, sharp_files - blurry_files)):
        for rel in files:
            if rel.suffix.lower() in IMAGE_SUFFIXES:
                spare.setdefault(rel.with_suffix(""), ([], []))[side].append(rel)
    for blurry, sharp in spare.values():
        if len(blurry) == 1 and len(sharp) == 1:
            partners[blurry[0]] = sharp[0]
    return partners


def without_deconvolved(pairs: list[Pair]) -> list[Pair]:
    """The pairs as a plain network reads them: blurry and sharp only."""
    return [replace(pair, deconvolved=None) for pair in pairs]


def check_deconvolved(pairs: list[Pair], root: str | Path) -> None:
    """Refuse data for the kernel-aware network unless every pair has its deconvolution."""
    missing = sum(pair.deconvolved is None for pair in pairs)
    if missing:
        raise DatasetError(
            f"the kernel-aware network (model.kernel_aware) needs each pair's deconvolution in a deconvolved/ folder "
            f"beside blur/ and sharp/, and {missing} of the {len(pairs)} pairs in {root} have none: make the pairs "
            "with `deblur data synth --deconvolve` (configs/kernel-aware.yaml does)"
        )


def _files(folder: Path) -> set[Path]:
    found = ((inside / name) for inside, names in walk(folder) for name in names)
    return {path.relative_to(folder) for path in found if path.is_file()}


def discover(root: str | Path) -> tuple[Splits, list[str]]:
    """Train and validation pairs under `root`, and the structural problems met.

    Split folders (`train/` with `test/`, `val/` or `validation/`) are used when present; otherwise every tenth
    pair, by sorted name, is held out for validation (at least one).
    """
    root = as_path(root, "the data folder", "data")
    if root.is_file():
        raise DatasetError(f"data folder {root} is a file: give the folder that holds blur/ and sharp/")
    if not root.is_dir():
        raise DatasetError(f"data folder {root} does not exist or is not a folder")
    if (root / TRAIN_SPLIT).is_dir():
        train, problems = find_pairs(root / TRAIN_SPLIT)
        val: list[Pair] = []
        for name in VAL_SPLITS:
            if (root / name).is_dir():
                val, more = find_pairs(root / name)
                problems += more
                break
        if val:
            return Splits(train, val, "gopro"), problems
    else:
        train, problems = find_pairs(root)
    if not train and not problems:
        if empty := [folder for folder, _ in walk(root) if folder.name == "blur" and folder != root]:
            # they are there: "expected blur/ and sharp/ folders" had sent the user looking for what was not missing
            raise DatasetError(
                f"no image pairs under {root}: its blur/ and sharp/ folders are empty ({empty[0]}"
                f"{f' and {len(empty) - 1} more' if len(empty) > 1 else ''})"
            )
        raise DatasetError(
            f"no image pairs under {root}: expected blur/ and sharp/ folders "
            f"(<root>/blur + <root>/sharp, or GOPRO's <root>/train/<sequence>/blur|sharp){_photos_hint(root)}"
        )
    held_out = set(range(9, len(train), 10)) or {len(train) - 1}
    if len(train) < 2:
        return Splits(train, list(train), "flat"), problems
    val = [p for i, p in enumerate(train) if i in held_out]
    train = [p for i, p in enumerate(train) if i not in held_out]
    return Splits(train, val, "flat"), problems


def _photos_hint(root: Path) -> str:
    """What to do with a folder of photos without pairs: sharp photos are what `data synth` makes pairs from."""
    photos = len(find_images([root]))
    if not photos:
        return ""
    return (
        f"; it holds {photos} photo(s) and no pairs: to train on sharp photos, make blurry/sharp pairs from them "
        f"first: deblur data synth --src {root} --out <new folder for the pairs>"
    )


def image_problem(path: Path, deep: bool = False) -> tuple[tuple[int, int] | None, str | None]:
    """(width, height) of an image file, or None and what is wrong with it. Without `deep` the pixels are not
    decoded (a truncated JPEG can pass); with it they are."""
    try:
        with Image.open(path) as image:
            size, fmt = image.size, image.format
            image.verify()  # checks PNG chunk CRCs and structure; cheap next to a full decode
        if deep:
            with Image.open(path) as image:
                image.load()
    except (UnidentifiedImageError, SyntaxError) as err:
        return None, f"{path}: not a readable image ({err})"
    except OSError as err:
        return None, f"{path}: cannot be read ({err})"
    if fmt not in READABLE_FORMATS:
        return None, f"{path}: {fmt} images are not supported (PNG, JPEG or BMP)"
    return size, None


def inspect_images(paths: list[Path], deep: bool, progress: bool) -> dict[Path, tuple]:
    """path -> ((width, height) or None, problem or None), read in parallel threads."""
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(
            progress_bar(
                pool.map(lambda path: image_problem(path, deep), paths),
                total=len(paths),
                desc="checking images",
                unit="file",
                disable=not progress or len(paths) < 500,
                leave=False,
            )
        )
    return dict(zip(paths, results, strict=True))


def split_unreadable(pairs: list[Pair], *, deep: bool, progress: bool = True) -> tuple[list[Pair], list[str]]:
    """The pairs whose two files can be read, and what is wrong with the files of the others."""
    info = inspect_images([path for p in pairs for path in p.files], deep, progress)
    readable, problems = [], []
    for pair in pairs:
        found = [info[path][1] for path in pair.files if info[path][1]]
        problems += found
        if not found:
            readable.append(pair)
    return readable, problems


def check_pairs(
    pairs: list[Pair],
    min_size: int | None = None,
    *,
    progress: bool = True,
    deep: bool = False,
    info: dict[Path, tuple] | None = None,
    min_size_for: str = "patch size",
) -> list[str]:
    """Problems with the pairs' files: unreadable, sizes that differ, smaller than `min_size` pixels a side (the
    smallest `min_size_for`).

    `info` is `inspect_images` of the pairs' files when the caller has it already.
    """
    if info is None:
        info = inspect_images([path for p in pairs for path in p.files], deep, progress)
    problems = []
    for pair in pairs:
        (blurry_size, blurry_problem), (sharp_size, sharp_problem) = info[pair.blurry], info[pair.sharp]
        problems += [p for p in (blurry_problem, sharp_problem) if p]
        if pair.deconvolved:
            deconvolved_size, deconvolved_problem = info[pair.deconvolved]
            if deconvolved_problem:
                problems.append(deconvolved_problem)
            elif blurry_size is not None and deconvolved_size != blurry_size:
                problems.append(
                    f"{pair.deconvolved}: size {deconvolved_size[0]}x{deconvolved_size[1]} differs from its blurry "
                    f"photo {pair.blurry} ({blurry_size[0]}x{blurry_size[1]})"
                )
        if blurry_size is None or sharp_size is None:
            continue
        if blurry_size != sharp_size:
            problems.append(
                f"{pair.blurry}: size {blurry_size[0]}x{blurry_size[1]} differs from its sharp partner "
                f"{pair.sharp} ({sharp_size[0]}x{sharp_size[1]})"
            )
        elif min_size and min(blurry_size) < min_size:
            problems.append(
                f"{pair.blurry}: {blurry_size[0]}x{blurry_size[1]} is smaller than the {min_size}x{min_size} "
                f"{min_size_for}"
            )
    return problems


# GOPRO's layout with an empty train/ (its test/ pairs are held out): train refuses it, and data check lists it
NO_TRAINING_PAIRS = "no training pairs under {root}"


def check_loader(pairs: list[Pair], patch_size: int, batch_size: int, loader: str) -> None:
    """Refuse, naming it, what a training loader cannot draw batches from: no pairs had been tf.data's "buffer_size
    must be greater than zero" and the PyDataset's ZeroDivisionError, a size given as a string a TypeError."""
    # a generator had been taken for no pairs, and paths failed on `.blurry`
    if not isinstance(pairs, list | tuple):
        got = type(pairs).__name__
    else:
        wrong = next((pair for pair in pairs if not isinstance(pair, Pair)), None)
        got = "" if wrong is None else f"{type(wrong).__name__} {_short(wrong)} in the list"
    if got:
        raise SettingError(
            f"{loader} takes a list of Pair, as deblur.preflight(root, patch_size).train gives; got {got}"
        )
    if not pairs:
        raise DatasetError(f"{loader} was given no pairs: deblur.preflight(root, patch_size).train finds a folder's")
    check_patch_size(patch_size, loader)
    _check_whole("batch_size", batch_size, 1, loader)


def check_patch_size(patch_size: object, where: str) -> None:
    """A patch side the loaders can draw: a whole number of at least MIN_PATCH_SIZE."""
    _check_whole("patch_size", patch_size, MIN_PATCH_SIZE, where)


def check_sequence(steps: object, seed: object, augment: object) -> None:
    """`PairSequence`'s own settings: a fractional or negative count or seed had ended on a TypeError or ValueError
    at its first batch or length, 0 steps made an epoch of none, and augment="no" augmented (a string is true)."""
    _check_whole("steps", steps, 1, "PairSequence")
    _check_whole("seed", seed, 0, "PairSequence")
    check_switches(augment=augment)


def check_shards(num_shards: object, shard_index: object, seed: object, loader: str) -> None:
    """Refuse shards a loader cannot split its pairs into: a `shard_index` past the last shard had been tf.data's
    "buffer_size must be greater than zero", a fractional count or seed a TypeError, 0 or -3 shards taken as one."""
    _check_whole("num_shards", num_shards, 1, loader)
    if not (is_whole_number(shard_index) and 0 <= shard_index < num_shards):
        raise SettingError(
            f"{loader}'s shard_index must be a whole number from 0 to num_shards - 1 ({num_shards - 1}); got "
            f"{shard_index!r}",
            settings=("shard_index",),
        )
    if not is_whole_number(seed):
        raise SettingError(f"{loader}'s seed must be a whole number; got {seed!r}", settings=("seed",))


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:57]}..."


def _check_whole(name: str, value: object, low: int, where: str) -> None:
    if not is_whole_number(value) or value < low:
        raise SettingError(
            f"{where}'s {name} must be a whole number of at least {low}; got {value!r}", settings=(name,)
        )


def problem_listing(problems: list[str]) -> str:
    """Problems as an indented list, the first `MAX_LISTED_PROBLEMS` of them and a count of the rest."""
    shown = problems[:MAX_LISTED_PROBLEMS]
    more = len(problems) - len(shown)
    return "\n".join(f"  - {p}" for p in shown) + (f"\n  ... and {more} more" if more else "")


def check_not_held_out(root: str | Path) -> None:
    """Refuse to train on a folder whose pairs include a held-out split (`test/`, GOPRO's name for it) with no
    `train/` beside it: read as a flat folder, the held-out pairs would be trained on, and nothing training did not
    see would be left to measure on."""
    root = Path(root)
    if (root / TRAIN_SPLIT).is_dir():
        return
    for name in VAL_SPLITS:
        if (root / name).is_dir():
            raise DatasetError(
                f"{root} holds {name}/ but no {TRAIN_SPLIT}/: in GOPRO's layout {name}/ is held out, and it would be "
                f"trained on here; give the folder of training pairs ({TRAIN_SPLIT}/ beside {name}/, or blur/ and "
                "sharp/ without it)"
            )


def preflight(
    root: str | Path, patch_size: int, *, progress: bool = True, skip_unreadable: bool = False, work: str = "trained"
) -> Splits:
    """Discover and check a dataset; raise one `DatasetError` listing every problem (nothing was `work`), or return
    the splits.

    With `skip_unreadable`, pairs with an unreadable file are left out and listed in `Splits.skipped` instead.
    """
    check_patch_size(patch_size, "preflight")
    # skip_unreadable="no" had left unreadable pairs out: a string is true
    check_switches(skip_unreadable=skip_unreadable, progress=progress)
    splits, problems = discover(root)
    skipped: list[str] = []
    if skip_unreadable:
        train, skipped_train = split_unreadable(splits.train, deep=False, progress=progress)
        val, skipped_val = split_unreadable(splits.val, deep=False, progress=progress)
        skipped = skipped_train + skipped_val
        splits = Splits(train, val or train[-1:], splits.layout, tuple(skipped))
    problems += check_pairs(splits.train, patch_size, progress=progress)
    problems += check_pairs(
        splits.held_out, MIN_VAL_CROP, progress=progress, min_size_for="that validation's SSIM scores"
    )
    if problems:
        raise DatasetError(
            f"the data in {root} has {len(problems)} problem(s); nothing was {work}:\n{problem_listing(problems)}"
        )
    if not splits.train:
        raise DatasetError(NO_TRAINING_PAIRS.format(root=root))
    return splits
