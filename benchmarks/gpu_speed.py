"""deblur on a GPU under Keras' JAX backend, measured in one run (the figures of docs/gpus.md).

0. The device's own bfloat16 and float32 matmul rates (8192x8192 on a GPU), the ceiling every share below is of.
1. Training patches/s at 256x256, mixed bfloat16, the JAX loop's own jitted step (`deblur.training.jax.step`) on
   batches already on the device: the shipped size (width 32, 9 blocks) and width 64, each at several batch sizes,
   as GFLOP/s (`deblur.timings.flops`) and as a share of the bfloat16 matmul rate.
2. The same with the pairs made on the device (`data.device_pairs`): the kernel-aware network, each step's pairs
   blurred, noised and deconvolved by the JAX loop's jitted pair maker from host draws already on the device (a
   few, in turn), and the host's seconds to draw one batch beside it (the loader draws on a thread a core). The
   share counts the network's FLOPs only: the pair maker's FFTs are the price of making pairs there.
3. `deblur predict`'s JAX runner (`deblur.inference`, runtime jax): one 1280x720 and one 3840x2160 image, float32
   and bfloat16, the median of several calls after the first (which compiles); and a clip's 1280x720 frames in
   bfloat16 through `Deblurrer.many`, as many a call as a clip sends (`frames_per_call`), in frames/s (the model's
   part of a clip: decoding and encoding are the CPU's).
4. `deblur train` killed with SIGKILL after `--train-seconds`, then run again for as long and stopped with Ctrl-C
   (SIGINT, which saves a checkpoint): that it resumed, the checkpoints and the metrics of each.

Every timed step reads its loss back to the host, so the device has finished. Writes one JSON file.

    KERAS_BACKEND=jax python benchmarks/gpu_speed.py --out gpu.json [--smoke] [--train-seconds 60]

`--smoke` runs tiny sizes on a CPU in a minute, to check the script before a GPU's time is spent on it.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

import keras
import numpy as np

from deblur.data.device_pairs import draw
from deblur.hardware import describe_device
from deblur.inference import load_deblurrer
from deblur.losses import l1_loss
from deblur.model import build_generator
from deblur.paths import choose_model
from deblur.timings.flops import TRAIN_FLOPS_PER_FORWARD, forward_flops_per_pixel, matmul_rate
from deblur.training.jax.step import initial_state, make_pair_maker, make_train_step
from deblur.training.precision import set_policy

WARMUP = 3  # steps or calls left out of every figure: the first compiles


DRAWS = 4  # host draws on the device, used in turn, for the device-made pairs


def train_speed(
    width: int, blocks: int, batch: int, patch: int, steps: int, bf16_rate, device_pairs: bool = False
) -> dict:
    """Patches/s of the JAX loop's step for one model size and batch: on device-resident random batches, or, with
    `device_pairs`, the kernel-aware network on pairs made each step by the loop's pair maker."""
    import jax

    set_policy("mixed_bfloat16")
    model = build_generator(width=width, blocks=blocks, kernel_aware=device_pairs)
    optimizer = keras.optimizers.Adam(1e-4)
    optimizer.build(model.trainable_variables)
    step = make_train_step(model, optimizer, l1_loss)
    state = initial_state(model, optimizer)
    flops_per_pixel = forward_flops_per_pixel(model)  # the convolutions' shapes: the same in any precision
    rng = np.random.default_rng(0)
    row: dict = {"width": width, "blocks": blocks, "batch": batch, "patch": patch, "pairs_made_on_device": device_pairs}
    if device_pairs:
        synth = device_recipe()
        host, draws = [], []
        for _ in range(DRAWS):
            started = time.perf_counter()
            drawn = draw(rng.integers(0, 256, (batch, patch, patch, 3), dtype=np.uint8), rng, synth)
            host.append(time.perf_counter() - started)
            # the pair maker's arguments, put on the device once
            arguments = (drawn.sharp, drawn.kernels, drawn.estimates, drawn.noise, drawn.linear)
            draws.append(tuple(jax.device_put(a) for a in arguments))
        maker = make_pair_maker(kernel_aware=True)
        row["host_seconds_per_batch"] = round(statistics.median(host), 4)
        row["kernel_size"] = int(draws[0][1].shape[1])

        def batch_for(index: int):
            return maker(*draws[index % DRAWS], jax.random.PRNGKey(index))
    else:
        fixed = tuple(jax.device_put(rng.random((batch, patch, patch, 3), dtype=np.float32)) for _ in range(2))

        def batch_for(index: int):
            return fixed

    times = []
    for index in range(WARMUP + steps):
        started = time.perf_counter()
        loss, state = step(state, *batch_for(index))
        float(loss)
        if index >= WARMUP:
            times.append(time.perf_counter() - started)
    seconds = statistics.median(times)
    set_policy("float32")
    gflops = TRAIN_FLOPS_PER_FORWARD * flops_per_pixel * patch * patch * batch / seconds / 1e9
    return row | {
        "patches_per_second": round(batch / seconds, 1),
        "gflops": round(gflops, 1),
        "share_of_bf16_matmul": round(gflops / bf16_rate.gflops, 3),
    }


def device_recipe():
    """The kernel-aware config's pair recipe, less what only `deblur data synth` makes (docs/gpus.md)."""
    from dataclasses import replace

    from deblur.config import load_config

    synth = load_config("kernel-aware").data.synth
    return replace(synth, varying=0.0, clipped_share=0.0, jpeg_share=0.0)


