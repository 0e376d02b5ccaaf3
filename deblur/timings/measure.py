"""Timing one stage: a fresh model and optimizer, warm-up steps, then timed steps, each read back to the host.

Every stage runs the trainer's own step (`deblur.training.step`) so the figures are those of `deblur train`.
"""

from __future__ import annotations

import gc
import math
import time
from dataclasses import asdict

import keras
import tensorflow as tf

from deblur.console import progress_bar
from deblur.data.pipeline import PipelineOptions, train_dataset
from deblur.data.sequence import PairSequence
from deblur.losses import PIXEL_LOSSES
from deblur.model import build_generator
from deblur.timings.report import StageResult, TimingsError
from deblur.timings.stages import Setup, Stage, Workload, measured_result, skipped_result  # noqa: F401  old home
from deblur.training.optim import build_optimizer
from deblur.training.precision import set_policy
from deblur.training.step import make_multi_step, make_train_step

LOADER_OPTIONS = {
    "tf.data": PipelineOptions(parallel=False, cache="none", prefetch=False),
    "tf.data-optimized": PipelineOptions(parallel=True, cache="memory", prefetch=True),
}


def measure_stage(stage: Stage, work: Workload, *, progress: bool = True) -> StageResult:
    """Train `work` as `stage.setup` says and time it. Each timed step includes fetching its batch."""
    setup = stage.setup
    set_policy(setup.policy)
    keras.utils.set_random_seed(work.seed)  # every stage starts from the same weights
    strategy = tf.distribute.MirroredStrategy(list(setup.devices)) if setup.devices else tf.distribute.get_strategy()
    replicas = strategy.num_replicas_in_sync
    global_batch = work.batch_size * replicas
    total = work.warmup_steps + work.steps
    with strategy.scope():
        model = build_generator(**asdict(work.model))
        optimizer = build_optimizer(work.train, total, setup.policy)
        optimizer.build(model.trainable_variables)
    loss_fn = PIXEL_LOSSES[work.train.loss]
    bar = progress_bar(total=total, desc=stage.name, unit="step", leave=False, disable=not progress, dynamic_ncols=True)
    try:
        if setup.steps_per_call > 1:
            durations, waits = _time_multi_step(setup, work, strategy, model, optimizer, loss_fn, global_batch, bar)
        else:
            durations, waits = _time_steps(setup, work, strategy, model, optimizer, loss_fn, global_batch, bar)
    finally:
        bar.close()
        set_policy("float32")
        del model, optimizer
        gc.collect()
    return measured_result(stage, durations, waits, global_batch, replicas)


def _batches(setup: Setup, work: Workload, strategy: tf.distribute.Strategy, global_batch: int):
    """An iterator of training batches from the stage's loader."""
    if setup.loader == "keras-sequence":
        if setup.devices:
            raise ValueError("the keras-sequence loader runs on one device only")
        sequence = PairSequence(
            work.pairs, work.patch_size, global_batch, work.warmup_steps + work.steps, seed=work.seed
        )
        return (sequence[i] for i in range(len(sequence)))
    options = LOADER_OPTIONS[setup.loader]

    def dataset_fn(context: tf.distribute.InputContext) -> tf.data.Dataset:
        return train_dataset(
            work.pairs,
            patch_size=work.patch_size,
            batch_size=context.get_per_replica_batch_size(global_batch),
            seed=work.seed,
            options=options,
            num_shards=context.num_input_pipelines,
            shard_index=context.input_pipeline_id,
        )

    return iter(strategy.distribute_datasets_from_function(dataset_fn))


def _time_steps(setup, work, strategy, model, optimizer, loss_fn, global_batch, bar):
    train_step = make_train_step(model, optimizer, strategy, loss_fn, global_batch, jit_compile=setup.jit_compile)
    batches = _batches(setup, work, strategy, global_batch)
    durations, waits = [], []
    for step in range(work.warmup_steps + work.steps):
        started = time.perf_counter()
        blurry, sharp = next(batches)
        fetched = time.perf_counter()
        loss = float(train_step(blurry, sharp))  # the read-back: the step has finished on the device
        finished = time.perf_counter()
        _check_loss(loss, step)
        if step >= work.warmup_steps:
            durations.append(finished - started)
            waits.append(fetched - started)
            bar.set_postfix(img_s=f"{global_batch * len(durations) / sum(durations):.2f}")
        bar.update(1)
    return durations, waits


def _time_multi_step(setup, work, strategy, model, optimizer, loss_fn, global_batch, bar):
    """Calls of `steps_per_call` steps; each call's time is shared equally by its steps."""
    per_call = setup.steps_per_call
    train_steps = make_multi_step(model, optimizer, strategy, loss_fn, global_batch, jit_compile=setup.jit_compile)
    batches = _batches(setup, work, strategy, global_batch)
    warmup_calls = max(1, math.ceil(work.warmup_steps / per_call))
    timed_calls = max(1, math.ceil(work.steps / per_call))
    bar.reset(total=(warmup_calls + timed_calls) * per_call)
    durations = []
    n = tf.constant(per_call)
    for call in range(warmup_calls + timed_calls):
        started = time.perf_counter()
        loss = float(train_steps(batches, n))
        finished = time.perf_counter()
        _check_loss(loss, call * per_call)
        if call >= warmup_calls:
            durations += [(finished - started) / per_call] * per_call
            bar.set_postfix(img_s=f"{global_batch * len(durations) / sum(durations):.2f}")
        bar.update(per_call)
    return durations, None


def _check_loss(loss: float, step: int) -> None:
    # A timing of a diverged model would still be a timing, but of NaN arithmetic: say so rather than report it.
    if not math.isfinite(loss):
        raise TimingsError(f"the loss became {loss} at step {step + 1}; the figures would not be meaningful")
