"""Where a training step of the full generator goes, per oneDNN primitive, with the rest of the step beside it.

Runs the trainer's own step (full width, 9 blocks, 128x128 patches, batch 4, as `deblur timings --preset quick`)
in a child process with ONEDNN_VERBOSE=1, and sums oneDNN's execution times per kind of primitive over the timed
steps. With `--inter-op 1` (the default) TensorFlow runs one op at a time, so the primitives' times add up to the
step; with two inter-op threads, two ops share the two cores and each one's time is inflated by the other's.
"Everything else" is the step's time minus oneDNN's: TensorFlow's own kernels (normalization, pads, casts,
elementwise ops, the optimizer). The verbose mode itself costs a few percent.

    python benchmarks/step_primitives.py [--precision bfloat16|float32] [--steps 4] [--inter-op 1]
"""

from __future__ import annotations

import argparse
import collections
import os
import subprocess
import sys

CHILD = """
import sys, time
import numpy as np, keras, tensorflow as tf
tf.config.threading.set_inter_op_parallelism_threads({inter_op})
from deblur.losses import l1_loss
from deblur.model import build_generator
from deblur.training.step import make_train_step
keras.mixed_precision.set_global_policy({policy!r})
keras.utils.set_random_seed(0)
model = build_generator(width=64, blocks=9)
optimizer = keras.optimizers.Adam(1e-4)
optimizer.build(model.trainable_variables)
step = make_train_step(model, optimizer, tf.distribute.get_strategy(), l1_loss, 4)
rng = np.random.default_rng(0)
blurry, sharp = rng.random((2, 4, 128, 128, 3), dtype=np.float32)
for _ in range(3):
    float(step(blurry, sharp))
print("TIMED", flush=True)
started = time.perf_counter()
for _ in range({steps}):
    float(step(blurry, sharp))
print("STEP_MS", (time.perf_counter() - started) / {steps} * 1e3, flush=True)
"""


def kind_of(fields: list[str]) -> str:
    primitive, direction = fields[5], fields[7]
    if primitive == "convolution":
        name = {"forward_training": "forward", "backward_data": "gradient to the activations"}.get(direction)
        name = name or ("gradient to the weights" if direction.startswith("backward_weights") else direction)
        block = "ic256oc256" in ",".join(fields) and "ih34" in ",".join(fields)
        return f"convolution, {name}: " + ("the 18 residual-block convs" if block else "the other 6 convs")
    return primitive


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--precision", choices=["bfloat16", "float32"], default="bfloat16")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--inter-op", type=int, default=1)
    args = parser.parse_args()
    policy = "mixed_bfloat16" if args.precision == "bfloat16" else "float32"
    code = CHILD.format(inter_op=args.inter_op, policy=policy, steps=args.steps)
    env = {**os.environ, "ONEDNN_VERBOSE": "1", "TF_CPP_MIN_LOG_LEVEL": "2"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)

    totals: collections.Counter[str] = collections.Counter()
    timed, step_ms = False, None
    for line in done.stdout.splitlines():
        if line.startswith("TIMED"):
            timed = True
        elif line.startswith("STEP_MS"):
            step_ms = float(line.split()[1])
        elif timed and line.startswith("onednn_verbose") and ",exec," in line:
            fields = line.split(",")
            totals[kind_of(fields)] += float(fields[-1]) / args.steps
    onednn = sum(totals.values())
    print(f"{args.precision} step, {args.inter_op} inter-op thread(s), {args.steps} steps: {step_ms:.0f} ms\n")
    print("| part of the step | ms per step |\n| --- | ---: |")
    for key, value in sorted(totals.items(), key=lambda item: item[0]):
        print(f"| {key} | {value:.1f} |")
    print(f"| all oneDNN primitives | {onednn:.1f} |")
    print(f"| everything else (TensorFlow's own kernels) | {step_ms - onednn:.1f} |")


if __name__ == "__main__":
    main()
