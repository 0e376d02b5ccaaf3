import numpy as np
import pytest

from deblur.config import SynthConfig
from deblur.data.demo import TRAIN_PHOTOS, VAL_PHOTOS, demo_root, ensure_demo_dataset
from deblur.data.pairs import preflight
from deblur.errors import SettingError
from deblur.files import _umask


def test_demo_dataset_made_once_split_by_photo(tmp_path):
    synth = SynthConfig(pairs_per_photo=1, max_length=5)
    messages = []
    root = ensure_demo_dataset(synth, home=tmp_path, log=messages.append)
    assert root == demo_root(synth, tmp_path) and len(messages) == 1
    assert ensure_demo_dataset(synth, home=tmp_path, log=messages.append) == root and len(messages) == 1
    assert [p.name for p in tmp_path.iterdir()] == [root.name]  # no temporary folder left behind
    assert root.stat().st_mode & 0o777 == 0o777 & ~_umask()

    splits = preflight(root, 128)
    assert {p.name.split("/")[0] for p in splits.train} == set(TRAIN_PHOTOS)
    assert {p.name.split("/")[0] for p in splits.val} == set(VAL_PHOTOS)
    kernel = np.load(root / "train" / "astronaut" / "kernel" / "000.npy")
    assert abs(kernel.sum() - 1) < 1e-5


def test_no_recipe_is_the_default_configs_the_one_deblur_train_trains_on(tmp_path):
    from deblur.config import load_config

    made = demo_root(load_config().data.synth, tmp_path)
    made.mkdir()  # as if made earlier: found, not made again
    assert ensure_demo_dataset(home=tmp_path, log=print) == made
    assert ensure_demo_dataset(home=str(tmp_path), log=print) == made  # a str had been "unsupported operand /"
    with pytest.raises(SettingError, match="the demo's home is int: give its path, as a str or Path"):
        ensure_demo_dataset(home=5, log=print)


def test_a_recipe_of_the_wrong_kind_is_named(tmp_path):
    with pytest.raises(SettingError, match="the recipe is str: give a deblur.config.SynthConfig, or None"):
        ensure_demo_dataset("demo", home=tmp_path)  # had been a TypeError of vars()


def test_settings_change_the_folder(tmp_path):
    assert demo_root(SynthConfig(noise=0.0), tmp_path) != demo_root(SynthConfig(noise=0.01), tmp_path)


def test_integer_and_float_settings_share_a_folder(tmp_path):
    assert demo_root(SynthConfig(max_length=7), tmp_path) == demo_root(SynthConfig(max_length=7.0), tmp_path)


def test_a_home_that_cannot_be_written_in_says_where_else_the_dataset_can_go(unwritable_folder):
    # Before, the first `deblur train` in a read-only home (some containers) stopped on the OS's PermissionError.
    with pytest.raises(
        SettingError, match=f"^{unwritable_folder} cannot be written in .*set DEBLUR_HOME to make it elsewhere$"
    ):
        ensure_demo_dataset(SynthConfig(pairs_per_photo=1, max_length=5), home=unwritable_folder, log=print)
