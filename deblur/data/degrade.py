"""One synthetic blurry photo from a sharp one, as `SynthConfig` says: the blur, then noise, then 8-bit rounding."""

from __future__ import annotations

import numpy as np

from deblur.config import SynthConfig
from deblur.data.kernels import GAMMA, apply_blur, blur_mask, random_kernel


def degrade(sharp: np.ndarray, rng: np.random.Generator, synth: SynthConfig) -> tuple[np.ndarray, np.ndarray | None]:
    """Blur an HWC RGB uint8 photo; returns the blurry photo (uint8) and the kernel, or None when the blur has no
    single kernel (motion blur, or a kernel that varies across the photo)."""
    image = sharp.astype(np.float32) / 255.0
    if synth.blur == "kernel":
        # Drawn only when asked for, so recipes without frames keep their exact pairs for a given seed.
        frames = int(rng.integers(synth.min_frames, synth.max_frames + 1)) if synth.max_frames else 0
        path = synth.path if synth.path != "mixed" else ("smooth" if rng.random() < 0.5 else "shake")
        kernel = random_kernel(rng, synth.min_length, synth.max_length, frames, path)
        light = np.power(image, GAMMA) if synth.linear_light else image
        blurred = apply_blur(light, kernel)
        if synth.varying and rng.random() < synth.varying:
            # The strong kernel over random regions, a weak one (or none: sharp) elsewhere; no single kernel.
            weak = random_kernel(rng, 0.5, max(0.5, synth.min_length)) if rng.random() < 0.5 else None
            mask = blur_mask(rng, image.shape[:2])[:, :, None]
            blurred = mask * blurred + (1.0 - mask) * (light if weak is None else apply_blur(light, weak))
            kernel = None
        if synth.linear_light:
            blurred = np.power(np.clip(blurred, 0.0, 1.0), 1.0 / GAMMA)
    else:
        from deblur.data.motion import camera_path, motion_blur  # TensorFlow: loaded only for motion blur

        kernel = None
        length = rng.uniform(synth.min_length, synth.max_length)
        frames = camera_path(rng, length, synth.max_rotation, synth.max_zoom, image.shape[:2])
        blurred = motion_blur(image, frames, linear=synth.linear_light)
    # Drawn only with min_noise, so recipes without it keep their exact pairs for a given seed.
    noise = synth.noise if synth.min_noise is None else rng.uniform(synth.min_noise, synth.noise)
    if noise:
        blurred = blurred + rng.normal(0.0, noise, blurred.shape)
    return np.clip(np.round(blurred * 255.0), 0, 255).astype(np.uint8), kernel
