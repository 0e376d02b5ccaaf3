"""The DeblurGAN generator in pure Keras 3.

Images are HWC RGB float32 in [0, 1] at every boundary of this project; the model takes a batch of them of any
height and width (at least 5 pixels each way) and returns the same shape, float32, in [0, 1], under any
mixed-precision policy.
"""

from __future__ import annotations

import keras
import numpy as np
from keras import layers, ops

from deblur.config import ModelConfig

# How the training step's gradients are computed where this project, not Keras, decides: `deblur timings` records
# it, so charts made before and after a change here can be told apart (docs/speed.md measures each choice).
GRADIENTS = {
    "convolution weights": "library (oneDNN's kernel: faster than matmul forms at every shape measured)",
    "instance norm": "closed form (custom_gradient)",
}

# === Layers ===


def mirror_pad(inputs, top: int, bottom: int, left: int, right: int, *, repeat_edge: bool):
    """Mirror-pads NHWC height and width with slices, flips and concatenation.

    For Keras' torch backend, whose `ops.pad` refuses "reflect" on NHWC and turns "symmetric" into "replicate"
    (Keras 3.15); TensorFlow and JAX keep `ops.pad`, one op. `repeat_edge` mirrors with the edge row repeated
    ("symmetric"), else without it ("reflect"). Pads are at most the side (less than it, for "reflect").
    """
    skip = 0 if repeat_edge else 1
    height, width = ops.shape(inputs)[1], ops.shape(inputs)[2]
    parts = [inputs]
    if top:
        parts.insert(0, ops.flip(inputs[:, skip : skip + top], axis=1))
    if bottom:
        parts.append(ops.flip(inputs[:, height - bottom - skip : height - skip], axis=1))
    padded = ops.concatenate(parts, axis=1) if len(parts) > 1 else inputs
    parts = [padded]
    if left:
        parts.insert(0, ops.flip(padded[:, :, skip : skip + left], axis=2))
    if right:
        parts.append(ops.flip(padded[:, :, width - right - skip : width - skip], axis=2))
    return ops.concatenate(parts, axis=2) if len(parts) > 1 else padded


@keras.saving.register_keras_serializable(package="deblur")
class ReflectionPad2D(layers.Layer):
    """Pads height and width by reflecting the border, as the original generator does before 7x7 and 3x3 convs.

    Args:
        padding: pixels added on each side.

    Example:
        >>> ReflectionPad2D(3)(keras.ops.ones((1, 8, 8, 3))).shape
        (1, 14, 14, 3)
    """

    def __init__(self, padding: int = 1, **kwargs):
        super().__init__(**kwargs)
        self.padding = padding

    def call(self, inputs):
        p = self.padding
        if keras.backend.backend() == "torch":
            return mirror_pad(inputs, p, p, p, p, repeat_edge=False)
        return ops.pad(inputs, [[0, 0], [p, p], [p, p], [0, 0]], mode="reflect")

    def compute_output_shape(self, input_shape):
        n, h, w, c = input_shape
        grow = 2 * self.padding
        return (n, None if h is None else h + grow, None if w is None else w + grow, c)

    def get_config(self):
        return {**super().get_config(), "padding": self.padding}


