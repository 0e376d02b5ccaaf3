"""The JAX loop's training and validation steps: stateless, jitted, on the variables' values.

The state is a dict of lists of arrays ("trainable", "non_trainable", "optimizer", in the order of the model's and
the optimizer's variables); a training step takes one and returns the next, so XLA can reuse its buffers.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import keras
from keras import ops

from deblur.losses import psnr, ssim


def variables_of(model: keras.Model, optimizer: keras.optimizers.Optimizer) -> dict[str, list]:
    """The Keras variables the state holds the values of, in the state's order."""
    return {
        "trainable": model.trainable_variables,
        "non_trainable": model.non_trainable_variables,
        "optimizer": optimizer.variables,
    }


def initial_state(model: keras.Model, optimizer: keras.optimizers.Optimizer) -> dict[str, list]:
    return {group: [variable.value for variable in found] for group, found in variables_of(model, optimizer).items()}


def make_train_step(model: keras.Model, optimizer: keras.optimizers.Optimizer, loss_fn: Callable) -> Callable:
    """`step(state, blurry, sharp) -> (loss, state)`: one optimizer step on the mean of `loss_fn(sharp, restored)`
    (a loss per image), jitted, the old state's buffers donated to the new."""

    def loss_of(trainable, non_trainable, optimizer_values, blurry, sharp):
        restored, non_trainable = model.stateless_call(trainable, non_trainable, blurry, training=True)
        loss = ops.mean(loss_fn(sharp, restored))
        # Loss scaling (float16 only) reads its scale from the optimizer's state, passed in as values.
        with keras.StatelessScope(state_mapping=list(zip(optimizer.variables, optimizer_values, strict=True))):
            scaled = optimizer.scale_loss(loss)
        return scaled, (loss, non_trainable)

    def train_step(state, blurry, sharp):
        gradient_of = jax.value_and_grad(loss_of, has_aux=True)
        (_, (loss, non_trainable)), grads = gradient_of(
            state["trainable"], state["non_trainable"], state["optimizer"], blurry, sharp
        )
        trainable, optimizer_values = optimizer.stateless_apply(state["optimizer"], grads, state["trainable"])
        return loss, {"trainable": trainable, "non_trainable": non_trainable, "optimizer": optimizer_values}

    return jax.jit(train_step, donate_argnums=0)


def make_eval_step(model: keras.Model) -> Callable:
    """`scores(state, blurry, sharp)`: PSNR and SSIM of the model's output, then of the blurry input."""

    def eval_step(state, blurry, sharp):
        restored, _ = model.stateless_call(state["trainable"], state["non_trainable"], blurry, training=False)
        photo = blurry[..., :3]  # the kernel-aware network's input also holds the deconvolution
        return psnr(sharp, restored), ssim(sharp, restored), psnr(sharp, photo), ssim(sharp, photo)

    return jax.jit(eval_step)


def make_pair_maker(kernel_aware: bool) -> Callable:
    """`make(sharp, kernels, estimates, noise, linear, key) -> (inputs, sharp)`: one batch of pairs made on the
    device from the host's draws (`deblur.data.device_pairs.make_pairs`), jitted."""
    from deblur.data.device_pairs import HostDraws, make_pairs

    def make(sharp, kernels, estimates, noise, linear, key):
        return make_pairs(HostDraws(sharp, kernels, estimates, noise, linear), key, kernel_aware=kernel_aware)

    return jax.jit(make)
