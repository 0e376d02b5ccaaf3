import json
import re

import keras
import numpy as np
import pytest

from deblur.model import build_generator


@pytest.mark.parametrize("height, width", [(37, 53), (5, 9), (32, 32), (8, 7), (101, 64)])
def test_any_size_in_same_size_out(height, width):
    model = build_generator(width=4, blocks=1)
    assert model(np.random.rand(2, height, width, 3).astype("float32")).shape == (2, height, width, 3)


def test_identity_at_start_with_zero_init():
    x = np.random.rand(1, 21, 30, 3).astype("float32")
    np.testing.assert_allclose(build_generator(width=4, blocks=2)(x), x, atol=1e-6)


def test_random_init_output_in_range():
    model = build_generator(width=4, blocks=1, zero_init_output=False)
    y = np.asarray(model(np.random.rand(2, 24, 24, 3).astype("float32")))
    assert y.min() >= 0.0 and y.max() <= 1.0
    assert np.abs(y - 0.5).max() > 0  # not the identity any more


def test_float32_output_and_skip_under_bfloat16():
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    model = build_generator(width=4, blocks=1)
    x = np.random.rand(1, 19, 23, 3).astype("float32")
    y = model(x)
    assert y.dtype == "float32"
    # bfloat16 would quantize the skip path to 8 mantissa bits (errors around 1e-3); float32 keeps it exact.
    np.testing.assert_allclose(y, x, atol=1e-6)
    assert model.get_layer("head_conv").compute_dtype == "bfloat16"


@pytest.mark.parametrize("norm", ["instance", "batch", "none"])
def test_save_and_load_with_safe_mode(tmp_path, norm):
    model = build_generator(width=4, blocks=2, norm=norm, dropout=0.1, zero_init_output=False)
    path = tmp_path / "m.keras"
    model.save(path)
    loaded = keras.saving.load_model(path, safe_mode=True)
    x = np.random.rand(1, 30, 26, 3).astype("float32")
    np.testing.assert_allclose(model(x), loaded(x), atol=1e-6)


def test_no_lambda_layers_and_norm_choice():
    model = build_generator(width=4, blocks=2, norm="instance")
    kinds = {type(layer).__name__ for layer in model.layers}
    assert "Lambda" not in kinds
    assert "InstanceNormalization" in kinds and "BatchNormalization" not in kinds
    assert "GroupNormalization" not in kinds  # its reshapes into groups cost time under mixed precision
    assert "Conv2DTranspose" not in kinds


def test_architecture_counts():
    model = build_generator(width=8, blocks=3, norm="batch")
    convs = [layer for layer in model.layers if isinstance(layer, keras.layers.Conv2D)]
    # head, two downsampling, two per block, two upsampling, tail
    assert len(convs) == 1 + 2 + 2 * 3 + 2 + 1
    assert convs[1].strides == (2, 2) and convs[2].strides == (2, 2)
    assert model.get_layer("block1_conv1").filters == 32


def test_full_size_parameter_count():
    # The DeblurGAN generator (64 wide, 9 blocks, instance norm) has about 11.4 million parameters.
    assert build_generator().count_params() == pytest.approx(11.38e6, rel=0.01)


def _previous_architecture(model: keras.Model) -> keras.Model:
    """The same network as built before InstanceNormalization: Keras' GroupNormalization with a group per channel
    and the tail convolution in float32; weights copied over."""
    from deblur.model import InstanceNormalization

    def swap(layer):
        config = layer.get_config()
        if isinstance(layer, InstanceNormalization):
            return keras.layers.GroupNormalization(groups=-1, epsilon=layer.epsilon, name=layer.name)
        if layer.name == "tail_conv":
            return keras.layers.Conv2D.from_config({**config, "dtype": "float32"})
        return layer.__class__.from_config(config)

    previous = keras.models.clone_model(model, clone_function=swap)
    previous.set_weights(model.get_weights())
    return previous


