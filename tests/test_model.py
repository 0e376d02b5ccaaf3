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
