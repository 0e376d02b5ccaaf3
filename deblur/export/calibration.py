"""Patches of blurry photos for int8 calibration: the value ranges the quantized model must cover.

From a folder the user gives (photos as they will be deblurred: blurry ones), or by default from the blurry
images of the embedded demo dataset, which is made from scikit-image's sample photos with no download.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from deblur.errors import MissingFileError, SettingError
from deblur.imageio import ImageReadError, find_images, read_photo

PATCH = 256  # pixels a side, as the model was trained on
PATCHES = 64  # MinMax calibration settles within a few dozen patches


def calibration_patches(folder: Path | None = None, *, count: int = PATCHES, seed: int = 0) -> list[np.ndarray]:
    """`count` random crops (HWC float32 in [0, 1], at most PATCH a side) taken evenly from the photos in
    `folder` (recursively), or from the demo dataset's blurry training images when `folder` is None."""
    photos = _demo_photos() if folder is None else _folder_photos(folder)
    patches: list[np.ndarray] = [np.empty(0)] * count
    # Photo by photo, each read once (a folder of fewer photos than patches gives each several), with a random
    # stream per patch: the crops do not depend on the order they are cut in.
    for first, path in enumerate(photos[:count]):
        try:
            image = read_photo(path).rgb
        except ImageReadError as err:
            raise SettingError(f"calibration photo {err}", settings=("calibration",)) from None
        height, width = (min(side, PATCH) for side in image.shape[:2])
        for index in range(first, count, len(photos)):
            rng = np.random.default_rng([seed, index])
            top = rng.integers(0, image.shape[0] - height + 1)
            left = rng.integers(0, image.shape[1] - width + 1)
            patches[index] = np.ascontiguousarray(image[top : top + height, left : left + width])
    return patches


def _folder_photos(folder: Path) -> list[Path]:
    if folder.is_file():
        raise SettingError(
            f"{folder} is a file: give a folder of blurry photos to calibrate on", settings=("calibration",)
        )
    if not folder.is_dir():
        raise MissingFileError(f"calibration folder {folder} not found", settings=("calibration",))
    photos = [path for path, _ in find_images([folder])]
    if not photos:
        raise SettingError(f"{folder} holds no photos to calibrate on (JPEG, PNG, ...)", settings=("calibration",))
    return photos


def _demo_photos() -> list[Path]:
    from deblur.config import load_config
    from deblur.data.demo import ensure_demo_dataset

    root = ensure_demo_dataset(load_config("demo").data.synth, log=lambda _: None)
    return sorted((root / "train").glob("*/blur/*.png"))
