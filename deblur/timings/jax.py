"""`deblur timings` under Keras' JAX backend: the stages that exist there, timed with the JAX loop's own step.

JAX has no tf.data, no `tf.distribute` and no graph to take batches in, and always compiles with XLA, so its chart
is its own: the PyDataset read in the loop, then read ahead on threads (what `deblur train` does under JAX), then
mixed bfloat16, mixed float16 with loss scaling in its place (older tensor-core GPUs), several devices through
`keras.distribution.DataParallel`, and a batch four times larger, to fill a GPU. No TensorFlow here.
"""

from __future__ import annotations

import gc
import math
import time
from dataclasses import asdict, replace

import jax
import keras
import numpy as np

from deblur.console import progress_bar
from deblur.data.pairs import Pair
from deblur.data.sequence import PairSequence
from deblur.losses import PIXEL_LOSSES
from deblur.model import build_generator
from deblur.timings.loaders import time_batches
from deblur.timings.report import LoaderResult, StageResult, TimingsError
from deblur.timings.stages import Setup, Stage, Workload, measured_result
from deblur.training.jax.batches import training_batches
from deblur.training.jax.step import initial_state, make_train_step
from deblur.training.optim import build_optimizer
from deblur.training.precision import set_policy

JAX_LOADERS = ("keras-sequence", "read-ahead")
LARGER_BATCH = 4


def plan_jax_stages(gpus: list[tuple[int, int]], cpu_bfloat16: bool, devices: int) -> list[Stage]:
    """All JAX stages in order, cumulative, with skip reasons for this hardware: `gpus` are the GPUs' compute
    capabilities, `cpu_bfloat16` whether the CPU has native bfloat16, `devices` how many devices JAX has."""
    setup = Setup(jit_compile=True)
    stages = [Stage("keras-sequence", "Keras PyDataset read in the loop, float32, one jitted step", setup)]
    setup = replace(setup, loader="read-ahead")
    stages.append(Stage("read-ahead", "+ the PyDataset read ahead on threads (deblur train's loader on JAX)", setup))
    best = setup
    if (gpus and min(gpus) >= (8, 0)) or (not gpus and cpu_bfloat16):
        best = replace(setup, policy="mixed_bfloat16")
        stages.append(Stage("mixed-bfloat16", "+ mixed bfloat16", best))
    else:
        why = "no GPU, and the CPU has no native bfloat16" if not gpus else "a GPU without bfloat16 (before 8.0)"
        stages.append(Stage("mixed-bfloat16", "+ mixed bfloat16", setup, skipped=why))
    float16 = replace(setup, policy="mixed_float16")
    if gpus and min(gpus) >= (7, 0):
        stages.append(Stage("mixed-float16", "mixed float16 with loss scaling, instead of bfloat16", float16))
        if best.policy == "float32":
            best = float16
    else:
        why = "no GPU: float16 pays off only on tensor cores" if not gpus else "a GPU without tensor cores"
        stages.append(Stage("mixed-float16", "mixed float16 with loss scaling", float16, skipped=why))
    if devices >= 2:
        best = replace(best, devices=tuple(str(index) for index in range(devices)))
        stages.append(Stage("multi-gpu", f"+ keras.distribution.DataParallel over {devices} devices", best))
    else:
        stages.append(Stage("multi-gpu", "+ DataParallel", best, skipped="1 device visible: needs 2 or more"))
    best = replace(best, batch_factor=LARGER_BATCH)
    stages.append(Stage("larger-batch", f"+ a batch {LARGER_BATCH}x larger per device, to fill a GPU", best))
    return stages


def measure_jax_stage(stage: Stage, work: Workload, *, progress: bool = True) -> StageResult:
    """Train `work` as `stage.setup` says with the JAX loop's step, and time it; each timed step includes
    fetching its batch and reading the loss back."""
    setup = stage.setup
    set_policy(setup.policy)
    keras.utils.set_random_seed(work.seed)  # every stage starts from the same weights
    devices = jax.devices()[: len(setup.devices)] if setup.devices else jax.devices()[:1]
    distribution = keras.distribution.DataParallel(devices=devices) if len(devices) > 1 else None
    keras.distribution.set_distribution(distribution)
    global_batch = work.batch_size * setup.batch_factor * len(devices)
    total = work.warmup_steps + work.steps
    bar = progress_bar(total=total, desc=stage.name, unit="step", leave=False, disable=not progress, dynamic_ncols=True)
    try:
        model = build_generator(**asdict(work.model))
        optimizer = build_optimizer(work.train, total, setup.policy)
        optimizer.build(model.trainable_variables)
        step = make_train_step(model, optimizer, PIXEL_LOSSES[work.train.loss])
        state = initial_state(model, optimizer)
        batches = _batches(setup.loader, work.pairs, work.patch_size, global_batch, total, work.seed)

        def shard(batch: np.ndarray):
            if distribution is None:
                return batch
            return keras.distribution.distribute_tensor(batch, distribution.get_data_layout(batch.shape))

        durations, waits = [], []
        for index in range(total):
            started = time.perf_counter()
            blurry, sharp = next(batches)
            fetched = time.perf_counter()
            loss, state = step(state, shard(blurry), shard(sharp))
            loss = float(loss)  # the read-back: the step has finished on the device
            finished = time.perf_counter()
            if not math.isfinite(loss):
                raise TimingsError(f"the loss became {loss} at step {index + 1}; the figures would not be meaningful")
            if index >= work.warmup_steps:
                durations.append(finished - started)
                waits.append(fetched - started)
                bar.set_postfix(img_s=f"{global_batch * len(durations) / sum(durations):.2f}")
            bar.update(1)
        batches.close()
    finally:
        bar.close()
        set_policy("float32")
        keras.distribution.set_distribution(None)
        gc.collect()
    return measured_result(stage, durations, waits, global_batch, len(devices))


def measure_jax_loader(
    name: str,
    pairs: list[Pair],
    *,
    patch_size: int,
    batch_size: int,
    batches: int,
    min_seconds: float = 2.0,
    seed: int = 0,
    progress: bool = True,
) -> LoaderResult:
    """Time at least `batches` batches and `min_seconds` from loader `name`, after one batch of warm-up."""
    source = _batches(name, pairs, patch_size, batch_size, 10**9, seed)  # batches are made on demand
    try:
        return time_batches(
            name, source, batch_size, warmup=1, batches=batches, min_seconds=min_seconds, progress=progress
        )
    finally:
        source.close()


def _batches(loader: str, pairs: list[Pair], patch_size: int, batch_size: int, total: int, seed: int):
    """(blurry, sharp) batches: the PyDataset read in the loop, or read ahead on threads as `deblur train` does."""
    if loader == "read-ahead":
        return training_batches(
            pairs,
            patch_size=patch_size,
            batch_size=batch_size,
            steps_per_epoch=total,
            first_step=0,
            last_step=total,
            seed=seed,
            augment=True,
        )
    sequence = PairSequence(pairs, patch_size, batch_size, total, seed=seed)
    return (sequence[index] for index in range(total))
