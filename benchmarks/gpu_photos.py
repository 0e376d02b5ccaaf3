"""The compact photo set a GPU session carries (docs/gpus.md, "A lent GPU, step by step"): each sharp photo scaled
down to at most `--max-side` px, but never to a short side under `--min-side` (the training patch), and saved as a
JPEG under the same relative path and name (so `deblur data synth` holds out the same photos), small enough to
travel with the checkout (a lent machine takes 64 MiB in all).

    python benchmarks/gpu_photos.py ../shared/data/photos .gpu/photos [--max-side 512] [--min-side 256]

On the GPU, `deblur data synth` makes the stored pairs (validation reads them) from these, and `data.device_pairs`
the training pairs. Nothing is written unless every photo reads; an existing folder is refused.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from PIL import Image

from deblur.files import atomic_dir
from deblur.imageio import find_images


def shrink_photos(src: Path, out: Path, max_side: int, min_side: int, quality: int) -> tuple[int, int]:
    """(photos, bytes written)."""
    if out.exists():
        raise SystemExit(f"{out} already exists: choose a new folder")
    photos = [path for path, _ in find_images([src])]
    if not photos:
        raise SystemExit(f"no photos under {src}")
    total = 0
    with atomic_dir(out) as tmp:
        for path in photos:
            target = (tmp / path.relative_to(src)).with_suffix(".jpg")
            target.parent.mkdir(parents=True, exist_ok=True)
            with Image.open(path) as image:
                photo = image.convert("RGB")
            scale = min(1.0, max(max_side / max(photo.size), min_side / min(photo.size)))
            if scale < 1:
                size = (round(photo.width * scale), round(photo.height * scale))
                photo = photo.resize(size, Image.LANCZOS)
            photo.save(target, quality=quality, subsampling=0)
            total += target.stat().st_size
    return len(photos), total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("src", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--max-side", type=int, default=512)
    parser.add_argument("--min-side", type=int, default=256)
    parser.add_argument("--quality", type=int, default=92)
    args = parser.parse_args()
    count, size = shrink_photos(args.src, args.out, args.max_side, args.min_side, args.quality)
    print(f"wrote {count} photos, {size / 2**20:.1f} MiB, to {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
