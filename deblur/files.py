"""Atomic writes: a file or folder appears whole under its final name, or not at all; and the check that a folder
to write in can be one."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from deblur.errors import SettingError


def check_folder(folder: str | Path, setting: str | None = None) -> None:
    """Refuse a folder to write in that is a file, or lies under one (SettingError naming `setting`). Commands call
    it before their work; otherwise the first write, after it, failed with the OS's traceback."""
    _refuse_a_file_in_the_way(Path(folder), Path(folder), setting)


def check_parent(target: str | Path, setting: str | None = None) -> None:
    """`check_folder` for the folder a file or folder `target` is to be written in, the message naming `target`."""
    _refuse_a_file_in_the_way(Path(target).parent, Path(target), setting)


def _refuse_a_file_in_the_way(folder: Path, given: Path, setting: str | None) -> None:
    for path in (folder, *folder.parents):
        if path.is_dir():
            return
        if path.exists() or path.is_symlink():  # a file, or a link to nothing: no folder can be made there
            named = "" if path == given else f"{given}: "
            raise SettingError(f"{named}{path} is a file, not a folder", settings=(setting,) if setting else ())


def make_folder(folder: Path) -> None:
    """`folder` and its parents made where missing; a file in the way is a SettingError, not an OS traceback."""
    check_folder(folder)
    folder.mkdir(parents=True, exist_ok=True)


@contextlib.contextmanager
def atomic_path(final: str | Path, *, suffix: str = "") -> Iterator[Path]:
    """Yield a temporary path beside `final`; on success rename it to `final`, on failure remove it.

    `suffix` keeps the extension some writers insist on (Keras wants `.keras`).
    """
    final = Path(final)
    make_folder(final.parent)
    fd, tmp = tempfile.mkstemp(prefix=f".{final.name}.", suffix=f".tmp{suffix}", dir=final.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    os.chmod(tmp_path, 0o666 & ~_umask())  # mkstemp makes it private; the final file gets the usual mode
    try:
        yield tmp_path
        os.replace(tmp_path, final)
    finally:
        tmp_path.unlink(missing_ok=True)


def atomic_write_text(final: str | Path, text: str) -> None:
    with atomic_path(final) as tmp:
        tmp.write_text(text)


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
