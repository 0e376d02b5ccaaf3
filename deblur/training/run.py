"""`deblur train` on whichever backend Keras runs on: TensorFlow's custom loop (the reference, with tf.data and
tf.distribute) or the JAX loop (`KERAS_BACKEND=jax`). Each backend's code stays in its own room; this is the door."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from deblur.config import Config
from deblur.errors import SettingError
from deblur.hardware import keras_backend
from deblur.training.result import TrainResult, training_config

__all__ = ["train", "training_config"]


def train(config: Config, out_dir: str | Path, *, progress: bool = True, log: Callable = print) -> TrainResult:
    """Train the generator as `config` says, in `out_dir`, on Keras' backend, resuming from a checkpoint if any."""
    backend = keras_backend()
    if backend == "jax":
        from deblur.training.jax.trainer import train as train_on_jax

        return train_on_jax(config, out_dir, progress=progress, log=log)
    if backend == "tensorflow":
        from deblur.training.trainer import train as train_on_tensorflow

        return train_on_tensorflow(config, out_dir, progress=progress, log=log)
    raise SettingError(
        f"deblur train runs on Keras' tensorflow or jax backend, not {backend}: set KERAS_BACKEND=jax or "
        "KERAS_BACKEND=tensorflow",
        settings=("KERAS_BACKEND",),
    )
