"""The instance norm's closed-form gradient against automatic differentiation, in the full training step.

Builds the full generator twice in one process, once with `deblur.model.instance_norm` (the closed-form
gradient) and once with the same forward left to automatic differentiation (as before), and times their training
steps alternately, so both see the same machine load. Full width, 9 blocks, 128x128 patches, batch 4, as
`deblur timings --preset quick`.

    python benchmarks/norm_gradient.py [--precision bfloat16|float32] [--rounds 10]
"""

from __future__ import annotations

import argparse
import statistics
import time

import keras
import numpy as np
import tensorflow as tf

import deblur.model
from deblur.losses import l1_loss
from deblur.training.step import make_train_step


def automatic(x, gamma, beta, epsilon):
    """The forward of `deblur.model.instance_norm` with no custom gradient."""
    mean, variance = keras.ops.moments(keras.ops.cast(x, "float32"), axes=(1, 2), keepdims=True)
    scale = gamma * keras.ops.rsqrt(variance + epsilon)
    shift = beta - mean * scale
    return x * keras.ops.cast(scale, x.dtype) + keras.ops.cast(shift, x.dtype)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--precision", choices=["bfloat16", "float32"], default="bfloat16")
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    keras.mixed_precision.set_global_policy("mixed_bfloat16" if args.precision == "bfloat16" else "float32")
    blurry, sharp = np.random.default_rng(0).random((2, 4, 128, 128, 3), dtype=np.float32)
    closed_form = deblur.model.instance_norm
    steps = {}
    for name, norm in [("automatic differentiation", automatic), ("closed form", closed_form)]:
        deblur.model.instance_norm = norm  # read when the step is traced, just below
        keras.utils.set_random_seed(0)
        model = deblur.model.build_generator(width=64, blocks=9)
        optimizer = keras.optimizers.Adam(1e-4)
        optimizer.build(model.trainable_variables)
        steps[name] = make_train_step(model, optimizer, tf.distribute.get_strategy(), l1_loss, 4)
        for _ in range(3):
            float(steps[name](blurry, sharp))
    deblur.model.instance_norm = closed_form
    times: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(args.rounds):
        for name, step in steps.items():
            started = time.perf_counter()
            float(step(blurry, sharp))
            times[name].append(time.perf_counter() - started)
    medians = {name: statistics.median(values) for name, values in times.items()}
    for name, median in medians.items():
        print(f"{args.precision} step, instance norm by {name}: median {median * 1e3:.0f} ms of {args.rounds}")
    ratio = medians["closed form"] / medians["automatic differentiation"]
    print(f"closed form / automatic differentiation: {ratio:.3f}")


if __name__ == "__main__":
    main()