def test_instance_norm_is_group_norm_with_a_group_per_channel():
    from deblur.model import InstanceNormalization

    x = np.random.default_rng(0).normal(2.0, 3.0, (2, 9, 11, 6)).astype("float32")
    ours = InstanceNormalization()
    ours.build(x.shape)
    ours.set_weights([np.linspace(0.5, 2, 6), np.linspace(-1, 1, 6)])
    theirs = keras.layers.GroupNormalization(groups=-1, epsilon=1e-5)
    theirs.build(x.shape)
    theirs.set_weights(ours.get_weights())
    np.testing.assert_allclose(ours(x), theirs(x), atol=1e-5)


@pytest.mark.parametrize(
    "policy, mean_tolerance, max_tolerance", [("float32", 1e-6, 1e-5), ("mixed_bfloat16", 0.01, 0.1)]
)
def test_outputs_are_those_of_the_previous_architecture(policy, mean_tolerance, max_tolerance):
    # Same weights, same input: the faster norm and the tail conv in the compute dtype change nothing in float32.
    # In bfloat16 both architectures round (8 bits of mantissa); measured on this random network, which changes
    # the image by about 0.3 on average, each differs from float32 by 0.005-0.009 on average and 0.06-0.09 at most.
    keras.mixed_precision.set_global_policy(policy)
    try:
        keras.utils.set_random_seed(1)
        model = build_generator(width=8, blocks=2, zero_init_output=False)
        previous = _previous_architecture(model)
    finally:
        keras.mixed_precision.set_global_policy("float32")
    assert "GroupNormalization" in {type(layer).__name__ for layer in previous.layers}
    x = np.random.default_rng(2).random((2, 28, 36, 3)).astype("float32")
    ours, theirs = np.asarray(model(x)), np.asarray(previous(x))
    assert np.abs(ours - x).max() > 0.05  # the network does change the image: the comparison means something
    difference = np.abs(ours - theirs)
    assert difference.mean() < mean_tolerance and difference.max() < max_tolerance


def _autodiff_instance_norm(x, gamma, beta, epsilon=1e-5):
    """InstanceNormalization's forward as it was, left to automatic differentiation: the reference gradient."""
    mean, variance = keras.ops.moments(keras.ops.cast(x, "float32"), axes=(1, 2), keepdims=True)
    scale = gamma * keras.ops.rsqrt(variance + epsilon)
    shift = beta - mean * scale
    return x * keras.ops.cast(scale, x.dtype) + keras.ops.cast(shift, x.dtype)


def _exact_instance_norm_gradients(x, gamma, upstream, epsilon=1e-5):
    """d/dx, d/dgamma, d/dbeta of sum(upstream * instance_norm(x)), in float64 from the textbook formulas."""
    x, upstream = x.astype(np.float64), upstream.astype(np.float64)
    mean = x.mean(axis=(1, 2), keepdims=True)
    inverse = 1 / np.sqrt(x.var(axis=(1, 2), keepdims=True) + epsilon)
    x_hat = (x - mean) * inverse
    mean_dy = upstream.mean(axis=(1, 2), keepdims=True)
    mean_dy_x_hat = (upstream * x_hat).mean(axis=(1, 2), keepdims=True)
    d_x = gamma * inverse * (upstream - mean_dy - x_hat * mean_dy_x_hat)
    return d_x, (upstream * x_hat).sum(axis=(0, 1, 2)), upstream.sum(axis=(0, 1, 2))


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("shape", [(2, 9, 11, 6), (4, 32, 32, 256), (1, 5, 3, 1), (3, 64, 48, 16)])
def test_instance_norm_gradients_are_exact(shape, dtype):
    """The closed-form gradient against float64 and against automatic differentiation of the same forward."""
    import tensorflow as tf

    from deblur.model import instance_norm

    rng = np.random.default_rng(sum(shape))
    # Inputs rounded to the compute dtype first, so the float64 truth sees exactly what the layer sees.
    x = tf.cast(rng.normal(2.0, 3.0, shape).astype("float32"), dtype)
    upstream = tf.cast(rng.normal(0.0, 1.0, shape).astype("float32"), dtype)
    gamma = tf.constant(rng.uniform(0.5, 2.0, shape[-1:]).astype("float32"))
    beta = tf.constant(rng.uniform(-1.0, 1.0, shape[-1:]).astype("float32"))
    as_array = lambda t: np.asarray(tf.cast(t, "float32"))  # noqa: E731
    truth = _exact_instance_norm_gradients(as_array(x), as_array(gamma), as_array(upstream))
    results = []
    for fn in (instance_norm, _autodiff_instance_norm):
        with tf.GradientTape() as tape:
            tape.watch([x, gamma, beta])
            y = fn(x, gamma, beta, 1e-5)
            loss = tf.reduce_sum(tf.cast(y, "float32") * tf.cast(upstream, "float32"))
        results.append([y, *tape.gradient(loss, [x, gamma, beta])])
    np.testing.assert_array_equal(results[0][0], results[1][0])  # the forward pass is unchanged, bit for bit
    for ours, automatic, exact in zip(results[0][1:], results[1][1:], truth, strict=True):
        error = np.abs(as_array(ours) - exact).max() / np.abs(exact).max()
        automatic_error = np.abs(as_array(automatic) - exact).max() / np.abs(exact).max()
        if dtype == "float32":
            assert error < 1e-5 and automatic_error < 1e-5
        else:
            # d/dx goes through three bfloat16 roundings (8 bits) both ways: a product, a product and a sum. The
            # closed form's per-channel sums stay float32, so it is never less exact than automatic
            # differentiation, which sums the gradients of gamma and beta in bfloat16.
            assert error < 3 * 2**-8 and error <= automatic_error * 1.01 + 1e-6


