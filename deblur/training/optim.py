"""The optimizer: Adam, its learning-rate schedule, and the scaling rule for more replicas."""

from __future__ import annotations

import math
from collections.abc import Callable

import keras

from deblur.config import TrainConfig


def scaled_learning_rate(learning_rate: float, replicas: int, rule: str) -> float:
    """The learning rate for `replicas` replicas, each with the configured batch, by `rule`."""
    factor = {"sqrt": math.sqrt(replicas), "linear": float(replicas), "none": 1.0}[rule]
    return learning_rate * factor


def replica_learning_rate(training: TrainConfig, replicas: int, log: Callable[[str], None]) -> float:
    """The configured learning rate scaled for `replicas` replicas by `training.lr_scaling`, said in the log when
    there is more than one."""
    learning_rate = scaled_learning_rate(training.learning_rate, replicas, training.lr_scaling)
    if replicas > 1:
        log(
            f"learning rate {training.learning_rate:g} for one replica -> {learning_rate:g} for {replicas} "
            f"(train.lr_scaling={training.lr_scaling})"
        )
    return learning_rate


def build_optimizer(
    training: TrainConfig, total_steps: int, policy: str, learning_rate: float | None = None
) -> keras.optimizers.Optimizer:
    """Adam with the configured schedule, peaking at `learning_rate` (default: the configured one), with loss
    scaling under float16."""
    learning_rate = training.learning_rate if learning_rate is None else learning_rate
    peak = learning_rate
    warmup = training.warmup_within(total_steps)
    if training.schedule == "cosine" or warmup:
        # A linear warm-up from zero, then cosine decay to zero, or (alpha=1) a constant rate.
        learning_rate = keras.optimizers.schedules.CosineDecay(
            0.0 if warmup else peak,
            decay_steps=max(total_steps - warmup, 1),
            alpha=0.0 if training.schedule == "cosine" else 1.0,
            warmup_target=peak if warmup else None,
            warmup_steps=warmup,
        )
    optimizer = keras.optimizers.Adam(learning_rate)
    if policy == "mixed_float16":
        # float16 gradients underflow without loss scaling; bfloat16 has float32's range and needs none.
        optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
    return optimizer
