"""The embedded default dataset: synthetic camera-shake pairs made from the photographs scikit-image ships.

Nothing is downloaded and nothing of these photos is in this repository: on first use the pairs are written, in
GOPRO's layout, to `<data home>/demo-<hash>` (see `deblur.paths.data_home`), where the hash covers the photos
and the blur settings, so changing them makes a new folder. The split is by photo: the validation photos are
never seen in training.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

from deblur.config import SynthConfig, check_recipe, load_config
from deblur.data.writer import write_pairs
from deblur.errors import SettingError, given_log
from deblur.files import as_path, atomic_dir, check_folder
from deblur.paths import data_home

# Photos of at least 300 pixels a side that load offline from `skimage.data` (grayscale ones become RGB).
TRAIN_PHOTOS = (
    "astronaut",
    "camera",
    "rocket",
    "hubble_deep_field",
    "brick",
    "grass",
    "gravel",
    "immunohistochemistry",
    "coins",
    "moon",
    "cell",
)
VAL_PHOTOS = ("chelsea", "coffee")
FORMAT_VERSION = 1  # bump when the way pairs are made changes


def load_photo(name: str) -> np.ndarray:
    """A scikit-image sample photo as HWC RGB uint8."""
    import skimage.data  # imported here: it is only needed the first time the dataset is made

    image = np.asarray(getattr(skimage.data, name)())
    if image.ndim == 2:
        image = np.repeat(image[:, :, None], 3, axis=-1)
    return np.ascontiguousarray(image[:, :, :3]).astype(np.uint8)


def demo_root(synth: SynthConfig, home: Path | None = None) -> Path:
    # The demo's photos are held out by name, so holdout_seed changes nothing and stays out of the key; min_noise
    # stays out while unset, so datasets made before it existed keep their folder.
    recipe = {key: value for key, value in vars(synth).items() if key != "holdout_seed"}
    if synth.min_noise is None:
        del recipe["min_noise"]
    key = json.dumps({"v": FORMAT_VERSION, "train": TRAIN_PHOTOS, "val": VAL_PHOTOS, "synth": recipe}, sort_keys=True)
    digest = hashlib.sha256(key.encode()).hexdigest()[:10]
    return (home or data_home()) / f"demo-{digest}"


def ensure_demo_dataset(synth: SynthConfig | None = None, *, home: Path | None = None, log=print) -> Path:
    """The demo dataset's folder, making it first if it is not there yet (a few seconds); `synth` None is the
    recipe of the default config, the one `deblur train` trains on."""
    synth = synth or load_config().data.synth
    check_recipe(synth)
    log = given_log(log)
    home = None if home is None else as_path(home, "the demo's home", "home")  # 5 had been a TypeError; "x" too
    root = demo_root(synth, home)
    if root.is_dir():
        return root
    try:
        check_folder(root.parent)
    except SettingError as err:  # a read-only home (some containers): say where else it can go
        raise SettingError(f"{err}: the demo dataset is made there; set DEBLUR_HOME to make it elsewhere") from err
    log(f"making the demo dataset from scikit-image's sample photos in {root} (once)")
    with atomic_dir(root) as tmp:
        for split, photos in (("train", TRAIN_PHOTOS), ("test", VAL_PHOTOS)):
            for index, photo in enumerate(photos):
                # One stream per photo: the pairs of a photo do not depend on which other photos are listed.
                rng = np.random.default_rng([synth.seed, FORMAT_VERSION, index, split == "test"])
                write_pairs(load_photo(photo), tmp / split / photo, synth, rng)
    return root
