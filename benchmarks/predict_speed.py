"""Inference speed and bfloat16 accuracy, measured side by side in one process.

1. Seconds for a 1280x720 photo with the full-size generator (64 wide, 9 blocks) in float32 and bfloat16, and
   for the first image of a process, which pays a one-off warm-up.
2. Seconds per megapixel at 0.3, 1, 4 and 24 megapixels, after a first image (bfloat16 where the CPU has it, else
   float32); images over 1 megapixel go through in 512-pixel tiles, as `deblur predict` does.
3. With --model (a trained model.keras with its config.yaml): the validation PSNR of its output in float32 and in
   bfloat16 on the demo validation photos, and the difference.

    python benchmarks/predict_speed.py [--model runs/<time>/model.keras] [--sizes 0.3 1 4 24]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from deblur.config import Config, ModelConfig, config_to_yaml, load_config
from deblur.data.demo import ensure_demo_dataset
from deblur.imageio import read_photo
from deblur.inference import load_deblurrer
from deblur.model import build_generator
from deblur.training.precision import cpu_bf16_flags

SHAPES = {0.3: (480, 640), 1.0: (1000, 1000), 4.0: (1500, 2667), 24.0: (4000, 6000)}


def timed(deblurrer, image: np.ndarray) -> float:
    started = time.perf_counter()
    deblurrer(image)  # returns a NumPy array: the device has finished
    return time.perf_counter() - started


def full_size_model(folder: Path) -> Path:
    args = ModelConfig(zero_init_output=False)  # full width and depth; random weights cost the same to run
    build_generator(**vars(args)).save(folder / "model.keras")
    (folder / "config.yaml").write_text(config_to_yaml(Config(model=args)))
    return folder / "model.keras"


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    return float(10 * np.log10(1 / np.mean((a - b) ** 2)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, help="a trained model.keras for the bfloat16 accuracy check")
    parser.add_argument("--sizes", type=float, nargs="+", default=sorted(SHAPES), choices=sorted(SHAPES))
    args = parser.parse_args()
    fast = "bfloat16" if cpu_bf16_flags() else "float32"
    rng = np.random.default_rng(0)

    with tempfile.TemporaryDirectory() as tmp:
        path = full_size_model(Path(tmp))
        models = {p: load_deblurrer(path, precision=p) for p in sorted({"float32", fast})}
        photo = rng.random((720, 1280, 3), dtype=np.float32)
        for precision, deblurrer in models.items():
            # The first large image of a process pays a one-off cost (about 6 s here: first touch of the
            # activation buffers); a folder of photos pays it once. Both figures are shown.
            first = timed(deblurrer, rng.random((700, 1250, 3), dtype=np.float32))
            print(
                f"1280x720, full-size generator, {precision}: {timed(deblurrer, photo):.2f} s "
                f"(the first image of the process, 1250x700: {first:.2f} s)"
            )
        for megapixels in args.sizes:
            image = rng.random((*SHAPES[megapixels], 3), dtype=np.float32)
            seconds = timed(models[fast], image)
            size = image.shape[0] * image.shape[1] / 1e6
            print(f"{megapixels:>5} MP ({image.shape[1]}x{image.shape[0]}), {fast}: {seconds / size:.2f} s/MP")

    if args.model:
        root = ensure_demo_dataset(load_config("demo").data.synth)
        pairs = sorted((root / "test").glob("*/blur/*.png"))
        scores = {}
        for precision in ("float32", "bfloat16"):
            deblurrer = load_deblurrer(args.model, precision=precision)
            values = []
            for blurry_path in pairs:
                sharp = read_photo(blurry_path.parent.parent / "sharp" / blurry_path.name).rgb
                values.append(psnr(deblurrer(read_photo(blurry_path).rgb), sharp))
            scores[precision] = float(np.mean(values))
        change = scores["bfloat16"] - scores["float32"]
        print(
            f"{args.model}: PSNR float32 {scores['float32']:.3f} dB, bfloat16 {scores['bfloat16']:.3f} dB "
            f"({change:+.3f} dB) on {len(pairs)} demo validation images"
        )


if __name__ == "__main__":
    main()
