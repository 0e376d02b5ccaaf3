"""The replicated training step, shared by the trainer and `deblur timings` so both time the same computation."""

from __future__ import annotations

from collections.abc import Callable

import keras
import tensorflow as tf

LossFn = Callable[[tf.Tensor, tf.Tensor], tf.Tensor]  # (sharp, restored) -> loss per image


def make_train_step(
    model: keras.Model,
    optimizer: keras.optimizers.Optimizer,
    strategy: tf.distribute.Strategy,
    loss_fn: LossFn,
    global_batch: int,
    *,
    jit_compile: bool = False,
) -> Callable:
    """`train_step(blurry, sharp) -> loss`: one optimizer step over the global batch, summed across replicas.

    `blurry` and `sharp` are per-replica values from a distributed dataset, or plain batches (tensors or NumPy)
    under the default strategy. With `jit_compile`, XLA compiles what each replica runs.
    """
    replica_step = _replica_step(model, optimizer, loss_fn, global_batch, jit_compile)

    @tf.function(jit_compile=False)
    def train_step(blurry, sharp):
        losses = strategy.run(replica_step, args=(blurry, sharp))
        return strategy.reduce(tf.distribute.ReduceOp.SUM, losses, axis=None)

    return train_step


def make_multi_step(
    model: keras.Model,
    optimizer: keras.optimizers.Optimizer,
    strategy: tf.distribute.Strategy,
    loss_fn: LossFn,
    global_batch: int,
    *,
    jit_compile: bool = False,
) -> Callable:
    """`train_steps(iterator, n) -> last loss`: `n` steps in one `tf.function` call, taking batches from
    `iterator` inside the graph, so the Python round trip per step is paid once per call."""
    replica_step = _replica_step(model, optimizer, loss_fn, global_batch, jit_compile)

    @tf.function(jit_compile=False)
    def train_steps(iterator, n):
        loss = tf.constant(0.0)
        for _ in tf.range(n):
            blurry, sharp = next(iterator)
            losses = strategy.run(replica_step, args=(blurry, sharp))
            loss = strategy.reduce(tf.distribute.ReduceOp.SUM, losses, axis=None)
        return loss

    return train_steps


def _replica_step(model, optimizer, loss_fn: LossFn, global_batch: int, jit_compile: bool) -> Callable:
    def replica_step(blurry, sharp):
        with tf.GradientTape() as tape:
            restored = model(blurry, training=True)
            loss = tf.nn.compute_average_loss(loss_fn(sharp, restored), global_batch_size=global_batch)
            scaled = optimizer.scale_loss(loss)
        gradients = tape.gradient(scaled, model.trainable_variables)
        optimizer.apply_gradients(zip(gradients, model.trainable_variables, strict=True))
        return loss

    if jit_compile:
        # The cross-replica wrapper stays a plain tf.function: XLA compiles only the per-replica computation.
        return tf.function(replica_step, jit_compile=True)
    return replica_step
