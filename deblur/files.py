"""Atomic writes: a file or folder appears whole under its final name, or not at all."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def atomic_path(final: str | Path, *, suffix: str = "") -> Iterator[Path]:
    """Yield a temporary path beside `final`; on success rename it to `final`, on failure remove it.

    `suffix` keeps the extension some writers insist on (Keras wants `.keras`).
    """
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
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
    final.parent.mkdir(parents=True, exist_ok=True)
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
