"""`deblur train` on whichever backend Keras runs on: TensorFlow's custom loop (the reference, with tf.data and
tf.distribute) or the JAX loop (`KERAS_BACKEND=jax`). Each backend's code stays in its own room; this is the door."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from deblur.config import Config
from deblur.errors import SettingError, check_switches, given_log
from deblur.files import as_path
from deblur.hardware import keras_backend
from deblur.paths import record_last_model
from deblur.training.result import TrainResult, training_config

__all__ = ["train", "training_config"]


def train(config: Config, out_dir: str | Path, *, progress: bool = True, log: Callable = print) -> TrainResult:
    """Train the generator as `config` says, in `out_dir`, on Keras' backend, resuming from a checkpoint if any;
    the model written is noted as the last trained (`deblur.paths.record_last_model`: `--model latest`)."""
    if not isinstance(config, Config):  # a dict or a file's path had ended on AttributeError: 'dict' ... 'train'
        raise SettingError(
            f"config must be a deblur.Config, not {type(config).__name__}: deblur.load_config(path or shipped name) "
            "reads one, deblur.config.config_from_dict(mapping) builds one",
            settings=("config",),
        )
    check_switches(progress=progress)  # "no" had drawn bars: a string is true
    log = given_log(log)
    out_dir = as_path(out_dir, "the run folder", "out_dir")  # None had been Path's TypeError, after the data's checks
    if config.train.vgg_weights and not config.train.perceptual_weight:  # read by that loss only: it went unused
        raise SettingError(
            f"train.vgg_weights {config.train.vgg_weights} is read by the perceptual loss only, and "
            "train.perceptual_weight is 0: set it above 0, or leave train.vgg_weights unset"
        )
    backend = keras_backend()
    if backend == "jax":
        from deblur.training.jax.trainer import train as train_on_backend
    elif backend == "tensorflow":
        from deblur.training.trainer import train as train_on_backend
    else:
        raise SettingError(
            f"deblur train runs on Keras' tensorflow or jax backend, not {backend}: set KERAS_BACKEND=jax or "
            "KERAS_BACKEND=tensorflow",
            settings=("KERAS_BACKEND",),
        )
    result = train_on_backend(config, out_dir, progress=progress, log=log)
    if result.model_path is not None:
        record_last_model(result.model_path)
    return result
