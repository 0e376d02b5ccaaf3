import numpy as np
from helpers import make_flat_dataset, write_image
from test_data_scripts import fake_gopro
from typer.testing import CliRunner

from deblur.cli import app
from deblur.data.check import summarize

runner = CliRunner()


def test_summary_of_a_good_gopro_tree(tmp_path):
    root = fake_gopro(tmp_path / "GOPRO_Large")
    result = runner.invoke(app, ["data", "check", str(root), "-q"])
    assert result.exit_code == 0, result.output
    assert "gopro layout" in result.output
    assert "pairs: 4 for training, 2 for validation" in result.output
    assert "sizes: 32x24 (6); smallest side 24 px" in result.output
    assert "no problems found" in result.output


def test_a_gopro_tree_with_nothing_to_train_on_is_a_problem_as_train_finds_it(tmp_path):
    root = fake_gopro(tmp_path / "GOPRO_Large", sequences={"test": ["GOPR0384_11_00"]})
    for side in ("blur", "sharp"):
        (root / "train" / "GOPR0372_07_00" / side).mkdir(parents=True)
    result = runner.invoke(app, ["data", "check", str(root), "-q"])
    # it had said "no problems found" of data that train refuses
    assert result.exit_code == 1 and f"  - no training pairs under {root}" in result.output, result.output
    assert "no training pairs" in runner.invoke(app, ["train", "--data", str(root), "-q"]).output


def test_every_problem_listed_and_exit_code_1(tmp_path):
    root = fake_gopro(tmp_path / "GOPRO_Large", blur_folders=("blur",))
    (root / "train" / "GOPR0372_07_00" / "sharp" / "000001.png").unlink()
    (root / "test" / "GOPR0384_11_00" / "blur" / "000000.png").write_bytes(b"not an image")
    write_image(root / "train" / "GOPR0374_11_00" / "blur" / "000000.png", np.zeros((10, 10, 3), np.uint8))
    result = runner.invoke(app, ["data", "check", str(root), "-q"])
    assert result.exit_code == 1
    assert "3 problem(s)" in result.output
    assert "GOPR0372_07_00/blur/000001.png: no sharp partner" in result.output
    assert "GOPR0384_11_00/blur/000000.png: not a readable image" in result.output
    assert "GOPR0374_11_00/blur/000000.png: size 10x10 differs" in result.output


def test_patch_size_flags_small_images(tmp_path):
    root = make_flat_dataset(tmp_path / "flat", count=12, size=(24, 32))
    result = runner.invoke(app, ["data", "check", str(root), "--patch-size", "28", "-q"])
    assert result.exit_code == 1 and "smaller than the 28x28 patch size" in result.output
    assert "flat layout" in result.output and "every 10th pair" in result.output


def test_a_patch_size_or_deep_it_cannot_use_is_named(tmp_path):
    import pytest

    from deblur.errors import SettingError

    root = make_flat_dataset(tmp_path, count=2)
    # 0 or 2.5 had checked no size, "64" ended on a TypeError, and deep="no" read every file whole
    for options, said in [
        ({"patch_size": 0}, "summarize's patch_size must be a whole number of at least 8; got 0"),
        ({"patch_size": 2.5}, "summarize's patch_size must be a whole number of at least 8; got 2.5"),
        ({"patch_size": "64"}, "summarize's patch_size must be a whole number of at least 8; got '64'"),
        ({"deep": "no"}, "deep must be True or False; got deep='no'"),
    ]:
        with pytest.raises(SettingError) as refused:
            summarize(root, progress=False, **options)
        assert said in str(refused.value)


def test_kernels_are_counted(tmp_path):
    root = fake_gopro(tmp_path / "g", blur_folders=("blur",))
    np.save(root / "train" / "GOPR0372_07_00" / "kernel.npy", np.ones((3, 3)))  # not where kernels go
    (root / "train" / "GOPR0372_07_00" / "kernel").mkdir()
    np.save(root / "train" / "GOPR0372_07_00" / "kernel" / "000000.npy", np.ones((3, 3)) / 9)
    assert summarize(root, progress=False).kernels == 1


def test_missing_folder(tmp_path):
    result = runner.invoke(app, ["data", "check", str(tmp_path / "nope")])
    assert result.exit_code == 1 and "does not exist" in result.output


def test_a_folder_of_one_pair_is_counted_and_checked_once(tmp_path):
    root = make_flat_dataset(tmp_path / "flat", count=1, size=(24, 32))
    result = runner.invoke(app, ["data", "check", str(root), "-q"])
    assert result.exit_code == 0, result.output
    assert "pairs: 1, for training and validation both (too few to hold one out)" in result.output
    assert "sizes: 32x24 (1)" in result.output
    write_image(root / "sharp" / "000.png", np.zeros((10, 10, 3), np.uint8))
    result = runner.invoke(app, ["data", "check", str(root), "-q"])
    assert result.exit_code == 1 and "1 problem(s)" in result.output


def test_held_out_pairs_that_training_has_too_are_named(tmp_path):
    import shutil

    root = fake_gopro(tmp_path / "g", blur_folders=("blur",))
    held, trained = root / "test" / "GOPR0384_11_00", root / "train" / "GOPR0372_07_00"
    shutil.copy(trained / "sharp" / "000001.png", held / "sharp" / "000000.png")  # a copy, as leaks happen
    shutil.copy(trained / "blur" / "000001.png", held / "blur" / "000000.png")
    result = runner.invoke(app, ["data", "check", str(root), "-q"])
    assert result.exit_code == 0, result.output  # the files are good; what they measure is not
    assert (
        f"warning: 1 held-out pair(s) have a training pair's sharp photo, so validation scores what training saw: "
        f"{held / 'sharp' / '000000.png'} is {trained / 'sharp' / '000001.png'}; keep each photo's pairs on one side "
        "of the split (deblur data synth --val-fraction holds photos out in test/)\n"
        "  no problems found (the warning is about what validation measures)" in result.output
    )
    assert summarize(fake_gopro(tmp_path / "clean", blur_folders=("blur",)), progress=False).seen == []


def test_files_alike_at_both_ends_are_told_apart_by_their_middles(tmp_path):
    from deblur.data.check import SAMPLE, seen_in_training
    from deblur.data.pairs import Pair

    def pair(name: str, middle: bytes) -> Pair:  # as BMPs of one size are: their headers alike
        (tmp_path / name).write_bytes(b"h" * SAMPLE + middle + b"t" * SAMPLE)
        return Pair(tmp_path / "unread", tmp_path / name, name)

    trained, other, copy = pair("trained", b"a"), pair("other", b"b"), pair("copy", b"a")
    assert seen_in_training([trained], [other]) == []
    assert seen_in_training([trained], [other, copy]) == [(copy.sharp, trained.sharp)]