@keras.saving.register_keras_serializable(package="deblur")
class PadToMultiple(layers.Layer):
    """Pads height and width at the bottom and right, by mirroring, up to a multiple of `multiple`.

    The generator downsamples twice by 2, so its input must be a multiple of 4; `CropToMatch` undoes this.

    Args:
        multiple: the size multiple to pad to.
    """

    def __init__(self, multiple: int = 4, **kwargs):
        super().__init__(**kwargs)
        self.multiple = multiple

    def call(self, inputs):
        shape = ops.shape(inputs)
        pad_h = (-shape[1]) % self.multiple
        pad_w = (-shape[2]) % self.multiple
        if keras.backend.backend() == "torch":
            return mirror_pad(inputs, 0, pad_h, 0, pad_w, repeat_edge=True)
        return ops.pad(inputs, [[0, 0], [0, pad_h], [0, pad_w], [0, 0]], mode="symmetric")

    def compute_output_shape(self, input_shape):
        n, h, w, c = input_shape
        m = self.multiple
        return (n, None if h is None else -(-h // m) * m, None if w is None else -(-w // m) * m, c)

    def get_config(self):
        return {**super().get_config(), "multiple": self.multiple}


@keras.saving.register_keras_serializable(package="deblur")
class CropToMatch(layers.Layer):
    """Crops the first input to the height and width of the second (top-left aligned)."""

    def call(self, inputs):
        image, reference = inputs
        shape = ops.shape(reference)
        return image[:, : shape[1], : shape[2], :]

    def compute_output_shape(self, input_shape):
        image_shape, reference_shape = input_shape
        return (image_shape[0], reference_shape[1], reference_shape[2], image_shape[3])


@keras.saving.register_keras_serializable(package="deblur")
class InstanceNormalization(layers.Layer):
    """Normalizes each channel of each image over height and width, then scales and shifts it per channel.

    The same function as `GroupNormalization(groups=-1)` (weights `gamma`, `beta` in the same order), built for
    speed under mixed precision: the statistics are computed in float32, but the normalized output is one
    multiply-add in the compute dtype, with no reshape into groups and no float32 copy of the output.

    Args:
        epsilon: added to the variance before the square root.

    Example:
        >>> InstanceNormalization()(keras.ops.ones((2, 8, 8, 16))).shape
        (2, 8, 8, 16)
    """

    def __init__(self, epsilon: float = 1e-5, **kwargs):
        super().__init__(**kwargs)
        self.epsilon = epsilon

    def build(self, input_shape):
        channels = input_shape[-1]
        self.gamma = self.add_weight(shape=(channels,), initializer="ones", name="gamma")
        self.beta = self.add_weight(shape=(channels,), initializer="zeros", name="beta")

    def call(self, inputs):
        # The variables are read here, outside the custom gradient, so their gradients flow back through
        # Keras' autocast to them.
        return instance_norm(inputs, ops.cast(self.gamma, "float32"), ops.cast(self.beta, "float32"), self.epsilon)

    def get_config(self):
        return {**super().get_config(), "epsilon": self.epsilon}


def instance_norm(inputs, gamma, beta, epsilon: float):
    """`InstanceNormalization`'s function, with its gradient written out in closed form.

    Left to automatic differentiation, the gradient runs through the float32 statistics op by op (casts,
    broadcasts of the mean's and variance's gradients, squared differences): more time in a bfloat16 training
    step than the residual blocks' convolutions' gradient to the input (docs/speed.md). Written out, it is two
    per-channel sums in float32 and one multiply-add per element in the compute dtype.

    Args:
        inputs: NHWC activations, in the compute dtype.
        gamma, beta: per-channel scale and shift, float32.
        epsilon: added to the variance before the square root.
    """

    @ops.custom_gradient
    def normalize(x, gamma, beta):
        # bfloat16 sums lose the mean of a large image to rounding: statistics in float32.
        x32 = ops.cast(x, "float32")
        mean, variance = ops.moments(x32, axes=(1, 2), keepdims=True)
        inverse = ops.rsqrt(variance + epsilon)
        scale = gamma * inverse
        shift = beta - mean * scale

        def grad(*args, upstream=None):
            if upstream is None:
                (upstream,) = args
            # With x_hat = (x - mean) * inverse and y = gamma * x_hat + beta, over the M pixels of each image:
            # d_beta = sum(dy), d_gamma = sum(dy * x_hat), and
            # dx = scale * (dy - mean(dy) - x_hat * mean(dy * x_hat)) = scale * dy + b * x + c per channel.
            dy32 = ops.cast(upstream, "float32")
            pixels = ops.cast(ops.shape(x)[1] * ops.shape(x)[2], "float32")
            sum_dy = ops.sum(dy32, axis=(1, 2), keepdims=True)
            sum_dy_x_hat = (ops.sum(dy32 * x32, axis=(1, 2), keepdims=True) - mean * sum_dy) * inverse
            b = -scale * inverse * sum_dy_x_hat / pixels
            c = -scale * sum_dy / pixels - b * mean
            dtype = upstream.dtype
            d_x = upstream * ops.cast(scale, dtype) + (x * ops.cast(b, dtype) + ops.cast(c, dtype))
            return d_x, ops.sum(sum_dy_x_hat, axis=(0, 1, 2)), ops.sum(sum_dy, axis=(0, 1, 2))

        return x * ops.cast(scale, x.dtype) + ops.cast(shift, x.dtype), grad

    return normalize(inputs, gamma, beta)


@keras.saving.register_keras_serializable(package="deblur")
class Channels(layers.Layer):
    """Channels `start` to `stop` (exclusive) of an NHWC tensor: the kernel-aware network's two inputs come
    stacked in one tensor, so that tiling, batching and exporting treat it as one image.

    Args:
        start: the first channel kept.
        stop: one past the last channel kept.
    """

    def __init__(self, start: int = 0, stop: int = 3, **kwargs):
        super().__init__(**kwargs)
        self.start = start
        self.stop = stop

    def call(self, inputs):
        return inputs[..., self.start : self.stop]

    def compute_output_shape(self, input_shape):
        return (*input_shape[:-1], self.stop - self.start)

    def get_config(self):
        return {**super().get_config(), "start": self.start, "stop": self.stop}


@keras.saving.register_keras_serializable(package="deblur")
class GatedMix(layers.Layer):
    """`blurry + gate * (deconvolved - blurry)` per pixel: the kernel-aware network's choice, pixel by pixel,
    between the photo and its deconvolution, which its residual then corrects. Inputs: blurry, deconvolved (NHWC,
    3 channels) and the gate (NHWC, 1 channel, in [0, 1])."""

    def call(self, inputs):
        blurry, deconvolved, gate = inputs
        return blurry + gate * (deconvolved - blurry)

    def compute_output_shape(self, input_shape):
        return input_shape[0]


# === Network ===

# The kernel-aware network's gate starts here (before its sigmoid): 5% of the deconvolution, so that a network
# started from the plain one's weights (`start_from_network`) first gives nearly what the plain one gives.
GATE_START = -3.0
# The gate's logit is its convolution's output times this: Adam moves each weight by about the learning rate a
# step, so an unscaled gate crept from 5% (at 2,500 steps it still kept a fifth of a deconvolution worth +6.7 dB on
# Lai's photos, giving +3.3); scaled, its steps are this many times larger, as if its own learning rate were.
GATE_GAIN = 8.0


def build_generator(
    width: int = 64,
    blocks: int = 9,
    norm: str = "instance",
    dropout: float = 0.0,
    zero_init_output: bool = True,
    kernel_aware: bool = False,
    *,
    dtype: str | None = None,
    name: str = "deblur_generator",
) -> keras.Model:
    """Build the DeblurGAN generator (Kupyn et al., 2018) for images of any size.

    The kernel-aware network (`kernel_aware`) is the same generator given the blurry photo and the kernel path's
    deconvolution of it (`deblur.shake.restore.deconvolved`), stacked as 6 channels, blurry first. It returns
    `blurry + gate * (deconvolved - blurry) + residual`, both from its last layer: where the deconvolution is
    right, it keeps it at full resolution (the generator's own path runs at a quarter of it and could not copy
    its detail); where it rings, lifts noise or meets blur the kernel does not explain, it leans on the photo and
    corrects what is left.

    Args:
        width: channels of the first convolution; the residual blocks run at `4 * width`.
        blocks: number of residual blocks.
        norm: "instance" (per image and channel, `InstanceNormalization`), "batch" or "none".
        dropout: dropout rate inside the residual blocks (0 disables it).
        zero_init_output: start the last convolution at zero, so the untrained network returns its input;
            training then only has to learn the correction, which it does much faster.
        kernel_aware: take the photo and its deconvolution (6 channels), as above.
        dtype: a dtype policy name for the whole model; None uses Keras' global policy.
        name: the model's name.

    A value a config's `model` section would refuse raises `deblur.config.ConfigError`, naming its key.

    Example:
        >>> model = build_generator(width=8, blocks=1)
        >>> model(keras.ops.zeros((1, 37, 53, 3))).shape
        (1, 37, 53, 3)
    """
    # Checked as a config's model section is (ConfigError naming the key): called directly, norm="layer" had built a
    # model with no normalization and no biases, and blocks=-1 one with no blocks, without a word.
    checked = ModelConfig(width, blocks, norm, dropout, zero_init_output, kernel_aware)
    width, blocks = checked.width, checked.blocks  # Python's ints, as the saved model's config holds them
    # The skip path stays float32 whatever the policy: bfloat16 would quantize the image it adds back.
    channels = 6 if kernel_aware else 3
    inputs = keras.Input(shape=(None, None, channels), name="blurry_and_deconvolved" if kernel_aware else "blurry")
    stacked = PadToMultiple(4, dtype="float32", name="pad_to_multiple")(inputs)
    padded = Channels(0, 3, dtype="float32", name="blurry_channels")(stacked) if kernel_aware else stacked

    def norm_layer(x, label):
        if norm == "instance":
            return InstanceNormalization(epsilon=1e-5, dtype=dtype, name=f"{label}_norm")(x)
        if norm == "batch":
            return layers.BatchNormalization(dtype=dtype, name=f"{label}_norm")(x)
        return x

    def norm_relu(x, label):
        return layers.ReLU(dtype=dtype, name=f"{label}_relu")(norm_layer(x, label))

    def conv(x, filters, kernel, label, strides=1, padding="same"):
        return layers.Conv2D(
            filters, kernel, strides=strides, padding=padding, use_bias=norm == "none", dtype=dtype, name=label
        )(x)

    x = ReflectionPad2D(3, dtype=dtype, name="head_pad")(stacked)
    x = norm_relu(conv(x, width, 7, "head_conv", padding="valid"), "head")
    x = norm_relu(conv(x, 2 * width, 3, "down1_conv", strides=2), "down1")
    x = norm_relu(conv(x, 4 * width, 3, "down2_conv", strides=2), "down2")

    for i in range(blocks):
        label = f"block{i + 1}"
        h = ReflectionPad2D(1, dtype=dtype, name=f"{label}_pad1")(x)
        h = norm_relu(conv(h, 4 * width, 3, f"{label}_conv1", padding="valid"), f"{label}_a")
        if dropout:
            h = layers.Dropout(dropout, dtype=dtype, name=f"{label}_dropout")(h)
        h = ReflectionPad2D(1, dtype=dtype, name=f"{label}_pad2")(h)
        h = norm_layer(conv(h, 4 * width, 3, f"{label}_conv2", padding="valid"), f"{label}_b")
        x = layers.Add(dtype=dtype, name=f"{label}_add")([x, h])

    # Nearest upsampling + conv rather than transposed convs, which leave checkerboard artifacts.
    x = layers.UpSampling2D(2, interpolation="nearest", dtype=dtype, name="up1")(x)
    x = norm_relu(conv(x, 2 * width, 3, "up1_conv"), "up1")
    x = layers.UpSampling2D(2, interpolation="nearest", dtype=dtype, name="up2")(x)
    x = norm_relu(conv(x, width, 3, "up2_conv"), "up2")

    x = ReflectionPad2D(3, dtype=dtype, name="tail_pad")(x)
    init = "zeros" if zero_init_output else "glorot_uniform"
    # The tail conv runs in the compute dtype (bfloat16 halves its time, measured): only the residual is rounded,
    # to about 0.4% of itself, well under one 8-bit level; the image added back below stays float32.
    tail = x
    x = layers.Conv2D(3, 7, padding="valid", kernel_initializer=init, dtype=dtype, name="tail_conv")(tail)
    residual = layers.Activation("tanh", dtype="float32", name="tail_tanh")(x)
    base = padded
    if kernel_aware:
        gate = layers.Conv2D(
            1,
            7,
            padding="valid",
            kernel_initializer=init,
            bias_initializer=keras.initializers.Constant(GATE_START / GATE_GAIN),
            dtype=dtype,
            name="gate_conv",
        )(tail)
        gate = layers.Rescaling(GATE_GAIN, dtype="float32", name="gate_gain")(gate)
        gate = layers.Activation("sigmoid", dtype="float32", name="gate")(gate)
        deconvolved = Channels(3, 6, dtype="float32", name="deconvolved_channels")(stacked)
        base = GatedMix(dtype="float32", name="gated_mix")([padded, deconvolved, gate])
    sharp = layers.Add(dtype="float32", name="global_skip")([base, residual])
    sharp = layers.ReLU(max_value=1.0, dtype="float32", name="clip_to_range")(sharp)
    sharp = CropToMatch(dtype="float32", name="crop_to_input")([sharp, inputs])
    return keras.Model(inputs, sharp, name=name)


def with_mix(model: keras.Model) -> keras.Model:
    """The kernel-aware network as `train.mix_weight` trains it: the same layers and weights, giving its output and
    its gated mix of the photo and the deconvolution (before the residual), both the input's size."""
    mix = CropToMatch(dtype="float32", name="mix_crop")([model.get_layer("gated_mix").output, model.input])
    return keras.Model(model.input, [model.output, mix], name=f"{model.name}_with_mix")


def with_gate(model: keras.Model) -> keras.Model:
    """The kernel-aware network as the default runs it: the same layers and weights, its output with its gate (the
    share of the deconvolution kept, `build_generator`) as a fourth channel, the input's size. A model that already
    gives it comes back as it is."""
    if model.outputs[0].shape[-1] == 4:
        return model
    gate = CropToMatch(dtype="float32", name="gate_crop")([model.get_layer("gate").output, model.input])
    both = layers.Concatenate(dtype="float32", name="output_and_gate")([model.output, gate])
    return keras.Model(model.input, both, name=f"{model.name}_with_gate")


def is_kernel_aware(model: keras.Model) -> bool:
    """Whether `model` takes the photo and its deconvolution (6 channels) rather than the photo alone."""
    return model.inputs[0].shape[-1] == 6


def start_from_network(model: keras.Model, network: keras.Model) -> None:
    """Set a kernel-aware `model`'s weights from a plain `network` of the same width and blocks: every layer
    takes the network's weights, the first convolution's deconvolution channels start at zero and the gate as
    built, so the new model first gives what the network gives, with 5% of the deconvolution mixed in."""
    theirs = {layer.name: layer for layer in network.layers}
    for layer in model.layers:
        source = theirs.get(layer.name)
        if source is None or not layer.weights:
            continue
        weights = source.get_weights()
        if layer.name == "head_conv":
            kernel = np.zeros(layer.get_weights()[0].shape, np.float32)
            kernel[:, :, :3] = weights[0]
            weights = [kernel, *weights[1:]]
        layer.set_weights(weights)
