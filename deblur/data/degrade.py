"""One synthetic blurry photo from a sharp one, as `SynthConfig` says: the blur, then noise, then 8-bit rounding."""

from __future__ import annotations

import numpy as np

from deblur.config import SynthConfig
from deblur.data.synth import GAMMA, apply_blur, random_kernel


def degrade(sharp: np.ndarray, rng: np.random.Generator, synth: SynthConfig) -> tuple[np.ndarray, np.ndarray | None]:
    """Blur an HWC RGB uint8 photo; returns the blurry photo (uint8) and the kernel, or None for motion blur,
    which has no single kernel."""
    image = sharp.astype(np.float32) / 255.0
    if synth.blur == "kernel":
        kernel = random_kernel(rng, synth.min_length, synth.max_length)
        if synth.linear_light:
            blurred = np.power(np.clip(apply_blur(np.power(image, GAMMA), kernel), 0.0, 1.0), 1.0 / GAMMA)
        else:
            blurred = apply_blur(image, kernel)
    else:
        from deblur.data.motion import camera_path, motion_blur  # TensorFlow: loaded only for motion blur

        kernel = None
        length = rng.uniform(synth.min_length, synth.max_length)
        frames = camera_path(rng, length, synth.max_rotation, synth.max_zoom, image.shape[:2])
        blurred = motion_blur(image, frames, linear=synth.linear_light)
    if synth.noise:
        blurred = blurred + rng.normal(0.0, synth.noise, blurred.shape)
    return np.clip(np.round(blurred * 255.0), 0, 255).astype(np.uint8), kernel
