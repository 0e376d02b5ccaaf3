"""One synthetic blurry photo from a sharp one, as `SynthConfig` says: the blur, then noise, 8-bit rounding and,
for a share of photos, a JPEG round trip."""

from __future__ import annotations

import io

import numpy as np
from PIL import Image
from scipy.ndimage import gaussian_filter

from deblur.config import SynthConfig
from deblur.data.kernels import GAMMA, apply_blur, blur_mask, random_kernel

# With `log_length`, no shake longer than this share of the photo's long side: the kernel path estimates at most
# a 45 px kernel on a 384 px copy (12%), and real shake that long is rare.
LONGEST_SHARE = 0.12
JPEG_QUALITY = (70, 95)  # a camera's or a phone's JPEG, and a shared photo's recompression
# Clipped lights: the brightest pixels (this share of the photo, if near white) made up to this much brighter in
# linear light before the blur, then clipped, as night lights and reflections saturate a sensor and their blur
# streaks stay white.
CLIPPED_TOP = 0.02
CLIPPED_GAIN = (2.0, 8.0)
# A soft photo (`soft_share`): a Gaussian of this std in pixels, drawn per pair: softer than a photo downscaled from
# a camera's, as soft as a lens or a video frame can be (chosen by eye, not measured).
SOFT_SIGMA = (0.6, 1.5)


def degrade(sharp: np.ndarray, rng: np.random.Generator, synth: SynthConfig) -> tuple[np.ndarray, np.ndarray | None]:
    """Blur an HWC RGB uint8 photo; returns the blurry photo (uint8) and the kernel, or None when the blur has no
    single kernel (motion blur, or a kernel that varies across the photo). For recipes that change the sharp
    photo too (`clipped_share`, `soft_share`), `degrade_pair`."""
    _, blurry, kernel = degrade_pair(sharp, rng, synth)
    return blurry, kernel


def degrade_pair(
    sharp: np.ndarray, rng: np.random.Generator, synth: SynthConfig
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """(sharp, blurry, kernel) as uint8, uint8 and float32 (or None): the sharp photo differs from the input only
    where its lights were clipped or it was softened. A pair left sharp (`sharp_share`) or soft (`soft_share`) has the
    1 x 1 kernel: it is not blurred away from its sharp photo."""
    image = sharp.astype(np.float32) / 255.0
    # Each new draw is made only when its setting asks for it, so older recipes keep their exact pairs for a seed.
    linear = synth.linear_light or bool(synth.linear_share and rng.random() < synth.linear_share)
    if synth.clipped_share and rng.random() < synth.clipped_share:
        image = _clip_lights(image, rng)
        sharp = np.round(np.clip(image, 0, 1) * 255).astype(np.uint8)
    if synth.sharp_share and rng.random() < synth.sharp_share:
        blurred, kernel = np.clip(image, 0, 1), np.ones((1, 1), np.float32)
    elif synth.soft_share and rng.random() * (1 - synth.sharp_share) < synth.soft_share:
        # a share of all pairs: drawn among those not left sharp
        image = _soften(image, rng, linear)
        sharp = np.round(image * 255).astype(np.uint8)
        blurred, kernel = image, np.ones((1, 1), np.float32)
    elif synth.blur == "kernel":
        blurred, kernel = _kernel_blur(image, rng, synth, linear)
    else:
        from deblur.data.motion import camera_path, motion_blur  # TensorFlow: loaded only for motion blur

        kernel = None
        length = rng.uniform(synth.min_length, synth.max_length)
        frames = camera_path(rng, length, synth.max_rotation, synth.max_zoom, image.shape[:2])
        blurred = motion_blur(image, frames, linear=linear)
    # Drawn only with min_noise, so recipes without it keep their exact pairs for a given seed.
    noise = synth.noise if synth.min_noise is None else rng.uniform(synth.min_noise, synth.noise)
    if noise:
        blurred = blurred + rng.normal(0.0, noise, blurred.shape)
    blurry = np.clip(np.round(blurred * 255.0), 0, 255).astype(np.uint8)
    if synth.jpeg_share and rng.random() < synth.jpeg_share:
        blurry = jpeg_round_trip(blurry, int(rng.integers(JPEG_QUALITY[0], JPEG_QUALITY[1] + 1)))
    return sharp, blurry, kernel


def _kernel_blur(
    image: np.ndarray, rng: np.random.Generator, synth: SynthConfig, linear: bool
) -> tuple[np.ndarray, np.ndarray | None]:
    # Drawn only when asked for, so recipes without frames keep their exact pairs for a given seed.
    frames = 0
    if synth.max_frames and (synth.frames_share >= 1 or rng.random() < synth.frames_share):
        frames = int(rng.integers(synth.min_frames, synth.max_frames + 1))
    path = synth.path if synth.path != "mixed" else ("smooth" if rng.random() < 0.5 else "shake")
    if synth.log_length:
        longest = max(synth.min_length, min(synth.max_length, LONGEST_SHARE * max(image.shape[:2])))
        length = float(np.exp(rng.uniform(np.log(synth.min_length), np.log(longest))))
        kernel = random_kernel(rng, length, length, frames, path)
    else:
        kernel = random_kernel(rng, synth.min_length, synth.max_length, frames, path)
    light = np.power(np.maximum(image, 0), GAMMA) if linear else image
    blurred = apply_blur(light, kernel)
    if synth.varying and rng.random() < synth.varying:
        # The strong kernel over random regions, a weak one (or none: sharp) elsewhere; no single kernel.
        weak = random_kernel(rng, 0.5, max(0.5, synth.min_length)) if rng.random() < 0.5 else None
        mask = blur_mask(rng, image.shape[:2])[:, :, None]
        blurred = mask * blurred + (1.0 - mask) * (light if weak is None else apply_blur(light, weak))
        kernel = None
    if linear:
        blurred = np.power(np.clip(blurred, 0.0, 1.0), 1.0 / GAMMA)
    return np.clip(blurred, 0.0, 1.0), kernel


def _soften(image: np.ndarray, rng: np.random.Generator, linear: bool) -> np.ndarray:
    """The photo through a Gaussian of a `SOFT_SIGMA` std, in linear light where `linear` (as a lens blurs)."""
    sigma = rng.uniform(*SOFT_SIGMA)
    light = np.power(np.clip(image, 0, 1), GAMMA) if linear else np.clip(image, 0, 1)
    soft = gaussian_filter(light, sigma=(sigma, sigma, 0), mode="reflect")
    return np.clip(np.power(soft, 1 / GAMMA) if linear else soft, 0.0, 1.0)


def _clip_lights(image: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The photo with its brightest spots made brighter than white (values above 1), in sRGB values."""
    luma = image.mean(axis=2)
    # from a little below the brightest share's level (so that those pixels are raised too), never below 0.8
    level = max(float(np.quantile(luma, 1 - CLIPPED_TOP)) - 0.05, 0.8)
    bright = np.clip((luma - level) / max(1 - level, 1e-3), 0, 1)[:, :, None]
    gain = rng.uniform(*CLIPPED_GAIN)
    light = np.power(image, GAMMA) * (1 + (gain - 1) * bright)
    return np.power(light, 1 / GAMMA)


def jpeg_round_trip(image: np.ndarray, quality: int) -> np.ndarray:
    """An HWC RGB uint8 image as a JPEG of `quality` would give it back."""
    buffer = io.BytesIO()
    Image.fromarray(image).save(buffer, format="JPEG", quality=quality)
    buffer.seek(0)
    with Image.open(buffer) as decoded:
        return np.asarray(decoded.convert("RGB"))