@pytest.mark.parametrize("policy, tolerance", [("float32", 1e-5), ("mixed_bfloat16", 1e-2)])
def test_training_with_the_closed_form_follows_the_same_loss_curve(monkeypatch, policy, tolerance):
    """A few Adam steps from one seed: the closed-form norm gradient and automatic differentiation agree."""
    import tensorflow as tf

    import deblur.model
    from deblur.losses import l1_loss
    from deblur.training.step import make_train_step

    blurry, sharp = np.random.default_rng(3).random((2, 2, 32, 32, 3), dtype=np.float32)
    curves = []
    for norm in (deblur.model.instance_norm, _autodiff_instance_norm):
        monkeypatch.setattr(deblur.model, "instance_norm", norm)  # read when the step is traced
        keras.mixed_precision.set_global_policy(policy)
        try:
            keras.utils.set_random_seed(0)
            # Random output init, so the loss moves from the first step and the curve says something.
            model = build_generator(width=8, blocks=2, zero_init_output=False)
            optimizer = keras.optimizers.Adam(1e-3)
            optimizer.build(model.trainable_variables)
            step = make_train_step(model, optimizer, tf.distribute.get_strategy(), l1_loss, 2)
            curves.append([float(step(blurry, sharp)) for _ in range(6)])
        finally:
            keras.mixed_precision.set_global_policy("float32")
    ours, automatic = np.array(curves)
    assert abs(ours[-1] - ours[0]) > 10 * tolerance * ours[0]  # the loss does move: the comparison means something
    np.testing.assert_allclose(ours, automatic, rtol=tolerance)


def test_the_kernel_aware_network_takes_the_photo_and_its_deconvolution():
    from deblur.model import GATE_START, is_kernel_aware

    model = build_generator(width=4, blocks=1, kernel_aware=True)
    assert is_kernel_aware(model) and not is_kernel_aware(build_generator(width=4, blocks=1))
    blurry = np.random.rand(1, 37, 53, 3).astype("float32")
    deconvolved = np.random.rand(1, 37, 53, 3).astype("float32")
    out = np.asarray(model(np.concatenate([blurry, deconvolved], axis=-1)))
    assert out.shape == (1, 37, 53, 3)
    # untrained, it mixes in the deconvolution at the gate's starting weight, and nothing else
    gate = 1 / (1 + np.exp(-GATE_START))
    np.testing.assert_allclose(out, np.clip(blurry + gate * (deconvolved - blurry), 0, 1), atol=1e-5)


