"""Validation each epoch: PSNR and SSIM of the model's output and of the blurry input, and image strips."""

from __future__ import annotations

import numpy as np
import tensorflow as tf


def validate(eval_step, validation: tf.data.Dataset, keep: int):
    """Mean PSNR/SSIM of the model's output and of the blurry input; a few blurry|restored|sharp strips."""
    sums = np.zeros(4)
    count = 0
    samples = []
    for blurry, sharp in validation:
        scores, restored = eval_step(blurry, sharp)
        sums += [float(s[0]) for s in scores]
        count += 1
        if len(samples) < keep:
            # blurry | (its deconvolution, for the kernel-aware network) | restored | sharp
            inputs = tf.concat(tf.split(blurry, blurry.shape[-1] // 3, axis=-1), axis=2)
            samples.append(tf.concat([inputs, restored, sharp], axis=2)[0])
    names = ("val_psnr", "val_ssim", "val_psnr_blurry", "val_ssim_blurry")
    values = {name: round(float(v / max(count, 1)), 4) for name, v in zip(names, sums, strict=True)}
    # Strips differ in size when validating whole images; TensorBoard wants one batch, so keep equal shapes.
    if samples and all(s.shape == samples[0].shape for s in samples):
        return values, tf.stack(samples)
    return values, (samples[0][None] if samples else None)
