"""The same model and photo through deblur's own prediction and through ONNX Runtime, side by side in one process.

A CPU user might export the model and run it elsewhere: this measures whether that is faster here, and whether the
output is the same (PSNR of each output against deblur's float32 output). ONNX Runtime and the exporter are not
deblur's dependencies; install them beside it in a separate virtual environment first:

    pip install -e . onnxruntime tf2onnx
    python benchmarks/predict_runtimes.py [--width 64] [--blocks 9] [--repeats 3]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image
from skimage import data as skimage_data

from deblur.config import Config, ModelConfig, config_to_yaml
from deblur.inference import load_deblurrer
from deblur.model import build_generator
from deblur.timings.device import cpu_name
from deblur.timings.flops import achieved, forward_flops_per_pixel, matmul_rate


def best_seconds(run, repeats: int) -> tuple[float, np.ndarray]:
    output = run()  # warm-up: tracing, session set-up
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        output = run()
        best = min(best, time.perf_counter() - started)
    return best, output


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = float(np.mean((a - b) ** 2))
    return float("inf") if mse == 0 else 10 * np.log10(1 / mse)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--blocks", type=int, default=9)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    photo = Image.fromarray(skimage_data.astronaut()).resize((1280, 720), Image.Resampling.BICUBIC)
    image = np.asarray(photo, dtype=np.float32) / 255.0
    rates = {dtype: matmul_rate(dtype) for dtype in ("float32", "bfloat16")}
    print(f"CPU: {cpu_name()}; matmul " + ", ".join(f"{d} {r.gflops:.0f} GFLOP/s" for d, r in rates.items()))

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        model_args = ModelConfig(width=args.width, blocks=args.blocks, zero_init_output=False)
        build_generator(**vars(model_args)).save(folder / "model.keras")
        (folder / "config.yaml").write_text(config_to_yaml(Config(model=model_args)))
        results = {}
        for precision in ("float32", "bfloat16"):
            deblurrer = load_deblurrer(folder / "model.keras", precision=precision)
            results[f"deblur, {precision}"] = (best_seconds(lambda d=deblurrer: d(image), args.repeats), precision)
        flops = forward_flops_per_pixel(deblurrer.model) * 1280 * 720

        import onnxruntime
        import tensorflow as tf
        import tf2onnx

        float32_model = load_deblurrer(folder / "model.keras", precision="float32").model
        signature = [tf.TensorSpec((None, None, None, 3), tf.float32, name="blurry")]
        tf2onnx.convert.from_keras(float32_model, input_signature=signature, output_path=str(folder / "m.onnx"))
        options = onnxruntime.SessionOptions()
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        session = onnxruntime.InferenceSession(str(folder / "m.onnx"), options, providers=["CPUExecutionProvider"])
        name = session.get_inputs()[0].name
        run = lambda: session.run(None, {name: image[None]})[0][0]  # noqa: E731
        results["ONNX Runtime (tf2onnx), float32"] = (best_seconds(run, args.repeats), "float32")

    reference = results["deblur, float32"][0][1]
    print(f"1280x720 photo, generator width {args.width}, {args.blocks} blocks ({flops / 1e9:.0f} GFLOP):")
    for label, ((seconds, output), dtype) in results.items():
        gflops, share = achieved(flops, seconds, rates[dtype])
        print(
            f"  {label:34s} {seconds:6.2f} s  {gflops:5.0f} GFLOP/s ({share:.0%} of the {dtype} matmul rate)  "
            f"PSNR against deblur float32: {psnr(output, reference):.1f} dB"
        )


if __name__ == "__main__":
    main()
