"""Blurry/sharp training pairs from any folder of sharp photos; the same code as `deblur data synth`.

python data_scripts/make_synthetic_pairs.py --src photos/ --out data/synthetic [--per-image 4] [--seed 0]
    [--val-fraction 0.1] [--min-length 3] [--max-length 11] [--noise 0.01] [--max-side 1280]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from deblur.config import ConfigError, SynthConfig
from deblur.data.make_pairs import synthesize_pairs
from deblur.data.pairs import DatasetError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--src", type=Path, required=True, help="folder of sharp photos")
    parser.add_argument("--out", type=Path, required=True, help="new folder for the pairs")
    parser.add_argument("--per-image", type=int, default=4, help="blurry versions of each photo")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--val-fraction", type=float, default=0.1, help="share of photos held out in test/")
    parser.add_argument("--min-length", type=float, default=3.0, help="shortest shake path, pixels")
    parser.add_argument("--max-length", type=float, default=11.0, help="longest shake path, pixels")
    parser.add_argument("--noise", type=float, default=0.01, help="Gaussian noise std in [0, 1] units")
    parser.add_argument("--max-side", type=int, help="scale photos down to this longer side first")
    args = parser.parse_args(argv)
    try:
        synth = SynthConfig(args.min_length, args.max_length, args.noise, args.per_image, args.seed)
        synthesize_pairs(args.src, args.out, synth, val_fraction=args.val_fraction, max_side=args.max_side)
    except (ConfigError, DatasetError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
