"""Synthetic pairs on disk: a photo's pairs written into `<folder>/{blur,sharp}` with their kernels in
`<folder>/kernel` (and, for the kernel-aware network, their deconvolutions in `<folder>/deconvolved`), as the demo
data and `deblur data synth` lay them out, and where a pair's kernel is found."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image

from deblur.config import SynthConfig
from deblur.data.deconvolved import deconvolution_input, deconvolved_file
from deblur.data.degrade import degrade_pair


def kernel_file(blurry: Path) -> Path:
    """Where a pair's blur kernel is kept: `<folder>/kernel/<name>.npy` beside `<folder>/blur/<name>.png`."""
    return blurry.parent.parent / "kernel" / f"{blurry.stem}.npy"


def write_pairs(sharp: np.ndarray, folder: Path, synth: SynthConfig, rng: np.random.Generator) -> None:
    """Write `synth.pairs_per_photo` blurry versions of one sharp photo into `folder/{blur,sharp}`, with each
    pair's kernel in `folder/kernel` when the blur has one, and its deconvolution in `folder/deconvolved` when
    `synth.deconvolve`."""
    for sub in ("blur", "sharp") + (("deconvolved",) if synth.deconvolve else ()):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    for k in range(synth.pairs_per_photo):
        target, blurry, kernel = degrade_pair(sharp, rng, synth)
        name = f"{k:03d}.png"
        Image.fromarray(blurry).save(folder / "blur" / name)
        Image.fromarray(target).save(folder / "sharp" / name)
        if kernel is not None:
            kernel_file(folder / "blur" / name).parent.mkdir(exist_ok=True)
            np.save(kernel_file(folder / "blur" / name), kernel)
        if synth.deconvolve:
            deconvolved = deconvolution_input(blurry, kernel, rng, synth)
            Image.fromarray(deconvolved).save(deconvolved_file(folder / "blur" / name))
