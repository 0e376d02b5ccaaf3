"""Where a distributed run's inputs and outputs live: local paths (a cluster's shared file system is mounted as
one), or object-store URLs that pyarrow's file systems open (s3://, gs://, hdfs://, abfs://). A location is a
string; a URL keeps its query, where pyarrow takes options such as `endpoint_override`.

Writes appear whole or not at all: a local file through a temporary name and a rename, an object when its upload
completes (an object store never shows a half-uploaded object).
"""

from __future__ import annotations

import contextlib
import functools
import posixpath
from pathlib import Path

from deblur.errors import SettingError
from deblur.files import atomic_path, side_by_side_name
from deblur.imageio import ImageReadError, find_images, in_hidden


def is_url(location: str) -> bool:
    return "://" in location and not location.startswith("file://")


def join(location: str, name: str) -> str:
    """`name` (a relative path with "/") inside the folder `location`."""
    if not is_url(location):
        return str(Path(location.removeprefix("file://")) / name)
    base, _, query = location.partition("?")
    return f"{base.rstrip('/')}/{name}" + (f"?{query}" if query else "")


def list_files(
    location: str, suffixes: set[str], skip: Path | None = None, outputs: list[Path] | None = None
) -> list[tuple[str, str]]:
    """(file, name relative to `location`) for `location` itself if it is a file, or every file with one of
    `suffixes` under it if it is a folder, as `deblur.imageio.find_images` finds them (not those under a local
    folder `skip`, nor, in a local folder, `outputs` as it takes it). A location that is not there is returned as a
    file, to fail by name."""
    if not is_url(location):
        found = find_images([Path(location)], suffixes=suffixes, skip=skip, outputs=outputs)
        return [(str(path), name.as_posix()) for path, name in found]
    import pyarrow.fs as pafs

    fs, path = _file_system(location)
    info = fs.get_file_info(path)
    if info.type != pafs.FileType.Directory:
        return [(location, posixpath.basename(path))]
    found = []
    for item in fs.get_file_info(pafs.FileSelector(path, recursive=True)):
        name = posixpath.relpath(item.path, path)
        if item.type == pafs.FileType.File and posixpath.splitext(name)[1].lower() in suffixes and not in_hidden(name):
            found.append((join(location, name), name))
    return sorted(found, key=lambda pair: pair[1])


def is_file(location: str) -> bool:
    """Whether a file (an object) is at `location`: a folder there is not one, nor counted as an output."""
    if not is_url(location):
        return Path(location).is_file()
    import pyarrow.fs as pafs

    fs, path = _file_system(location)
    return fs.get_file_info(path).type == pafs.FileType.File


def read_bytes(location: str) -> bytes:
    """The file's bytes; one that cannot be read raises ImageReadError naming it."""
    try:
        if not is_url(location):
            return Path(location).read_bytes()
        fs, path = _file_system(location)
        with fs.open_input_stream(path) as stream:
            return stream.read()
    except FileNotFoundError:
        raise ImageReadError(f"{location}: no such file") from None
    except OSError as err:
        raise ImageReadError(f"{location}: cannot be read ({err})") from None


def write_bytes(location: str, data: bytes) -> None:
    """Write `data` to `location`, whole or not at all (see the module's docstring)."""
    if not is_url(location):
        with atomic_path(location, suffix=Path(location).suffix) as tmp:
            tmp.write_bytes(data)
        return
    fs, path = _file_system(location)
    with fs.open_output_stream(path) as stream:
        stream.write(data)


def remove(location: str) -> None:
    """Remove the file or object at `location` if it is there."""
    if not is_url(location):
        Path(location).unlink(missing_ok=True)
    elif is_file(location):
        fs, path = _file_system(location)
        fs.delete_file(path)


def side_by_side_of(location: str) -> str:
    """Where `--side-by-side` of the output `location` goes, a path or a URL (with its query kept): <name>_side_by_side,
    in its format, as `deblur.files.side_by_side_path` names it on plain predict."""
    base, mark, query = location.partition("?")
    folder, name = posixpath.split(base)
    return f"{posixpath.join(folder, side_by_side_name(name))}{mark}{query}"


def remove_leftovers(location: str) -> None:
    """Remove the temporary files a killed writer of the local file `location` left beside it (`atomic_path`
    names them `.<name>.<random>.tmp<suffix>`); an object store keeps no half-uploaded object to remove."""
    if is_url(location):
        return
    path = Path(location)
    if path.parent.is_dir():
        for leftover in path.parent.glob(f".{path.name}.*.tmp*"):
            with contextlib.suppress(OSError):
                leftover.unlink()


@functools.lru_cache(maxsize=16)
def _file_system_of(base: str):
    import pyarrow.fs as pafs

    try:
        return pafs.FileSystem.from_uri(base)
    except (OSError, ValueError, TypeError) as err:
        raise SettingError(f"{base}: not a location pyarrow's file systems open ({err})", settings=("out",)) from None


def _file_system(location: str):
    """(file system, path in it); one file system per bucket and options, kept for the process."""
    base, _, query = location.partition("?")
    scheme, _, rest = base.partition("://")
    bucket, _, _ = rest.partition("/")
    fs, root = _file_system_of(f"{scheme}://{bucket}" + (f"?{query}" if query else ""))
    key = rest[len(bucket) :].strip("/")
    return fs, posixpath.join(root, key) if key else root