def predict_speed(sizes: list[tuple[int, int]], calls: int) -> list[dict]:
    """Seconds per image through deblur's JAX runner, float32 and bfloat16, for the shipped model."""
    rows = []
    path = choose_model(None).path
    for precision in ("float32", "bfloat16"):
        deblurrer = load_deblurrer(path, precision=precision, runtime="jax", log=lambda _: None)
        for height, width in sizes:
            image = np.random.default_rng(0).random((height, width, 3), dtype=np.float32)
            times = []
            for index in range(WARMUP + calls):
                started = time.perf_counter()
                np.asarray(deblurrer(image))
                if index >= WARMUP:
                    times.append(time.perf_counter() - started)
            rows.append(
                {
                    "precision": precision,
                    "size": f"{width}x{height}",
                    "seconds": round(statistics.median(times), 5),
                    "tiles": len(deblurrer.tiling.tiles(height, width)),
                    "call_pixels": deblurrer.call_pixels,
                    "runtime": deblurrer.runtime,
                }
            )
    return rows


def clip_speed(height: int, width: int, frames: int, calls: int, bf16_rate) -> dict:
    """Frames/s of one size of frames through `Deblurrer.many` in bfloat16, the shipped network, as many frames a
    call as `frames_per_call` gives a clip (at most `frames`)."""
    deblurrer = load_deblurrer(choose_model(None).path, precision="bfloat16", runtime="jax", log=lambda _: None)
    per_call = min(frames, deblurrer.frames_per_call(height, width))
    rng = np.random.default_rng(0)
    images = [rng.random((height, width, 3), dtype=np.float32) for _ in range(per_call)]
    times = []
    for index in range(WARMUP + calls):
        started = time.perf_counter()
        [np.asarray(out) for out in deblurrer.many(images)]
        if index >= WARMUP:
            times.append(time.perf_counter() - started)
    seconds = statistics.median(times)
    gflops = forward_flops_per_pixel(deblurrer.model) * height * width * per_call / seconds / 1e9
    return {
        "size": f"{width}x{height}",
        "frames_per_call": per_call,
        "frames_per_second": round(per_call / seconds, 1),
        "gflops": round(gflops, 1),
        "share_of_bf16_matmul": round(gflops / bf16_rate.gflops, 3),
        "runtime": deblurrer.runtime,
    }


def killed_and_resumed(seconds: float, config: str, extra: list[str]) -> dict:
    """`deblur train` killed with SIGKILL after `seconds`, then run again for `seconds` and interrupted."""
    out = Path(tempfile.mkdtemp(prefix="deblur-gpu-run-")) / "run"
    command = [sys.executable, "-m", "deblur", "train", "--config", config, "--out", str(out), "-q", *extra]
    env = {**os.environ, "KERAS_BACKEND": "jax"}
    report: dict = {"command": " ".join(command[1:]), "seconds_each": seconds}
    for name, stop in (("killed", signal.SIGKILL), ("resumed", signal.SIGINT)):
        run = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            output = run.communicate(timeout=seconds)[0]
        except subprocess.TimeoutExpired:
            run.send_signal(stop)
            output = run.communicate()[0]
        metrics = out / "metrics.jsonl"
        report[name] = {
            "exit_code": run.returncode,
            "resumed_from_a_checkpoint": "resuming from" in output,
            "checkpoints": sorted(path.name for path in (out / "checkpoints").glob("step-*.npz")),
            "metrics": [json.loads(line) for line in metrics.read_text().splitlines()] if metrics.is_file() else [],
            "output_tail": output[-3000:],
        }
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="the JSON file to write")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, to check the script on a CPU")
    parser.add_argument("--train-seconds", type=float, default=60.0, help="how long the killed run runs")
    args = parser.parse_args()
    if keras.backend.backend() != "jax":
        sys.exit("run with KERAS_BACKEND=jax")
    if args.smoke:
        matmul_size, patch, steps, calls = 512, 256, 3, 2  # 256: device pairs pad a patch by half a kernel
        trainings = [(8, 1, 2, False), (8, 1, 2, True)]
        sizes = [(72, 128)]
        clip = (72, 128, 4)
        run = ("smoke", ["--epochs", "20", "--steps-per-epoch", "50", "--set", "train.checkpoint_every=20"])
    else:
        matmul_size, patch, steps, calls = 8192, 256, 20, 10
        trainings = [(32, 9, 16, False), (32, 9, 64, False), (64, 9, 16, False), (64, 9, 64, False)]
        trainings += [(32, 9, 64, True), (64, 9, 64, True)]
        sizes = [(720, 1280), (2160, 3840)]
        clip = (720, 1280, 64)
        # The shipped model's size on the demo data, at 256x256 and batch 16: epochs long enough to see in a minute.
        run = ("pretrained", ["--epochs", "50", "--steps-per-epoch", "500", "--batch-size", "16"])
    report: dict = {"device": describe_device(), "smoke": args.smoke}
    rates = [matmul_rate(dtype, size=matmul_size) for dtype in ("float32", "bfloat16")]
    report["matmul"] = [asdict(rate) for rate in rates]
    print(json.dumps(report["matmul"]), flush=True)
    bf16 = rates[1]  # the rate reported: every share below is of it
    report["training"] = []
    for width, blocks, batch, device_pairs in trainings:
        report["training"].append(train_speed(width, blocks, batch, patch, steps, bf16, device_pairs))
        print(json.dumps(report["training"][-1]), flush=True)
    report["predict"] = predict_speed(sizes, calls)
    print(json.dumps(report["predict"]), flush=True)
    report["clip"] = clip_speed(*clip, calls, bf16)
    print(json.dumps(report["clip"]), flush=True)
    report["kill_and_resume"] = killed_and_resumed(args.train_seconds, *run)
    args.out.write_text(json.dumps(report, indent=2))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
