"""Pixel losses and image metrics, in keras.ops, on batches of NHWC float32 images in [0, 1].

Every function returns one value per image (shape `(N,)`), so distributed training can average over the global
batch and evaluation can report per-image figures.
"""

from __future__ import annotations

from pathlib import Path

import keras
import numpy as np
from keras import ops

from deblur.errors import MissingFileError

CHARBONNIER_EPS = 1e-3  # as in LapSRN / MPRNet: smooth near zero, L1-like elsewhere


def l1_loss(sharp, restored):
    return ops.mean(ops.abs(sharp - restored), axis=(1, 2, 3))


def charbonnier_loss(sharp, restored):
    diff = sharp - restored
    return ops.mean(ops.sqrt(diff * diff + CHARBONNIER_EPS**2), axis=(1, 2, 3))


PIXEL_LOSSES = {"l1": l1_loss, "charbonnier": charbonnier_loss}


def psnr(reference, image, max_val: float = 1.0):
    """Peak signal-to-noise ratio in dB for images in [0, max_val]; identical images give 100 dB."""
    mse = ops.mean(ops.square(reference - image), axis=(1, 2, 3))
    mse = ops.maximum(mse, max_val**2 * 1e-10)
    return 10.0 * ops.log10(max_val**2 / mse)


def image_psnr(reference: np.ndarray, image: np.ndarray) -> float:
    """`psnr` of one HWC image against its reference, both in [0, 1], as a float."""
    reference, image = np.asarray(reference, np.float32), np.asarray(image, np.float32)
    return float(np.asarray(psnr(reference[None], image[None]))[0])


SSIM_WINDOW = 11  # px a side: the smallest image SSIM scores


def _gaussian_window(size: int = SSIM_WINDOW, sigma: float = 1.5) -> np.ndarray:
    offsets = np.arange(size, dtype=np.float64) - (size - 1) / 2
    g = np.exp(-(offsets**2) / (2 * sigma**2))
    g /= g.sum()
    return np.outer(g, g)


def ssim(reference, image, max_val: float = 1.0):
    """Structural similarity (Wang et al., 2004): 11x11 Gaussian window, sigma 1.5, K1 0.01, K2 0.03.

    Matches `tf.image.ssim` and scikit-image's `structural_similarity(gaussian_weights=True, sigma=1.5,
    use_sample_covariance=False, data_range=max_val, channel_axis=-1)`. Images must be at least 11x11.
    """
    channels = reference.shape[-1]
    window = _gaussian_window()[:, :, None, None]
    kernel = ops.convert_to_tensor(np.tile(window, (1, 1, channels, 1)).astype("float32"))

    def blur(x):
        return ops.depthwise_conv(x, kernel, strides=1, padding="valid")

    mu_r, mu_i = blur(reference), blur(image)
    var_r = blur(reference * reference) - mu_r * mu_r
    var_i = blur(image * image) - mu_i * mu_i
    cov = blur(reference * image) - mu_r * mu_i
    c1, c2 = (0.01 * max_val) ** 2, (0.03 * max_val) ** 2
    numerator = (2 * mu_r * mu_i + c1) * (2 * cov + c2)
    denominator = (mu_r * mu_r + mu_i * mu_i + c1) * (var_r + var_i + c2)
    return ops.mean(numerator / denominator, axis=(1, 2, 3))


# === Perceptual loss ===

# ImageNet channel means of the Caffe-trained VGG16 weights, in BGR order, on a 0-255 scale.
_VGG_MEAN_BGR = (103.939, 116.779, 123.68)


def build_vgg_features(weights: str | Path, layer: str = "block3_conv3") -> keras.Model:
    """VGG16 features up to `layer` (conv3_3, as DeblurGAN), from a local ImageNet weights file.

    There is no download here: `weights` must be a `.h5` file for `keras.applications.VGG16(include_top=False)`.
    """
    path = Path(weights)
    if not path.is_file():
        raise MissingFileError(
            f"perceptual loss: VGG16 weights file {path} not found. It needs ImageNet VGG16 weights "
            "(include_top=False, the file keras names vgg16_weights_tf_dim_ordering_tf_kernels_notop.h5) "
            "available locally; set train.vgg_weights to its path or train.perceptual_weight=0"
        )
    vgg = keras.applications.VGG16(include_top=False, weights=str(path), input_shape=(None, None, 3))
    vgg.trainable = False
    return keras.Model(vgg.input, vgg.get_layer(layer).output, name="vgg_features")


def perceptual_loss(features: keras.Model, sharp, restored):
    """Mean squared distance between VGG features of two batches of [0, 1] RGB images."""

    def preprocess(x):
        bgr = ops.flip(x, axis=-1) * 255.0
        return bgr - ops.convert_to_tensor(_VGG_MEAN_BGR, dtype=bgr.dtype)

    f_sharp = ops.cast(features(preprocess(sharp)), "float32")
    f_restored = ops.cast(features(preprocess(restored)), "float32")
    return ops.mean(ops.square(f_sharp - f_restored), axis=(1, 2, 3))


def step_loss(
    pixel_loss, *, mix_weight: float = 0.0, features: keras.Model | None = None, perceptual_weight: float = 0.0
):
    """What a training step minimizes, per image, in both loops: `pixel_loss` of the output; with the gated mix
    beside it (`deblur.model.with_mix`: `restored` is then (output, mix)), `mix_weight` times the mix's; with VGG
    `features`, `perceptual_weight` times the perceptual loss."""

    def loss(sharp, restored):
        mix = None
        if isinstance(restored, (list, tuple)):
            restored, mix = restored
        per_image = pixel_loss(sharp, restored)
        if mix is not None:
            per_image += mix_weight * pixel_loss(sharp, mix)
        if features is not None:
            per_image += perceptual_weight * perceptual_loss(features, sharp, restored)
        return per_image

    return loss
