"""Inference speed through `deblur predict`'s own code, as a share of this CPU's matmul rate in the same run.

0. TensorFlow's own 2048x2048 matmul in float32 and bfloat16 (where the CPU has it): the rate each figure is a
   share of.
1. 1280x720 photos (PNG files in, PNG files out) with the full-size generator (64 wide, 9 blocks) through
   `predict_files`, the function `deblur predict` calls, four photos a call, in float32 and bfloat16: seconds for
   the first photo (it pays the one-off graph tracing) and per photo after it, GFLOP/s and share of the matmul rate.
2. Seconds per megapixel at 0.3, 1, 4 and 24 megapixels in the fast precision, with the process's peak memory
   after each size (sizes run smallest first, so the last line is the peak of the largest).
3. With --model (a trained model.keras with its config.yaml): the validation PSNR of its output in float32 and in
   bfloat16 on the demo validation photos, and the difference.

With --timed pretrained, steps 1 and 2 time the model shipped with deblur instead of the full-size generator. The
model runs in TensorFlow, as the figures of docs/speed.md were measured; `--runtime auto` runs it as `deblur predict`
does (OpenVINO where it is installed).

    python benchmarks/predict_speed.py [--timed full|pretrained] [--model runs/<time>/model.keras]
                                       [--sizes 0.3 1 4 24] [--photos 4] [--runtime tensorflow|openvino|auto]
"""

from __future__ import annotations

import argparse
import resource
import tempfile
from pathlib import Path

import numpy as np

from deblur.config import Config, ModelConfig, config_to_yaml, load_config
from deblur.data.demo import ensure_demo_dataset
from deblur.hardware import cpu_bf16_flags, cpu_name
from deblur.imageio import read_photo
from deblur.inference import Deblurrer, load_deblurrer
from deblur.losses import image_psnr as psnr
from deblur.model import build_generator
from deblur.paths import shipped_model
from deblur.predict import plan_inputs, predict_files
from deblur.runtime import choose_runtime
from deblur.settings import WriteSettings
from deblur.timings.flops import achieved, forward_flops_per_pixel, matmul_rate
from deblur.timings.photos import PhotoTimes, write_photos

SHAPES = {0.3: (480, 640), 1.0: (1000, 1000), 4.0: (1500, 2667), 24.0: (4000, 6000)}


def full_size_model(folder: Path) -> Path:
    args = ModelConfig(zero_init_output=False)  # full width and depth; random weights cost the same to run
    build_generator(**vars(args)).save(folder / "model.keras")
    (folder / "config.yaml").write_text(config_to_yaml(Config(model=args)))
    return folder / "model.keras"


def timed_predict(deblurrer: Deblurrer, photos: list[Path], out: Path) -> list[float]:
    times = PhotoTimes()
    write = WriteSettings(str(out))
    report = predict_files(plan_inputs(photos, write), deblurrer, write, progress=times)
    if report.failed:
        raise SystemExit(f"prediction failed: {report.failed}")
    return times.seconds()


def peak_memory_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # ru_maxrss is in KiB on Linux


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--timed", choices=("full", "pretrained"), default="full", help="the model to time")
    parser.add_argument("--model", type=Path, help="a trained model.keras for the bfloat16 accuracy check")
    parser.add_argument("--sizes", type=float, nargs="*", default=sorted(SHAPES), choices=sorted(SHAPES))
    parser.add_argument("--photos", type=int, default=4, help="1280x720 photos per precision")
    parser.add_argument("--runtime", choices=("tensorflow", "openvino", "auto"), default="tensorflow")
    args = parser.parse_args()
    runtime, _ = choose_runtime(args.runtime)  # auto as predict resolves it
    fast = "bfloat16" if cpu_bf16_flags() else "float32"
    precisions = sorted({"float32", fast})
    rates = {dtype: matmul_rate(dtype) for dtype in precisions}
    print(f"CPU: {cpu_name()}; matmul " + ", ".join(f"{d} {r.gflops:.0f} GFLOP/s" for d, r in rates.items()))

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        path = full_size_model(tmp) if args.timed == "full" else shipped_model()
        if path is None:
            raise SystemExit("this copy of deblur has no pretrained model")
        models = {p: load_deblurrer(path, precision=p, runtime=runtime) for p in precisions}
        flops_per_pixel = forward_flops_per_pixel(models["float32"].model)
        name = "full-size generator" if args.timed == "full" else f"pretrained model ({path})"
        print(f"{name}: {flops_per_pixel / 1e6:.3f} MFLOP per pixel forward; on {models['float32'].runtime}")
        photos = write_photos(tmp / "hd", 720, 1280, args.photos)
        for precision, deblurrer in models.items():
            seconds = timed_predict(deblurrer, photos, tmp / f"out-{precision}")
            steady = float(np.mean(seconds[1:])) if len(seconds) > 1 else seconds[0]
            gflops, share = achieved(flops_per_pixel * 1280 * 720, steady, rates[precision])
            print(
                f"1280x720, {precision}: {steady:.2f} s per photo after the first ({gflops:.0f} GFLOP/s, "
                f"{share:.0%} of the {precision} matmul rate); the first photo of the process: {seconds[0]:.2f} s"
            )
        for megapixels in sorted(args.sizes):
            height, width = SHAPES[megapixels]
            photo = write_photos(tmp / f"mp{megapixels}", height, width, 1)
            (seconds,) = timed_predict(models[fast], photo, tmp / f"out-mp{megapixels}")
            size = height * width / 1e6
            gflops, share = achieved(flops_per_pixel * height * width, seconds, rates[fast])
            print(
                f"{megapixels:>5} MP ({width}x{height}), {fast}: {seconds / size:.2f} s/MP, {gflops:.0f} GFLOP/s "
                f"({share:.0%}), {len(models[fast].tiling.tiles(height, width))} tile(s); peak memory so far "
                f"{peak_memory_gib():.2f} GiB"
            )

    if args.model:
        root = ensure_demo_dataset(load_config("demo").data.synth)
        pairs = sorted((root / "test").glob("*/blur/*.png"))
        scores = {}
        for precision in ("float32", "bfloat16"):
            deblurrer = load_deblurrer(args.model, precision=precision, runtime=runtime)
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
