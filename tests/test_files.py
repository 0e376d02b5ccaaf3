import errno
import os
import re
from pathlib import Path

import av
import pytest

from deblur.errors import OutputBusyError, OutputExistsError, SettingError
from deblur.files import as_path, atomic_dir, atomic_path, check_folder, check_parent, to_write


def test_a_folder_to_write_in_is_refused_where_a_file_is_in_the_way(tmp_path):
    photo = tmp_path / "photo.png"
    photo.write_bytes(b"a photo")
    with pytest.raises(SettingError, match=f"^{photo} is a file, not a folder$") as refused:
        check_folder(photo, "out")
    assert refused.value.settings == ("out",)
    with pytest.raises(SettingError, match=f"^{photo / 'a' / 'b'}: {photo} is a file, not a folder$"):
        check_folder(photo / "a" / "b", "out")
    with pytest.raises(SettingError, match=f"^{photo / 'report.json'}: {photo} is a file, not a folder$"):
        check_parent(photo / "report.json", "out")
    os.symlink(tmp_path / "gone", tmp_path / "dangling")
    with pytest.raises(SettingError, match="dangling is a file, not a folder"):
        check_folder(tmp_path / "dangling" / "run")
    check_folder(tmp_path / "new" / "deeper", "out")  # missing folders are made by the writers
    check_parent(tmp_path / "new" / "report.json", "out")
    assert photo.read_bytes() == b"a photo" and not (tmp_path / "new").exists()


def test_the_atomic_writers_say_what_is_in_the_way(tmp_path):
    (tmp_path / "taken").write_text("kept")
    for writer in (atomic_path, atomic_dir):
        with pytest.raises(SettingError, match="taken is a file, not a folder"), writer(tmp_path / "taken" / "x"):
            pass
    assert (tmp_path / "taken").read_text() == "kept"


def test_a_folder_that_cannot_be_written_in_is_refused_and_the_check_leaves_nothing(
    tmp_path, unwritable_folder, monkeypatch
):
    for given in (unwritable_folder, unwritable_folder / "new" / "deeper"):
        named = "" if given == unwritable_folder else f"{given}: "
        with pytest.raises(SettingError, match=f"^{named}{unwritable_folder} cannot be written in \\(.+\\)$") as no:
            check_folder(given, "out")
        assert no.value.settings == ("out",)
    with pytest.raises(SettingError, match=f"^{unwritable_folder / 'r.json'}: {unwritable_folder} cannot be written"):
        check_parent(unwritable_folder / "r.json", "out")
    monkeypatch.chdir(unwritable_folder)
    with pytest.raises(SettingError, match=f"^out: {unwritable_folder} cannot be written in"):  # not "."
        check_folder("out", "out")
    check_folder(tmp_path / "out", "out")  # the folder it tries writing in is removed at once
    check_folder(tmp_path, "out")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["locked"]


def test_a_full_disk_is_refused_before_the_work_and_the_check_leaves_nothing(tmp_path, monkeypatch):
    def full(fd, data):  # a full disk still makes files and folders (tmpfs, ext4's inodes): it fails the write
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "write", full)
    message = f"^{tmp_path / 'out'}: {tmp_path}: {os.strerror(errno.ENOSPC)}: free some space first$"
    with pytest.raises(SettingError, match=message):
        check_folder(tmp_path / "out", "out")
    assert list(tmp_path.iterdir()) == []


def test_a_folder_that_cannot_be_reached_is_refused(tmp_path, monkeypatch):
    # As root no folder refuses a look inside, so the OS's answer for one that does (mode 700, another owner) is
    # stood in for.
    def no_entry(path):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(Path, "is_dir", no_entry)
    with pytest.raises(SettingError, match=f"^{tmp_path / 'out'} cannot be reached \\(Permission denied\\)$"):
        check_folder(tmp_path / "out", "out")


