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
    assert "GroupNormalization" in kinds and "BatchNormalization" not in kinds
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
