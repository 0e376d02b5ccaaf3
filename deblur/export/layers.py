"""The generator rewritten for converters that get its padding or its shapes wrong.

TensorFlow runs the generator on an input of any height and width and knows every channel count, but two
converters do not follow it:
- tf2onnx computes `PadToMultiple`'s padding, `(-height) % 4`, with C's remainder (-1 where Python gives 3), so
  any size off the 4-pixel grid fails in ONNX Runtime; and ONNX's Pad has no "symmetric" mode to mirror with.
- The LiteRT converter's own shape inference loses the channel count after that pad, and after nearest upsampling
  done by `repeat`; a convolution on a tensor of unknown channels is not a LiteRT built-in (it needs TensorFlow's
  "Flex" ops, which the LiteRT interpreter does not have).
The layers here compute the same values with plainer ops (slices, flips, concatenation) and state the channel
count again with a reshape, so every convolution's input shape is `?x?x?xC`. Pure Keras 3, like `deblur.model`.
"""

from __future__ import annotations

import keras
from keras import layers, ops

from deblur.model import PadToMultiple


class ConvertiblePadToMultiple(PadToMultiple):
    """`PadToMultiple` as slices, flips and a concatenation, with the channel count restated."""

    def call(self, inputs):
        shape = ops.shape(inputs)
        height, width = shape[1], shape[2]
        # Not (-height) % multiple: tf2onnx turns the floor modulo of a negative number into C's remainder (-1, not 3).
        pad_h = (self.multiple - height % self.multiple) % self.multiple
        pad_w = (self.multiple - width % self.multiple) % self.multiple
        # Mirroring that repeats the edge ("symmetric"): the last pad_h rows, flipped, then the same for columns.
        padded = ops.concatenate([inputs, ops.flip(inputs[:, height - pad_h :], axis=1)], axis=1)
        padded = ops.concatenate([padded, ops.flip(padded[:, :, width - pad_w :], axis=2)], axis=2)
        return ops.reshape(padded, (shape[0], height + pad_h, width + pad_w, inputs.shape[-1]))


class ConvertibleUpSampling2D(layers.Layer):
    """Nearest upsampling by 2, as `UpSampling2D(2, interpolation="nearest")`, with the channel count restated."""

    def call(self, inputs):
        shape = ops.shape(inputs)
        repeated = ops.repeat(ops.repeat(inputs, 2, axis=1), 2, axis=2)
        return ops.reshape(repeated, (shape[0], 2 * shape[1], 2 * shape[2], inputs.shape[-1]))

    def compute_output_shape(self, input_shape):
        n, h, w, c = input_shape
        return (n, None if h is None else 2 * h, None if w is None else 2 * w, c)


def convertible(model: keras.Model) -> keras.Model:
    """A copy of a generator, with the same weights and outputs, that the converters follow (see above)."""

    def clone(layer: layers.Layer) -> layers.Layer:
        if isinstance(layer, PadToMultiple):
            return ConvertiblePadToMultiple(layer.multiple, name=layer.name, dtype=layer.dtype_policy)
        if isinstance(layer, layers.UpSampling2D):
            if tuple(layer.size) != (2, 2) or layer.interpolation != "nearest":
                raise ValueError(f"{layer.name}: only nearest upsampling by 2 is rewritten")
            return ConvertibleUpSampling2D(name=layer.name, dtype=layer.dtype_policy)
        return layer.__class__.from_config(layer.get_config())

    copy = keras.models.clone_model(model, clone_function=clone)
    copy.set_weights(model.get_weights())
    return copy
