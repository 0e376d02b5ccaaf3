"""Atomic writes: a file or folder appears whole under its final name, or not at all; and the check that a folder
to write in can be one, and can be written in."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from deblur.errors import (
    FULL_DISK,
    OutputBusyError,
    OutputExistsError,
    SettingError,
    full_disk_at,
    full_disk_from_tensorflow,
)


def as_path(value: object, what: str, setting: str) -> Path:
    """`value` as a Path; a SettingError naming `what` and `setting` where it is none (None had been Path's
    TypeError, "expected str, bytes or os.PathLike object")."""
    if isinstance(value, str | os.PathLike):
        return Path(value)
    raise SettingError(f"{what} is {type(value).__name__}: give its path, as a str or Path", settings=(setting,))


def check_folder(folder: str | Path, setting: str | None = None) -> None:
    """Refuse a folder to write in that is a file, lies under one, or cannot be written in (SettingError naming
    `setting`). Commands call it before their work; otherwise the first write, after it, failed with the OS's
    traceback."""
    _refuse(Path(folder), Path(folder), setting, try_writing=True)


def check_parent(target: str | Path, setting: str | None = None) -> None:
    """`check_folder` for the folder a file or folder `target` is to be written in, the message naming `target`."""
    _refuse(Path(target).parent, Path(target), setting, try_writing=True)


def check_outside(out: str | Path, source: str | Path, settings: tuple[str, ...]) -> None:
    """Refuse a new folder `out` inside the folder `source` it is made from: the next run on `source` would read
    what this one wrote as its input (pairs as sharp photos, or as frames)."""
    if Path(source).is_dir() and Path(out).resolve().is_relative_to(Path(source).resolve()):
        raise SettingError(
            f"{out} is inside {source}: the next run on that folder would take what is written here as its input; "
            "choose a folder outside it",
            settings=settings,
        )


def _refuse(folder: Path, given: Path, setting: str | None, try_writing: bool) -> None:
    settings = (setting,) if setting else ()
    for path in (folder, *folder.parents):
        named = "" if path == given else f"{given}: "
        try:
            is_dir = path.is_dir()
            taken = not is_dir and (path.exists() or path.is_symlink())
        except OSError as err:  # a folder above it that may not be searched
            raise SettingError(f"{named}{path} cannot be reached ({err.strerror})", settings=settings) from err
        if is_dir:
            if try_writing:
                _refuse_unwritable(path, named, settings)
            return
        if taken:  # a file, or a link to nothing: no folder can be made there
            raise SettingError(f"{named}{path} is a file, not a folder", settings=settings)


def try_writing_in(folder: Path) -> None:
    """Write a byte to a new file in `folder` and remove it at once: the OS's error where nothing can be written
    there, a full disk included. Permission bits alone do not tell (root passes them, yet not on a read-only mount or
    in /sys), nor does making a folder (a full tmpfs still makes one)."""
    fd, name = tempfile.mkstemp(prefix=".deblur-check.", dir=folder)
    try:
        os.write(fd, b"\0")
    finally:
        os.close(fd)
        os.unlink(name)


def _refuse_unwritable(folder: Path, named: str, settings: tuple[str, ...]) -> None:
    try:
        try_writing_in(folder)  # the folder the writers will make, or write in, lies in this one
    except OSError as err:
        shown = folder if folder.parts else Path.cwd()  # "." would not say which folder (a container's /work)
        if err.errno in FULL_DISK:  # said before the work, not after it
            raise SettingError(f"{named}{shown}: {err.strerror}: free some space first", settings=settings) from err
        raise SettingError(f"{named}{shown} cannot be written in ({err.strerror})", settings=settings) from err


def refuse_existing(target: Path, *, overwrite: bool = False, settings: tuple[str, ...] = ("overwrite",)) -> None:
    """OutputExistsError where `target` exists and overwriting it was not allowed: nothing the user has is replaced
    unasked."""
    if target.exists() and not overwrite:
        raise OutputExistsError(f"{target} exists; allow overwriting to replace it", settings=settings)


def refuse_folder(path: Path, settings: tuple[str, ...] = ()) -> None:
    """OutputExistsError where a folder stands at the path of an output file: it had counted as the output there
    (and the input been skipped), or, overwriting allowed, failed as an OS traceback after the work."""
    if path.is_dir():
        raise OutputExistsError(
            f"{path} is a folder, where an output file goes: move it, or write elsewhere", settings=settings
        )


def to_write(outputs: Sequence[Path], *, overwrite: bool = False) -> list[Path]:
    """Which of one input's `outputs` (its output, and its side-by-side) to write: all of them with `overwrite`, else
    those not there, as a run stopped between the two leaves one (it had been refused as existing at each run
    after); OutputExistsError naming the first where all are there, or a folder where one goes."""
    for output in outputs:
        refuse_folder(output, settings=("out",))
    missing = [output for output in outputs if overwrite or not output.exists()]
    if not missing:
        refuse_existing(outputs[0])
    return missing


def refuse_over_input(output: Path, source: Path, what: str, setting: str = "target") -> None:
    """Refuse an `output` that is its input `source` itself (by this path, a link or a hard link), `what` naming
    it ("the photo deblurred"): the input would be replaced by what is made of it."""
    if output.exists() and source.exists() and output.samefile(source):
        raise OutputExistsError(f"{output} is {what}: give another file for the result", settings=(setting,))


def make_folder(folder: Path) -> None:
    """`folder` and its parents made where missing; a file in the way is a SettingError, not an OS traceback."""
    _refuse(folder, folder, None, try_writing=False)  # writable: checked once, before the work, by check_folder
    folder.mkdir(parents=True, exist_ok=True)


@contextlib.contextmanager
def atomic_path(final: str | Path, *, suffix: str = "") -> Iterator[Path]:
    """Yield a temporary path beside `final`; on success rename it to `final`, on failure remove it.

    `suffix` keeps the extension some writers insist on (Keras wants `.keras`).
    """
    final = Path(final)
    refuse_folder(final)
    make_folder(final.parent)
    fd, tmp = tempfile.mkstemp(prefix=f".{final.name}.", suffix=f".tmp{suffix}", dir=final.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    os.chmod(tmp_path, 0o666 & ~_umask())  # mkstemp makes it private; the final file gets the usual mode
    try:
        with full_disk_named(final, tmp_path):
            yield tmp_path
            os.replace(tmp_path, final)
    finally:
        tmp_path.unlink(missing_ok=True)


def atomic_write_text(final: str | Path, text: str) -> None:
    with atomic_path(final) as tmp:
        tmp.write_text(text)


def file_stamp(path: Path) -> list[int]:
    """What tells a work folder that a file is the one an earlier run used: its size and modification time (a
    list, as a manifest's JSON reads it back)."""
    stat = path.stat()
    return [stat.st_size, stat.st_mtime_ns]


# The room beside an output's name that the hidden names of its work take: `.<name>.<random>.tmp.webp` (19 bytes
# more) while it is written, `.<name>.parts.lock` beside a clip's parts (12).
HIDDEN_NAME_ROOM = 24
USUAL_NAME_MAX = 255  # bytes in a file name on ext4, APFS, NTFS, and where the file system cannot be asked


def longest_name(folder: Path) -> int:
    """The longest output file name, in bytes, that can be written in `folder` (or the nearest folder above it
    that is there): its file system's longest name less `HIDDEN_NAME_ROOM`."""
    for path in (folder, *folder.parents):
        if path.is_dir():
            try:
                return os.pathconf(path, "PC_NAME_MAX") - HIDDEN_NAME_ROOM
            except (AttributeError, OSError, ValueError):  # Windows has no pathconf
                break
    return USUAL_NAME_MAX - HIDDEN_NAME_ROOM


def fitted_name(name: str, most: int) -> str:
    """`name` where it fits in `most` bytes; else as much of its start as fits beside a hash of all of it, the same
    for the same name (a resumed run finds its folder again) and another for another name."""
    encoded = os.fsencode(name)
    if len(encoded) <= most:
        return name
    tag = "~" + hashlib.sha256(encoded).hexdigest()[:12]
    cut = name[: most - len(tag)]  # characters: at least a byte each
    while len(os.fsencode(cut)) > most - len(tag):
        cut = cut[:-1]
    return cut + tag


def side_by_side_path(output: Path) -> Path:
    """Where predict's `--side-by-side` of `output` goes: <name>_side_by_side, in its format."""
    return output.with_name(side_by_side_name(output.name))


def side_by_side_name(name: str) -> str:
    """The file name of the side-by-side of the output named `name` (an engine's outputs may be URLs, not paths)."""
    return f"{Path(name).stem}_side_by_side{Path(name).suffix}"


def work_folder(output: Path) -> Path:
    """The hidden folder beside `output` where a resumable job (a clip, synth's or from-video's pairs) keeps what it
    finished until `output` is whole."""
    return output.parent / f".{output.name}.parts"


def start_work(
    work: Path, manifest: str, recipe: dict, why: Callable[[object], str], log: Callable[[str], None]
) -> bool:
    """True when `work` holds an earlier run's parts made with `recipe` (its `manifest` file equal to it): they are
    kept as they are. Otherwise False, and `work` is made anew with `recipe` in its manifest; an earlier run's parts
    made otherwise are cleared first, logged with `why(that run's manifest)` (the caller's words for it)."""
    if work.is_dir():
        before = read_manifest(work / manifest)
        if before == recipe:
            return True
        log(f"{work}: {why(before)}; starting over")
        shutil.rmtree(work)
    make_folder(work)
    atomic_write_text(work / manifest, json.dumps(recipe, indent=2) + "\n")
    return False


def read_manifest(path: Path) -> object:
    """What a work folder's manifest (JSON) holds; None when it is missing or unreadable (a run killed before it
    was written whole, another version's), which the callers treat as another job's folder."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


@contextlib.contextmanager
def atomic_dir(final: str | Path, *, replace: bool = False) -> Iterator[Path]:
    """Yield a temporary folder beside `final`; on success rename it to `final`, on failure remove it.

    With `replace`, an existing `final` folder is swapped out for the new one and then removed, so that at every
    moment `final` is either the old folder, whole, or the new one.
    """
    final = Path(final)
    make_folder(final.parent)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", suffix=".tmp", dir=final.parent))
    os.chmod(tmp, 0o777 & ~_umask())  # mkdtemp makes it private; the final folder gets the usual mode
    old = final.parent / f"{tmp.name}.old"
    try:
        with full_disk_named(final, tmp):
            yield tmp
            if replace and final.is_dir():
                os.rename(final, old)
                try:
                    os.rename(tmp, final)
                except OSError:
                    os.rename(old, final)
                    raise
                shutil.rmtree(old, ignore_errors=True)
                return
            try:
                os.rename(tmp, final)
            except OSError:
                if not final.is_dir():  # another process may have finished the same folder first
                    raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@contextlib.contextmanager
def one_run_at_a_time(work: Path, output: Path, setting: str, lock: Path | None = None) -> Iterator[None]:
    """Held while a run writes `work` (a resumable job's parts, for `output`; or `output` itself): a second run on
    the same output is refused, naming it, where the two would have written one set of parts at once (two records
    of each window, one run's results under the other's settings, a folder renamed from under the other). The lock
    is the kernel's (`flock` on `lock`, by default a hidden file beside `work`), so it goes with its process however
    that ends, kill -9 included."""
    try:
        import fcntl
    except ImportError:  # Windows: no flock; one run at a time is then the user's to keep
        yield
        return
    lock = lock or work.with_name(f"{work.name}.lock")
    make_folder(lock.parent)
    for _ in range(3):
        handle = os.open(lock, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(handle)
            raise OutputBusyError(
                f"another deblur run is writing {output}{f' (its work in {work})' if work != output else ''}: wait "
                "for it to end, or stop it, and run this again; it goes on from what that run finished",
                settings=(setting,),
            ) from None
        try:
            held, there = os.fstat(handle), os.stat(lock)
            if (held.st_dev, held.st_ino) == (there.st_dev, there.st_ino):
                break
        except FileNotFoundError:
            pass
        os.close(handle)  # the run before removed this file as it ended: lock the one there now
    else:
        raise SettingError(f"{lock}: could not be locked for this run", settings=(setting,))
    try:
        yield
    finally:
        lock.unlink(missing_ok=True)  # while held: a run that opened it since finds it gone and locks a new one
        os.close(handle)


@contextlib.contextmanager
def full_disk_named(final: Path, tmp: Path) -> Iterator[None]:
    """A full disk met while writing `final` (through `tmp`, a file or a folder of them), raised as an OSError
    naming `final`."""
    try:
        yield
    except OSError as err:
        # A writer's own write fails with no file name (Pillow's), or the temporary one (PyAV's) or a file in the
        # temporary folder: it would then be reported without saying which output, or under a name that is gone.
        if err.errno in FULL_DISK and (err.filename is None or Path(err.filename).is_relative_to(tmp)):
            raise full_disk_at(err, final) from err
        raise
    except Exception as err:  # TensorFlow's own writes: a SavedModel's variables, a LiteRT file
        if (full := full_disk_from_tensorflow(err, final)) is None:
            raise
        raise full from err


def safe_file_name(name: str, *, ascii_only: bool = False) -> str:
    """`name` with anything but letters, digits, "-", "_" and "." replaced by "_", at most 100 characters: safe
    on any file system; with `ascii_only`, letters and digits outside ASCII too (an HTTP header's plain
    `filename`, which travels as Latin-1)."""

    def kept(c: str) -> bool:
        return (c.isalnum() and (c.isascii() or not ascii_only)) or c in "-_."

    return "".join(c if kept(c) else "_" for c in name)[:100]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
