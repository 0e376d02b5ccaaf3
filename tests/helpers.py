"""Helpers the tests share: tiny configs and datasets made on the fly."""

from __future__ import annotations

import numpy as np
from PIL import Image

from deblur.config import Config, ModelConfig, config_to_yaml, load_config


def smoke_config(*overrides: str):
    """The smoke config, float32 unless overridden (the test machine's auto choice is bfloat16)."""
    return load_config("smoke", ["train.precision=float32", *overrides])


def write_image(path, array: np.ndarray) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(array).save(path)


def noise_image(rng: np.random.Generator, height: int, width: int) -> np.ndarray:
    return rng.integers(0, 256, (height, width, 3), dtype=np.uint8)


def make_flat_dataset(root, count: int = 4, size: tuple[int, int] = (48, 64), seed: int = 0):
    """A blur/ + sharp/ dataset where sharp = 255 - blurry, pixel for pixel, on random noise: any misaligned
    crop or transform breaks the relation."""
    rng = np.random.default_rng(seed)
    for i in range(count):
        blurry = noise_image(rng, *size)
        write_image(root / "blur" / f"{i:03d}.png", blurry)
        write_image(root / "sharp" / f"{i:03d}.png", 255 - blurry)
    return root


def quiet_train(config, out, messages=None):
    """Train without progress bars, collecting the log lines in `messages` if given."""
    from deblur.training.trainer import train

    return train(config, out, progress=False, log=(messages.append if messages is not None else lambda _: None))


def largest_difference(a, b) -> float:
    """The largest absolute difference between two models' weights."""
    return max(float(np.abs(x - y).max()) for x, y in zip(a.get_weights(), b.get_weights(), strict=True))


def save_model(folder, **model_args):
    """A run folder with model.keras and config.yaml, as `deblur train` leaves it (a tiny model by default)."""
    from deblur.model import build_generator

    folder.mkdir(parents=True, exist_ok=True)
    args = {"width": 4, "blocks": 1, "norm": "none", **model_args}
    build_generator(**args).save(folder / "model.keras")
    (folder / "config.yaml").write_text(config_to_yaml(Config(model=ModelConfig(**args))))
    return folder / "model.keras"
