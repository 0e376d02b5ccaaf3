"""Every `deblur export` format against `deblur predict`, side by side in one process: size, speed, agreement.

0. This CPU, and TensorFlow's 2048x2048 matmul in float32 and bfloat16: the rates speeds are read against.
1. `deblur predict`'s own code (TensorFlow, whole image) in float32 and in bfloat16: the reference output (float32)
   and the times to beat.
2. Each export, written by `deblur export`'s own function into a temporary folder: SavedModel (its uint8
   `serving_default` and its float32 signature), LiteRT (float32, float16 weights, int8 weights), ONNX (float32,
   int8 calibrated on the demo data's blurry images). For each: its size, its seconds for the photo (best of
   --repeats after a warm-up run, every core), and the PSNR of its output against deblur's float32 output.
3. With --data (a folder of blurry/sharp pairs, e.g. ../shared/data/gopro_real_dev): every runtime's mean gain over
   the blurry input on those pairs, whole images, and its worst pair, so that what int8 costs in quality is
   measured on real blur.
4. With --not-shipped, the two int8 recipes `deblur export` does not offer, made the same way from the same
   calibration patches, to show why: LiteRT's full-integer quantization (every op int8) and ONNX Runtime's static
   quantization of every op it can quantize, not only the residual blocks.

    python benchmarks/export_formats.py [--model pretrained|F] [--photo F] [--data DIR] [--repeats 3] [--not-shipped]

Without --photo the photo is a real blurry one if --data has one of 1280x720, else skimage's astronaut resized to
1280x720.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from deblur.evaluation.evaluate import evaluation_pairs
from deblur.export.exporter import ExportRequest, export_model
from deblur.export.runtimes import exported_runner
from deblur.hardware import cpu_name
from deblur.imageio import read_photo
from deblur.inference import load_deblurrer
from deblur.losses import image_psnr as psnr
from deblur.paths import choose_model
from deblur.timings.flops import forward_flops_per_pixel, matmul_rate
from deblur.timings.photos import sample_photo

VARIANTS = [  # label, name of the export, request options, runner options
    ("SavedModel, serving_default (uint8)", "savedmodel", {"fmt": "savedmodel"}, {"uint8": True}),
    ("SavedModel, deblur_float32", "savedmodel", {"fmt": "savedmodel"}, {}),
    ("LiteRT, float32", "model.tflite", {"fmt": "litert"}, {}),
    ("LiteRT, float16 weights", "half.tflite", {"fmt": "litert", "float16": True}, {}),
    ("LiteRT, int8 weights", "int8.tflite", {"fmt": "litert", "quantize": "int8"}, {}),
    ("ONNX Runtime, float32", "model.onnx", {"fmt": "onnx"}, {}),
    ("ONNX Runtime, int8 residual blocks", "int8.onnx", {"fmt": "onnx", "quantize": "int8"}, {}),
    ("OpenVINO, f32", "model.xml", {"fmt": "openvino"}, {"precision": "f32"}),
    ("OpenVINO, bf16 hint", "model.xml", {"fmt": "openvino"}, {"precision": "bf16"}),
]


def best_seconds(run: Callable[[], np.ndarray], repeats: int) -> tuple[float, np.ndarray]:
    output = run()  # warm-up: tracing, buffer planning
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        output = run()
        best = min(best, time.perf_counter() - started)
    return best, output


def agreement(output: np.ndarray, reference: np.ndarray) -> float:
    return psnr(np.clip(reference, 0, 1), np.clip(output, 0, 1))


def gains(run: Callable[[np.ndarray], np.ndarray], pairs: list[tuple[np.ndarray, np.ndarray]]) -> list[float]:
    return [psnr(sharp, np.clip(run(blurry), 0, 1)) - psnr(sharp, blurry) for blurry, sharp in pairs]


def not_shipped(model_path: Path, folder: Path) -> list[tuple[str, Path]]:
    """The int8 recipes tried and not offered, from the same model and calibration patches as the shipped ones,
    through the library's own adapters."""
    from deblur.export.calibration import calibration_patches
    from deblur.export.litert import export_litert
    from deblur.export.onnx import export_onnx

    model = load_deblurrer(model_path, precision="float32").model
    patches = calibration_patches()
    export_litert(model, folder / "full-int8.tflite", calibration=patches)
    export_onnx(model, folder / "all-int8.onnx", calibration=patches, every_op=True)
    return [
        ("LiteRT, full int8, calibrated", folder / "full-int8.tflite"),
        ("ONNX Runtime, every op int8, calibrated", folder / "all-int8.onnx"),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=None, help="pretrained (default), latest, or a model.keras")
    parser.add_argument("--photo", type=Path, default=None)
    parser.add_argument("--data", type=Path, default=None, help="blurry/sharp pairs to measure the gain on")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--not-shipped", action="store_true", help="also the int8 recipes deblur does not offer")
    args = parser.parse_args()

    rates = {dtype: matmul_rate(dtype).gflops for dtype in ("float32", "bfloat16")}
    print(f"CPU: {cpu_name()}; matmul float32 {rates['float32']:.0f}, bfloat16 {rates['bfloat16']:.0f} GFLOP/s")
    chosen = choose_model(args.model)
    print(f"model: {chosen.description}")
    pairs = []
    if args.data:
        pairs = [(read_photo(p.blurry).rgb, read_photo(p.sharp).rgb) for p in evaluation_pairs(args.data, "all")]
    if args.photo:
        image = read_photo(args.photo).rgb
    elif pairs and pairs[0][0].shape[:2] == (720, 1280):
        image = pairs[0][0]
    else:
        image = sample_photo(1280, 720)
    print(f"photo: {image.shape[1]}x{image.shape[0]}; {len(pairs)} pairs for the gain\n")

    rows = []
    references = {}
    for precision in ("float32", "bfloat16"):
        deblurrer = load_deblurrer(chosen.path, precision=precision)
        seconds, output = best_seconds(lambda d=deblurrer: d(image), args.repeats)
        references.setdefault("float32", output)
        rows.append((f"deblur predict (TensorFlow), {precision}", None, seconds, output, deblurrer))
    with tempfile.TemporaryDirectory(prefix="deblur-export-bench-") as folder:
        written: dict[str, int] = {}
        for label, name, request, runner_options in VARIANTS:
            out = Path(folder) / name
            if name not in written:
                report = export_model(ExportRequest(out=out, **request), model=args.model, log=lambda _: None)
                written[name] = report.bytes
            run = exported_runner(out, **runner_options)
            seconds, output = best_seconds(lambda r=run: r(image), args.repeats)
            rows.append((label, written[name], seconds, output, run))
        if args.not_shipped:
            for label, path in not_shipped(chosen.path, Path(folder)):
                run = exported_runner(path)
                seconds, output = best_seconds(lambda r=run: r(image), args.repeats)
                rows.append((f"{label} (not offered)", path.stat().st_size, seconds, output, run))

        flops = forward_flops_per_pixel(rows[0][4].model) * image.shape[0] * image.shape[1]
        size_label = f"{image.shape[1]}x{image.shape[0]}"
        print(f"| runtime | file | seconds, {size_label} | share of the float32 matmul rate | vs TF float32 |", end="")
        print(" agreement with deblur float32 |" + (" gain on the pairs (worst pair) |" if pairs else ""))
        print("| --- | ---: | ---: | ---: | ---: | ---: |" + (" ---: |" if pairs else ""))
        base = rows[0][2]
        for label, size, seconds, output, run in rows:
            size_text = f"{size / 1e6:.1f} MB" if size else ""
            match = agreement(output, references["float32"])
            match_text = "(the reference)" if match == float("inf") else f"{match:.1f} dB"
            share = flops / seconds / 1e9 / rates["float32"]
            line = f"| {label} | {size_text} | {seconds:.2f} | {share:.0%} | {base / seconds:.2f}x | {match_text} |"
            if pairs:
                found = gains(run, pairs)
                line += f" {np.mean(found):+.3f} dB ({min(found):+.3f}) |"
            print(line, flush=True)


if __name__ == "__main__":
    main()
