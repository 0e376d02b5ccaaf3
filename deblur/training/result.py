"""What `deblur train` returns on every backend, and the config it runs: no TensorFlow, no JAX here."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import keras

from deblur.config import Config, load_config
from deblur.training.run_folder import init_architecture


def training_config(config: str | Path | None, overrides: list[str] | None = None) -> Config:
    """The config `deblur train` runs: `config` (default: the embedded demo) with `overrides`. Fine-tuning
    (train.init set) with no config named takes the architecture of the model it starts from, so that
    `deblur train --init pretrained --data DIR` fine-tunes the shipped model with the demo's schedule."""
    chosen = load_config(config, overrides)
    if config is None and chosen.train.init:
        architecture = init_architecture(chosen.train.init) or {}
        chosen = load_config(
            None, [f"model.{key}={value}" for key, value in architecture.items()] + list(overrides or [])
        )
    return chosen


@dataclass
class TrainResult:
    out_dir: Path
    model: keras.Model  # the trained model, as trained (under the training strategy and precision)
    model_path: Path | None  # None on workers other than the chief
    metrics: list[dict]
    step: int
    replicas: int
    precision: str
    input_wait_fraction: float  # of the timed training steps in this process
    timed_steps: int
    skipped: list[str] = field(default_factory=list)  # unreadable files left out (data.skip_bad_images)
    # a blurry photo the model never trained on (the first validation pair's): what the train command's hint
    # deblurs, a file that is there
    example: Path | None = None
