"""A LiteRT (`.tflite`) flat buffer of built-in ops only, for the LiteRT interpreter on phones and small devices.

Input `blurry`, float32 RGB in [0, 1], [batch, height, width, 3], of any size the interpreter is resized to
(`resize_tensor_input`); output the same shape, float32 in [0, 1]. Written with TensorFlow's converter from a
Keras `ExportArchive`, as Keras' own `model.export(format="litert")` does, but from the generator rewritten with
every channel count stated (`deblur.export.layers`), so that no convolution needs TensorFlow's Flex ops.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

from deblur.export.layers import convertible


def export_litert(
    model: keras.Model,
    path: Path,
    *,
    float16: bool = False,
    int8_weights: bool = False,
    calibration: list[np.ndarray] | None = None,
) -> Path:
    """Write `model` (float32) as a `.tflite` file at `path`; returns `path`.

    float16: weights stored as float16 (half the file; the interpreter computes in float32).
    int8_weights: weights stored as int8, activations quantized on the fly where the interpreter's kernels do it
    ("dynamic range" quantization; needs no calibration).
    calibration: HWC float32 patches of blurry photos: full int8, activations calibrated on them. It lost 0.56 dB
    on real blur (see the docs' export page), so `deblur export` does not offer it; benchmarks/export_formats.py
    measures it.
    """
    static = convertible(model)  # every channel count stated: no Flex ops
    with tempfile.TemporaryDirectory(prefix="deblur-litert-") as folder:
        archive = keras.export.ExportArchive()  # the endpoint tracks the weights it uses
        spec = tf.TensorSpec([None, None, None, model.inputs[0].shape[-1]], tf.float32, name="blurry")
        archive.add_endpoint("serving_default", lambda blurry: static(blurry, training=False), input_signature=[spec])
        archive.write_out(folder, verbose=False)
        converter = tf.lite.TFLiteConverter.from_saved_model(folder)
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
        if float16 or int8_weights or calibration is not None:
            converter.optimizations = [tf.lite.Optimize.DEFAULT]
        if calibration is not None:
            converter.representative_dataset = lambda: ([patch[None]] for patch in calibration)
        if float16:
            converter.target_spec.supported_types = [tf.float16]
        flat_buffer = converter.convert()
    Path(path).write_bytes(flat_buffer)
    return path