def test_an_os_error_inside_an_atomic_write_names_the_output_not_the_temporary_file(tmp_path):
    final = tmp_path / "photo.png"
    for raised_name, named in (
        (None, str(final)),
        ("tmp", str(final)),
        ("/elsewhere/model.keras", "/elsewhere/model.keras"),
    ):
        with pytest.raises(OSError) as caught, atomic_path(final) as tmp:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(tmp) if raised_name == "tmp" else raised_name)
        assert caught.value.filename == named, raised_name
    with pytest.raises(OSError) as caught, atomic_path(final) as tmp:  # PyAV's: its file name cannot be set
        raise av.error.OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(tmp))
    assert (caught.value.errno, caught.value.filename) == (errno.ENOSPC, str(final))
    with pytest.raises(OSError) as caught, atomic_dir(tmp_path / "pairs"):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    assert caught.value.filename == str(tmp_path / "pairs")
    with pytest.raises(OSError) as caught, atomic_dir(tmp_path / "pairs") as folder:  # a file in the folder
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(folder / "cache" / "model.bin"))
    assert caught.value.filename == str(tmp_path / "pairs")
    with pytest.raises(OSError) as caught, atomic_path(final):
        raise OSError("cannot write mode RGBA as JPEG")  # Pillow's encoder: no errno, left as it is
    assert caught.value.filename is None
    with pytest.raises(OSError) as caught, atomic_path(final) as tmp:
        raise OSError(errno.EIO, os.strerror(errno.EIO), str(tmp))  # not a full disk: a traceback, as it was
    assert caught.value.filename == str(tmp)
    assert list(tmp_path.iterdir()) == []


def test_one_run_at_a_time_refuses_a_second_run_and_goes_with_a_killed_one(tmp_path):
    import signal
    import subprocess
    import sys

    from deblur.files import one_run_at_a_time

    work, out = tmp_path / ".pairs.parts", tmp_path / "pairs"

    def another_run():
        with one_run_at_a_time(work, out, "out"):
            pass

    with (
        one_run_at_a_time(work, out, "out"),
        pytest.raises(OutputBusyError, match=r"another deblur run is writing .*pairs \(its work in .*\.pairs\.parts\)"),
    ):
        another_run()
    assert list(tmp_path.iterdir()) == []  # the lock file goes with the run
    another_run()
    holding = (
        "import time; from pathlib import Path; from deblur.files import one_run_at_a_time\n"
        f"with one_run_at_a_time(Path({str(work)!r}), Path({str(out)!r}), 'out'):\n"
        "    print('held', flush=True); time.sleep(60)"
    )
    holder = subprocess.Popen([sys.executable, "-c", holding], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        with pytest.raises(OutputBusyError, match="another deblur run is writing"):
            another_run()
        holder.send_signal(signal.SIGKILL)  # its lock file stays, but the kernel's lock goes with the process
        holder.wait(timeout=30)
        another_run()
    finally:
        holder.kill()


def test_of_an_output_and_its_side_by_side_the_one_missing_is_written_and_both_there_are_refused(tmp_path):
    output, pair = tmp_path / "a.png", tmp_path / "a_side_by_side.png"
    assert to_write((output, pair)) == [output, pair]
    output.write_bytes(b"")  # a run stopped between the two
    assert to_write((output, pair)) == [pair] and to_write((output, pair), overwrite=True) == [output, pair]
    pair.write_bytes(b"")
    with pytest.raises(OutputExistsError, match=re.escape(f"{output} exists; allow overwriting to replace it")):
        to_write((output, pair))


def test_a_folder_where_an_output_file_goes_is_named_and_left_as_it_is(tmp_path):
    output, pair = tmp_path / "a.png", tmp_path / "a_side_by_side.png"
    pair.mkdir()  # it had counted as the side-by-side there, and the output alone been written
    (pair / "kept.txt").write_text("kept")
    expected = re.escape(f"{pair} is a folder, where an output file goes: move it, or write elsewhere")
    for overwrite in (False, True):
        with pytest.raises(OutputExistsError, match=expected) as refused:
            to_write((output, pair), overwrite=overwrite)
        assert refused.value.settings == ("out",)
    with pytest.raises(OutputExistsError, match=expected), atomic_path(pair) as tmp:  # it had been an OS traceback
        tmp.write_bytes(b"an output")
    assert [path.name for path in tmp_path.rglob("*")] == ["a_side_by_side.png", "kept.txt"]


def test_as_path_takes_strings_and_paths_and_names_anything_else():
    assert as_path("a/b.png", "the photo", "photo") == as_path(Path("a/b.png"), "the photo", "photo") == Path("a/b.png")
    with pytest.raises(SettingError, match="the photo is NoneType: give its path, as a str or Path") as refused:
        as_path(None, "the photo", "photo")
    assert refused.value.settings == ("photo",)
