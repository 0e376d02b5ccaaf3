"""deblur: image deblurring with a DeblurGAN-style CNN on TensorFlow 2 / Keras 3.

Images are HWC RGB float32 in [0, 1] at every public boundary (batches are NHWC).
TensorFlow is imported on first use of a name below, so `deblur --help` answers at once.
"""

from __future__ import annotations

import importlib
import importlib.util
import os


# Where TensorFlow is not installed but JAX is (a GPU machine with JAX alone), Keras runs on JAX rather than fail
# to import: Keras reads this when it is first imported, and a KERAS_BACKEND the user set is left alone.
def _installed(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


if "KERAS_BACKEND" not in os.environ and not _installed("tensorflow") and _installed("jax"):
    os.environ["KERAS_BACKEND"] = "jax"

__version__ = "0.1.0"

_EXPORTS = {
    "build_generator": "deblur.model",
    "Config": "deblur.config",
    "load_config": "deblur.config",
    "train": "deblur.training.run",
    "TrainResult": "deblur.training.result",
    "preflight": "deblur.data.pairs",
    "train_dataset": "deblur.data.pipeline",
    "PairSequence": "deblur.data.sequence",
    "ensure_demo_dataset": "deblur.data.demo",
    "deblur_image": "deblur.inference",
    "deblur_file": "deblur.inference",
    "load_deblurrer": "deblur.inference",
    "deblur_photos": "deblur.predict",
    "deblur_clip": "deblur.video.predict",
    "run_timings": "deblur.timings.run",
    "synthesize_pairs": "deblur.data.synth",
    "evaluate": "deblur.evaluation.evaluate",
    "evaluation_pairs": "deblur.evaluation.evaluate",
    "evaluate_model": "deblur.evaluation.evaluate",
    "DeblurError": "deblur.errors",
    "export_model": "deblur.export.exporter",
    "ExportRequest": "deblur.export.exporter",
}

__all__ = [*_EXPORTS, "__version__"]


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'deblur' has no attribute {name!r}")
