"""Synthetic pairs on disk: a photo's pairs written into `<folder>/{blur,sharp}` with their kernels in
`<folder>/kernel`, as the demo data and `deblur data synth` lay them out, and where a pair's kernel is found."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image

from deblur.config import SynthConfig
from deblur.data.degrade import degrade


def kernel_file(blurry: Path) -> Path:
    """Where a pair's blur kernel is kept: `<folder>/kernel/<name>.npy` beside `<folder>/blur/<name>.png`."""
    return blurry.parent.parent / "kernel" / f"{blurry.stem}.npy"


def write_pairs(sharp: np.ndarray, folder: Path, synth: SynthConfig, rng: np.random.Generator) -> None:
    """Write `synth.pairs_per_photo` blurry versions of one sharp photo into `folder/{blur,sharp}`, with each
    pair's kernel in `folder/kernel` when the blur has one."""
    for sub in ("blur", "sharp"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    for k in range(synth.pairs_per_photo):
        blurry, kernel = degrade(sharp, rng, synth)
        name = f"{k:03d}.png"
        Image.fromarray(blurry).save(folder / "blur" / name)
        Image.fromarray(sharp).save(folder / "sharp" / name)
        if kernel is not None:
            kernel_file(folder / "blur" / name).parent.mkdir(exist_ok=True)
            np.save(kernel_file(folder / "blur" / name), kernel)
