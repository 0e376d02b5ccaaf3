"""The kernel-aware network's second input for a synthetic pair: the blurry photo deconvolved as the kernel path
would deconvolve it, by its blind estimate, or by the true kernel with an estimate's errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from deblur.config import SynthConfig


def deconvolved_file(blurry: Path) -> Path:
    """Where a pair's deconvolution is kept: `<folder>/deconvolved/<name>` beside `<folder>/blur/<name>`."""
    return blurry.parent.parent / "deconvolved" / blurry.name


def deconvolution_input(
    blurry: np.ndarray, kernel: np.ndarray | None, rng: np.random.Generator, synth: SynthConfig
) -> np.ndarray:
    """The HWC RGB uint8 deconvolution of a uint8 blurry photo: what `deblur.shake.restore.deconvolved` gives at
    inference for `synth.estimated_share` of the pairs and every pair without one kernel, else the true `kernel`
    misestimated (`deblur.data.kernel_errors`) and cleaned as an estimate is."""
    from deblur.data.kernel_errors import misestimate  # scipy and the kernel path: only for these recipes
    from deblur.shake.deconvolve import deconvolve
    from deblur.shake.estimate import clean
    from deblur.shake.restore import deconvolved

    image = blurry.astype(np.float32) / 255.0
    if rng.random() < synth.estimated_share or kernel is None:
        result = deconvolved(image)
    else:
        result = deconvolve(image, clean(misestimate(kernel, rng)))
    return np.clip(np.round(result * 255.0), 0, 255).astype(np.uint8)
