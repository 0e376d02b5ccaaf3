"""Every runtime and precision `deblur predict` can use, on the same model, side by side in one process.

0. This CPU, and TensorFlow's 2048x2048 matmul in float32 and bfloat16: the rates shares are read against.
1. For 640x360, 1280x720 and 1920x1080: seconds per image through deblur's own `Deblurrer` (tiles over a
   megapixel, as predict does) on TensorFlow and on OpenVINO, in float32 and bfloat16, at batch 1 (a photo) and at
   the batch video uses (`Deblurrer.frames_per_call`: as many frames as fit a model call). Beside them: what
   `deblur predict` picks with its default options, the plain OpenVINO IR that `deblur export --format openvino`
   writes (whole image, compiled for any shape, no deblur code), and ONNX Runtime float32 (whole image).
   Each is the best of --repeats after a warm-up; the share is of the bfloat16 matmul rate.
2. With --data (blurry/sharp pairs, e.g. ../shared/data/gopro_real_dev): each runtime's mean gain over the blurry
   input, and its difference from TensorFlow float32's.

    python benchmarks/runtimes.py [--model pretrained|F] [--data DIR] [--repeats 3] [--sizes 640x360,1280x720]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from deblur.evaluation.evaluate import evaluation_pairs
from deblur.export.exporter import ExportRequest, export_model
from deblur.export.runtimes import exported_runner
from deblur.hardware import cpu_name, native_bfloat16_inference
from deblur.imageio import read_photo
from deblur.inference import load_deblurrer, open_deblurrer
from deblur.losses import image_psnr
from deblur.paths import choose_model
from deblur.timings.flops import forward_flops_per_pixel, matmul_rate
from deblur.timings.photos import sample_photo

SIZES = [(640, 360), (1280, 720), (1920, 1080)]


def best_seconds(run, repeats: int) -> float:
    run()  # warm-up: tracing, compiling for the shape
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - started)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=None, help="pretrained (default), latest, or a model.keras")
    parser.add_argument("--data", type=Path, default=None, help="blurry/sharp pairs to measure the gain on")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sizes", default=",".join(f"{w}x{h}" for w, h in SIZES))
    args = parser.parse_args()
    sizes = [tuple(int(n) for n in size.split("x")) for size in args.sizes.split(",")]

    rates = {dtype: matmul_rate(dtype).gflops for dtype in ("float32", "bfloat16")}
    print(f"CPU: {cpu_name()}; matmul float32 {rates['float32']:.0f}, bfloat16 {rates['bfloat16']:.0f} GFLOP/s")
    chosen = choose_model(args.model)
    print(f"model: {chosen.description}")
    quiet = lambda _: None  # noqa: E731
    runs = {}
    for runtime in ("tensorflow", "openvino"):
        for precision in ("float32", "bfloat16"):
            loaded = load_deblurrer(chosen.path, precision=precision, runtime=runtime, log=quiet)
            runs[f"{runtime}, {precision}"] = loaded
    default, _ = open_deblurrer(chosen, log=quiet)
    print(f"deblur predict's default here: {default.settings} (native bfloat16: {native_bfloat16_inference()})")
    flops_per_pixel = forward_flops_per_pixel(runs["tensorflow, float32"].model)

    with tempfile.TemporaryDirectory(prefix="deblur-runtimes-") as folder:
        export_model(ExportRequest(out=Path(folder) / "model.xml", fmt="openvino"), model=args.model, log=quiet)
        export_model(ExportRequest(out=Path(folder) / "model.onnx", fmt="onnx"), model=args.model, log=quiet)
        plain = {
            "plain OpenVINO IR, bf16 hint": exported_runner(Path(folder) / "model.xml", precision="bf16"),
            "plain OpenVINO IR, f32": exported_runner(Path(folder) / "model.xml", precision="f32"),
            "ONNX Runtime, float32": exported_runner(Path(folder) / "model.onnx"),
        }

        print("\n| runtime, precision | size | batch | seconds per image | share of the bf16 matmul rate ", end="")
        print("| vs TF float32 |")
        print("| --- | --- | ---: | ---: | ---: | ---: |")
        for width, height in sizes:
            image = sample_photo(width, height)
            flops = flops_per_pixel * width * height
            rows = []
            for label, deblurrer in [*runs.items(), (f"deblur predict default ({default.settings})", default)]:
                seconds = best_seconds(lambda d=deblurrer, i=image: d(i), args.repeats)
                rows.append((label, 1, seconds))
                frames = deblurrer.frames_per_call(height, width)
                if frames > 1:
                    clip = [image] * frames
                    seconds = best_seconds(lambda d=deblurrer, c=clip: d.many(c), args.repeats) / frames
                    rows.append((label, frames, seconds))
            for label, run in plain.items():
                rows.append((label, 1, best_seconds(lambda r=run, i=image: r(i), args.repeats)))
            base = rows[0][2]
            for label, batch, seconds in rows:
                share = flops / seconds / 1e9 / rates["bfloat16"]
                print(f"| {label} | {width}x{height} | {batch} | {seconds:.3f} | {share:.0%} | {base / seconds:.2f}x |")
            print(flush=True)

    if args.data:
        pairs = [(read_photo(p.blurry).rgb, read_photo(p.sharp).rgb) for p in evaluation_pairs(args.data, "all")]
        print(f"\nmean gain over the blurry input on {len(pairs)} pairs of {args.data}, whole images")
        reference = None
        for label, deblurrer in [*runs.items(), ("deblur predict default", default)]:
            found = [image_psnr(sharp, np.clip(deblurrer(b), 0, 1)) - image_psnr(sharp, b) for b, sharp in pairs]
            reference = np.mean(found) if reference is None else reference
            print(f"  {label}: {np.mean(found):+.3f} dB ({np.mean(found) - reference:+.3f} against TF float32)")


if __name__ == "__main__":
    main()
