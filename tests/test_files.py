import os

import pytest

from deblur.errors import SettingError
from deblur.files import atomic_dir, atomic_path, check_folder, check_parent


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
