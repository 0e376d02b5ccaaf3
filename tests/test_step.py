import keras
import numpy as np
import tensorflow as tf

from deblur.losses import l1_loss as l1
from deblur.model import build_generator
from deblur.training.step import make_multi_step, make_train_step


def _setup():
    keras.utils.set_random_seed(3)
    model = build_generator(width=4, blocks=1, norm="none", zero_init_output=False)
    optimizer = keras.optimizers.Adam(1e-2)
    optimizer.build(model.trainable_variables)
    return model, optimizer


def _batches(count=3):
    rng = np.random.default_rng(0)
    return [
        (rng.random((2, 16, 16, 3), dtype=np.float32), rng.random((2, 16, 16, 3), dtype=np.float32))
        for _ in range(count)
    ]


def test_steps_in_one_call_equal_single_steps():
    """Several steps per tf.function call must train exactly as many single calls on the same batches."""
    strategy = tf.distribute.get_strategy()
    batches = _batches()

    model, optimizer = _setup()
    step = make_train_step(model, optimizer, strategy, l1, 2)
    single_losses = [float(step(blurry, sharp)) for blurry, sharp in batches]
    single = [w.copy() for w in model.get_weights()]

    model, optimizer = _setup()
    steps = make_multi_step(model, optimizer, strategy, l1, 2)
    dataset = tf.data.Dataset.from_tensor_slices(tuple(np.stack(parts) for parts in zip(*batches, strict=True)))
    last_loss = float(steps(iter(dataset), tf.constant(len(batches))))

    assert int(optimizer.iterations.numpy()) == len(batches)
    np.testing.assert_allclose(last_loss, single_losses[-1], rtol=1e-5)
    for a, b in zip(single, model.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert not np.allclose(single[-1], _setup()[0].get_weights()[-1])  # the steps did change the weights
