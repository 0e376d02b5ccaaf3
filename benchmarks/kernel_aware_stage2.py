"""Stage 2 of the shipped kernel-aware network: stage 1's pairs with fewer of those whose deconvolution is wrong.

In stage 1's pairs (`deblur data synth --config kernel-aware`) 44% of the deconvolutions lose more than 1 dB on
the blurry photo and 24% gain more than 1 dB; on real shaken photos the kernel path is right far more often (65 of
Lai et al.'s 100 by eye), and the network trained on them kept too little of a right deconvolution. This leaves
out a seeded 65% of the pairs that lose more than 1 dB (pairs left sharp are all kept), links the rest into a new
folder (the held-out split linked whole), and prints the shares before and after.

    python benchmarks/kernel_aware_stage2.py DATA DATA2
    deblur train --config kernel-aware --data DATA2 --out RUN2 --init RUN/model.keras --epochs 3 \\
        --set train.learning_rate=1e-4 --set train.warmup_steps=50
"""

from __future__ import annotations

import argparse
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
from PIL import Image

KEEP_WRONG = 0.35  # the share kept of the pairs whose deconvolution loses more than 1 dB
SEED = 0


def gain(pair: tuple[Path, str]) -> float:
    """PSNR of the pair's deconvolution over its blurry photo's, against the sharp photo (dB)."""
    folder, name = pair
    sharp, blurry, deconvolved = (
        np.asarray(Image.open(folder / part / name).convert("RGB"), np.float64) / 255
        for part in ("sharp", "blur", "deconvolved")
    )
    error = lambda image: np.mean((image - sharp) ** 2) + 1e-12  # noqa: E731
    return float(10 * np.log10(error(blurry) / error(deconvolved)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path, help="stage 1's pairs (GOPRO layout, with deconvolved/)")
    parser.add_argument("out", type=Path, help="a new folder for stage 2's pairs")
    args = parser.parse_args()
    if args.out.exists():
        raise SystemExit(f"{args.out} exists: give a new folder")
    pairs = [(f, p.name) for f in sorted((args.data / "train").iterdir()) for p in sorted((f / "blur").iterdir())]
    if not pairs or not all((f / "deconvolved" / name).is_file() for f, name in pairs):
        raise SystemExit(f"{args.data}: no training pairs with deconvolved/ (deblur data synth --config kernel-aware)")
    with ProcessPoolExecutor(os.cpu_count()) as pool:
        gains = np.array(list(pool.map(gain, pairs, chunksize=16)))
    wrong = (gains < -1) & (gains > -40)  # under -40 dB: a pair left sharp, whose blurry photo is the sharp one
    keep = ~wrong | (np.random.default_rng(SEED).random(len(gains)) < KEEP_WRONG)
    for label, chosen in (("stage 1", np.ones_like(keep)), ("stage 2", keep)):
        print(
            f"{label}: {chosen.sum()} pairs, {np.mean(gains[chosen] > 1):.0%} gain more than 1 dB by their "
            f"deconvolution, {np.mean(wrong[chosen]):.0%} lose more than 1 dB"
        )
    (args.out / "train").mkdir(parents=True)
    (args.out / "test").symlink_to((args.data / "test").resolve())
    for (folder, name), kept in zip(pairs, keep, strict=True):
        if kept:
            for part in ("blur", "sharp", "deconvolved"):
                target = args.out / "train" / folder.name / part
                target.mkdir(parents=True, exist_ok=True)
                (target / name).symlink_to((folder / part / name).resolve())
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
