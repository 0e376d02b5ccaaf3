"""Check a downloaded GOPRO_Large and, if needed, arrange it into the layout `deblur train` reads.

    python data_scripts/organize_gopro.py path/to/GOPRO_Large [--blur blur|blur_gamma] [--out DIR]

Get GOPRO_Large from the authors' page (Nah, Kim and Lee, "Deep Multi-scale Convolutional Neural Network for
Dynamic Scene Deblurring", CVPR 2017). As unpacked, it is read directly: the script checks every pair and prints
the command to train on it. With `--blur blur_gamma` (the gamma-corrected blur) or a copy that names its folders
input/ and target/, it writes a new folder of symbolic links (`--out`), nothing copied. Exit code 1 on problems.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from deblur.data.check import format_summary, summarize
from deblur.data.gopro import arrange_gopro, check_gopro
from deblur.data.pairs import DatasetError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("src", type=Path, help="the unpacked GOPRO_Large folder")
    parser.add_argument("--blur", default="blur", choices=["blur", "blur_gamma"], help="which blurry images")
    parser.add_argument("--out", type=Path, help="new folder for the arranged links (only when arranging)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)
    try:
        check = check_gopro(args.src, args.blur, progress=not args.quiet)
        for note in check.notes:
            print(f"note: {note}")
        if check.problems:
            print(f"error: {args.src} has {len(check.problems)} problem(s):", file=sys.stderr)
            for problem in check.problems[:50]:
                print(f"  - {problem}", file=sys.stderr)
            return 1
        pairs = ", ".join(f"{n} {split}" for split, n in check.pairs.items())
        print(f"{check.root}: GOPRO layout, {pairs} pairs, no problems")
        root = check.root
        if check.needs_arranging:
            if args.out is None:
                print(
                    "error: this copy needs arranging (blur_gamma, or input/ + target/ folders): pass --out DIR",
                    file=sys.stderr,
                )
                return 1
            root = arrange_gopro(check, args.out)
            print(f"arranged as links in {root}")
            print(format_summary(summarize(root, progress=not args.quiet)))
        print(f"train on it: deblur train --config gopro --data {root}")
    except DatasetError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