def test_a_kernel_aware_network_started_from_a_plain_one_first_gives_what_it_gives(tmp_path):
    from deblur.model import start_from_network

    network = build_generator(width=4, blocks=2, zero_init_output=False)
    model = build_generator(width=4, blocks=2, kernel_aware=True)
    start_from_network(model, network)
    photo = np.random.rand(1, 24, 32, 3).astype("float32")
    # with the photo as its own deconvolution, the gate has nothing to mix: the plain network's result
    same = np.asarray(model(np.concatenate([photo, photo], axis=-1)))
    np.testing.assert_allclose(same, np.asarray(network(photo)), atol=1e-5)
    model.save(tmp_path / "aware.keras")
    loaded = keras.saving.load_model(tmp_path / "aware.keras", safe_mode=True)
    np.testing.assert_allclose(np.asarray(loaded(np.concatenate([photo, photo], -1))), same, atol=1e-6)


def test_with_mix_gives_the_output_and_the_gated_mix_at_the_inputs_size():
    from deblur.model import with_mix

    model = build_generator(width=4, blocks=1, kernel_aware=True, zero_init_output=False)
    stacked = np.random.default_rng(0).random((1, 30, 42, 6), dtype=np.float32)  # not a multiple of 4: cropped back
    output, mix = with_mix(model)(stacked)
    np.testing.assert_allclose(output, model(stacked), atol=1e-6)
    gate = keras.Model(model.input, model.get_layer("gate").output)(stacked)[:, :30, :42]
    blurry, deconvolved = stacked[..., :3], stacked[..., 3:]
    np.testing.assert_allclose(mix, blurry + gate * (deconvolved - blurry), atol=1e-6)
    assert [v.path for v in with_mix(model).trainable_variables] == [v.path for v in model.trainable_variables]


def test_with_gate_gives_the_output_and_the_gate_as_a_fourth_channel_once():
    from deblur.model import with_gate

    model = build_generator(width=4, blocks=1, kernel_aware=True, zero_init_output=False)
    stacked = np.random.default_rng(0).random((1, 30, 42, 6), dtype=np.float32)  # not a multiple of 4: cropped back
    both = np.asarray(with_gate(model)(stacked))
    assert both.shape == (1, 30, 42, 4)
    np.testing.assert_allclose(both[..., :3], model(stacked), atol=1e-6)
    gate = keras.Model(model.input, model.get_layer("gate").output)(stacked)[:, :30, :42]
    np.testing.assert_allclose(both[..., 3:], gate, atol=1e-6)
    assert with_gate(with_gate(model)).outputs[0].shape[-1] == 4


def test_numpy_whole_numbers_build_the_model_and_are_kept_as_python_ints():
    from deblur.config import ModelConfig

    config = ModelConfig(width=np.int64(8), blocks=np.int32(2))  # had been "model.width must be a whole number"
    assert (config.width, config.blocks) == (8, 2) and type(config.width) is type(config.blocks) is int
    model = build_generator(width=np.int64(4), blocks=np.int64(1))
    assert model.get_layer("head_conv").filters == 4 and type(model.get_layer("head_conv").filters) is int
    json.dumps(model.get_config())  # as the saved model holds it


@pytest.mark.parametrize(
    "given, said",
    [
        ({"norm": "layer"}, "model.norm must be one of instance, batch, none; got 'layer'"),  # no norm, no biases
        ({"blocks": -1}, "model.blocks must be between 0 and 64; got -1"),  # no blocks, without a word
        ({"width": 0}, "model.width must be > 0; got 0"),
        ({"width": "64"}, "model.width must be a whole number, got '64'"),  # a TypeError
        ({"blocks": 2.5}, "model.blocks must be a whole number, got 2.5"),  # Keras' "evenly divisible"
    ],
)
def test_build_generator_refuses_what_a_config_would_naming_its_key(given, said):
    from deblur.config import ConfigError

    with pytest.raises(ConfigError, match=re.escape(said)):
        build_generator(**{"width": 4, "blocks": 1, **given})
