"""Blurry/sharp training pairs from any folder of sharp photos: `deblur data synth`, as a script.

The options, their defaults and the code are those of the command (this script calls it), e.g.

python data_scripts/make_synthetic_pairs.py --src photos/ --out data/synthetic --config pretrained
python data_scripts/make_synthetic_pairs.py --help
"""

from __future__ import annotations

import sys

from deblur.cli import app


def main(argv: list[str] | None = None) -> int:
    try:
        app(["data", "synth", *(sys.argv[1:] if argv is None else argv)], prog_name="make_synthetic_pairs.py")
    except SystemExit as done:
        return int(done.code or 0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
