"""Pairs made where the network trains (`data.device_pairs`): the same blur as the CPU path, the kernel-aware
input, and the recipes the device path refuses."""

import dataclasses

import numpy as np
import pytest
from skimage import data

from deblur.config import ConfigError, DataConfig, SynthConfig, load_config
from deblur.data.device_pairs import _padded, blur_batch, check_patch_size, draw, kernel_size, make_pairs
from deblur.data.kernels import GAMMA, apply_blur, random_kernel


def psnr(a, b) -> float:
    return float(10 * np.log10(1 / np.mean((np.asarray(a, np.float64) - np.asarray(b, np.float64)) ** 2)))


def test_the_device_blurs_as_the_cpu_path_does_in_srgb_values_and_in_linear_light():
    rng = np.random.default_rng(0)
    sharp = np.stack([data.astronaut()[:96, :96], data.coffee()[:96, :96]]).astype(np.float32) / 255
    first, second = random_kernel(rng, 9, 9), random_kernel(rng, 15, 15, frames=9, path="smooth")
    out = np.asarray(blur_batch(sharp, np.stack([_padded(first, 31), _padded(second, 31)]), np.array([0.0, 1.0])))
    assert psnr(out[0], apply_blur(sharp[0], first)) > 50
    linear = np.power(np.clip(apply_blur(np.power(sharp[1], GAMMA), second), 0, 1), 1 / GAMMA)
    assert psnr(out[1], linear) > 50


def test_a_batch_of_kernel_aware_pairs_is_made_from_sharp_patches():
    recipe = dataclasses.replace(load_config("kernel-aware").data.synth, varying=0, clipped_share=0, jpeg_share=0)
    recipe = dataclasses.replace(recipe, max_length=20.0, sharp_share=0.5)
    patches = np.stack([data.astronaut()[:64, :64], data.coffee()[:64, :64], data.chelsea()[:64, :64]])
    drawn = draw(patches, np.random.default_rng(3), recipe)
    assert drawn.kernels.shape == drawn.estimates.shape == (3, kernel_size(recipe), kernel_size(recipe))
    np.testing.assert_allclose(drawn.kernels.sum(axis=(1, 2)), 1, atol=1e-5)
    inputs, sharp = make_pairs(drawn, 7, kernel_aware=True)
    inputs, sharp = np.asarray(inputs), np.asarray(sharp)
    assert inputs.shape == (3, 64, 64, 6) and sharp.shape == (3, 64, 64, 3)
    np.testing.assert_allclose(sharp, patches / 255, atol=1e-6)
    assert inputs.min() >= 0 and inputs.max() <= 1
    np.testing.assert_allclose(inputs * 255, np.round(inputs * 255), atol=1e-3)  # 8-bit, as stored pairs are
    plain, _ = make_pairs(drawn, 7, kernel_aware=False)
    np.testing.assert_allclose(np.asarray(plain), inputs[..., :3], atol=1e-6)


def test_the_device_path_refuses_what_only_the_cpu_makes():
    with pytest.raises(ConfigError, match="does not make data.synth.varying, data.synth.jpeg_share"):
        DataConfig(device_pairs=True, synth=SynthConfig(varying=0.5, jpeg_share=0.2))
    with pytest.raises(ConfigError, match="does not make data.synth.soft_share"):
        DataConfig(device_pairs=True, synth=SynthConfig(soft_share=0.1))
    with pytest.raises(ConfigError, match="kernel blur only"):
        DataConfig(device_pairs=True, synth=SynthConfig(blur="motion"))
    with pytest.raises(ConfigError, match="data.patch_size must be larger"):
        check_patch_size(64, SynthConfig(max_length=80.0))
