"""A TensorFlow SavedModel that TF Serving loads as it is, written with Keras' `ExportArchive`.

Two signatures, both on a batch of any height and width (at least `deblur.min_side.MIN_SIDE` pixels a side); the
model pads to its 4-pixel grid and crops back inside the graph:
- `serving_default`: `images`, uint8 RGB [batch, height, width, 3] -> `images`, uint8 of the same shape.
- `deblur_float32`: `blurry`, float32 RGB in [0, 1] -> `sharp`, float32 in [0, 1].
"""

from __future__ import annotations

from pathlib import Path

import keras
import tensorflow as tf

SIGNATURES = {
    "serving_default": ("images", "images", "uint8"),  # (input name, output name, dtype) of each signature
    "deblur_float32": ("blurry", "sharp", "float32"),
}


def export_savedmodel(model: keras.Model, path: Path) -> Path:
    """Write `model` (float32) as a SavedModel folder at `path`, which must not exist yet; returns `path`."""

    def deblur_uint8(images: tf.Tensor) -> dict[str, tf.Tensor]:
        sharp = model(tf.cast(images, tf.float32) / 255.0, training=False)
        # As `deblur predict` writes 8-bit files: clip, scale, round half to even.
        return {"images": tf.cast(tf.round(tf.clip_by_value(sharp, 0.0, 1.0) * 255.0), tf.uint8)}

    def deblur_float32(blurry: tf.Tensor) -> dict[str, tf.Tensor]:
        return {"sharp": model(blurry, training=False)}

    # Not `archive.track(model)`: the endpoints track the variables they use, and tracking the model as well
    # stores every weight twice (a 23.5 MB SavedModel for the 11.5 MB shipped model, Keras 3.15).
    archive = keras.export.ExportArchive()
    for name, function in (("serving_default", deblur_uint8), ("deblur_float32", deblur_float32)):
        input_name, _, dtype = SIGNATURES[name]
        spec = tf.TensorSpec([None, None, None, model.inputs[0].shape[-1]], dtype, name=input_name)
        archive.add_endpoint(name, function, input_signature=[spec])
    archive.write_out(str(path), verbose=False)
    return path
