"""Training-speed figures for the full-size generator, measured side by side in one process.

0. The hardware's own ceiling: peak matmul GFLOP/s in float32 and in the mixed policy's compute dtype. No model
   can gain more from mixed precision than this ratio (about 4.4x on Sapphire Rapids with AMX, about 2.1x on
   AMD Zen 4, whose AVX512_BF16 has no matrix unit).
1. float32 vs mixed_bfloat16 (or whatever `--precision auto` picks here) in deblur's custom training loop.
2. The custom loop vs Keras `model.fit` on the same model, data, optimizer and precision.
3. The fraction of step time spent waiting for input, with every pipeline optimization on and with all off.

Full width (64), 9 blocks, 128x128 patches, batch 4, on the embedded demo data. Each figure excludes the
first (tracing) steps; every step reads its loss back to the host so the device has finished.

    python benchmarks/train_speed.py [--steps 20] [--json results.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from dataclasses import asdict

import keras

from deblur.config import load_config
from deblur.data.demo import ensure_demo_dataset
from deblur.data.pairs import preflight
from deblur.data.pipeline import PipelineOptions, train_dataset
from deblur.model import build_generator
from deblur.timings.flops import matmul_rate
from deblur.training.precision import choose_precision, set_policy
from deblur.training.trainer import train

WARMUP = 3


def bench_config(precision: str, steps: int, *extra: str):
    return load_config(
        "gopro",
        [
            "data.root=null",
            "data.patch_size=128",
            "data.batch_size=4",
            "data.val_crop=128",
            "data.val_limit=1",
            "data.synth.max_length=9",
            "train.epochs=1",
            f"train.steps_per_epoch={steps}",
            f"train.precision={precision}",
            "train.schedule=constant",
            "train.warmup_steps=0",
            "train.log_images=0",
            *extra,
        ],
    )


def custom_loop(precision: str, steps: int, *extra: str) -> dict:
    config = bench_config(precision, steps, *extra)
    with tempfile.TemporaryDirectory() as out:
        result = train(config, f"{out}/run", progress=False, log=lambda _: None)
    return {
        "images_per_second": result.metrics[-1]["images_per_second"],
        "input_wait_fraction": result.input_wait_fraction,
        "precision": result.precision,
    }


class StepTimes(keras.callbacks.Callback):
    def on_train_begin(self, logs=None):
        self.ends = []

    def on_train_batch_end(self, batch, logs=None):
        float(logs["loss"])  # a host read-back, as in the custom loop
        self.ends.append(time.perf_counter())


def keras_fit(precision: str, steps: int) -> dict:
    config = bench_config(precision, steps)
    set_policy(choose_precision(precision).policy)
    keras.utils.set_random_seed(0)
    splits = preflight(ensure_demo_dataset(config.data.synth, log=lambda _: None), config.data.patch_size)
    dataset = train_dataset(
        splits.train, patch_size=config.data.patch_size, batch_size=config.data.batch_size, options=PipelineOptions()
    )
    model = build_generator(**asdict(config.model))
    model.compile(
        optimizer=keras.optimizers.Adam(config.train.learning_rate),
        loss=keras.losses.MeanAbsoluteError(),
        jit_compile=False,
    )
    timer = StepTimes()
    model.fit(dataset, steps_per_epoch=steps, epochs=1, verbose=0, callbacks=[timer])
    set_policy("float32")
    durations = [b - a for a, b in zip(timer.ends[WARMUP - 2 :], timer.ends[WARMUP - 1 :], strict=False)]
    return {"images_per_second": config.data.batch_size / statistics.mean(durations)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=20, help="timed steps per measurement")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    if args.steps < WARMUP:  # model.fit's rate is read from the step ends after its first WARMUP - 2
        parser.error(f"--steps must be at least {WARMUP}: the first steps of a run are not timed")

    auto = choose_precision("auto")
    print(f"auto precision here: {auto.policy} ({auto.reason})")
    figures = {}
    mixed_dtype = keras.DTypePolicy(auto.policy).compute_dtype
    figures["peak_gflops"] = {dtype: matmul_rate(dtype).gflops for dtype in sorted({"float32", mixed_dtype})}
    ceiling = figures["peak_gflops"][mixed_dtype] / figures["peak_gflops"]["float32"]
    print("peak matmul: " + ", ".join(f"{k} {v:.0f} GFLOP/s" for k, v in figures["peak_gflops"].items()))
    figures["float32"] = custom_loop("float32", args.steps)
    print(f"custom loop, float32:        {figures['float32']['images_per_second']:.2f} img/s")
    figures["auto"] = custom_loop("auto", args.steps)
    print(f"custom loop, {auto.policy}: {figures['auto']['images_per_second']:.2f} img/s")
    figures["fit"] = keras_fit("auto", args.steps)
    print(f"model.fit,   {auto.policy}: {figures['fit']['images_per_second']:.2f} img/s")
    figures["auto_no_pipeline_optimizations"] = custom_loop(
        "auto", args.steps, "data.parallel=false", "data.cache=none", "data.prefetch=false"
    )

    speedup = figures["auto"]["images_per_second"] / figures["float32"]["images_per_second"]
    loop_vs_fit = figures["auto"]["images_per_second"] / figures["fit"]["images_per_second"]
    print()
    print(f"{auto.policy} / float32 (custom loop):         {speedup:.2f}x")
    print(f"hardware ceiling ({mixed_dtype}/float32 matmul):  {ceiling:.2f}x")
    print(f"custom loop / model.fit ({auto.policy}):        {loop_vs_fit:.3f}")
    print(f"input wait, all pipeline optimizations on:     {100 * figures['auto']['input_wait_fraction']:.1f}%")
    off = figures["auto_no_pipeline_optimizations"]
    print(f"input wait, parallel/cache/prefetch all off:    {100 * off['input_wait_fraction']:.1f}%")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                {**figures, "mixed_over_float32": speedup, "ceiling": ceiling, "loop_over_fit": loop_vs_fit},
                f,
                indent=2,
            )


if __name__ == "__main__":
    main()
