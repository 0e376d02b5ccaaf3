"""Restoration strength: the blend of input and output, its range, and `predict --strength` end to end."""

import numpy as np
import pytest
from helpers import save_model
from PIL import Image
from typer.testing import CliRunner

from deblur.cli import app
from deblur.errors import SettingError
from deblur.inference import load_deblurrer
from deblur.strength import blend, check_strength


def test_blend_is_input_plus_strength_times_the_change():
    rng = np.random.default_rng(0)
    blurry = rng.uniform(0.2, 0.8, (8, 8, 3)).astype(np.float32)
    restored = rng.uniform(0.2, 0.8, (8, 8, 3)).astype(np.float32)
    np.testing.assert_allclose(blend(blurry, restored.copy(), 0.0), blurry)
    np.testing.assert_allclose(blend(blurry, restored.copy(), 0.5), (blurry + restored) / 2, atol=1e-6)
    assert blend(blurry, restored, 1.0) is restored  # no copy at the default
    pushed = blend(blurry, restored.copy(), 1.5)
    np.testing.assert_allclose(pushed, np.clip(blurry + 1.5 * (restored - blurry), 0, 1), atol=1e-6)
    assert pushed.min() >= 0 and pushed.max() <= 1


@pytest.mark.parametrize("strength", [-0.1, 1.51, float("nan")])
def test_strength_outside_the_range_is_refused(strength):
    with pytest.raises(SettingError, match="strength must be from 0 to 1.5") as caught:
        check_strength(strength)
    assert caught.value.settings == ("strength",)


@pytest.mark.parametrize("strength", ["1", None, True])
def test_strength_that_is_not_a_number_is_named(strength):
    with pytest.raises(SettingError, match=f"strength must be a number from 0 to 1.5: {strength!r}"):
        check_strength(strength)  # "1" had been a TypeError from the comparison


def test_deblurrer_strength_and_per_call_override(tmp_path):
    model = save_model(tmp_path / "run", width=4, blocks=1, norm="instance", zero_init_output=False)
    image = np.random.default_rng(1).uniform(0, 1, (32, 40, 3)).astype(np.float32)
    full = load_deblurrer(model, precision="float32")(image)
    half = load_deblurrer(model, precision="float32", strength=0.5)
    assert "strength 50%" in half.settings
    np.testing.assert_allclose(half(image), np.clip(image + 0.5 * (full - image), 0, 1), atol=1e-5)
    np.testing.assert_allclose(half(image, strength=0.0), image, atol=1e-6)
    with pytest.raises(SettingError):
        load_deblurrer(model, strength=2.0)


def test_predict_strength_zero_gives_the_photo_back_and_is_checked(tmp_path):
    model = save_model(tmp_path / "run", width=4, blocks=1, norm="instance", zero_init_output=False)
    photo = (np.random.default_rng(2).uniform(0, 1, (24, 32, 3)) * 255).astype(np.uint8)
    Image.fromarray(photo).save(tmp_path / "photo.png")
    runner = CliRunner()
    args = ["predict", str(tmp_path / "photo.png"), "--model", str(model), "-q"]
    result = runner.invoke(app, [*args, "--out", str(tmp_path / "zero"), "--strength", "0"])
    assert result.exit_code == 0, result.output
    assert np.array_equal(np.asarray(Image.open(tmp_path / "zero" / "photo.png")), photo)
    result = runner.invoke(app, [*args, "--out", str(tmp_path / "over"), "--strength", "151"])
    assert result.exit_code == 2 and "--strength" in result.output
    assert not (tmp_path / "over").exists()
    said = "--strength is in percent: 0.5 keeps 0.5% of the model's change (100: all of it)"
    result = runner.invoke(app, [*args[:-1], "--out", str(tmp_path / "fraction"), "--strength", "0.5"])
    assert result.exit_code == 0 and said in result.output  # a fraction, as the library takes it, had run unsaid
    result = runner.invoke(app, [*args[:-1], "--out", str(tmp_path / "percent"), "--strength", "50"])
    assert result.exit_code == 0 and "in percent" not in result.output
