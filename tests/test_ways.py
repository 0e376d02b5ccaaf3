"""The ways of deblurring: one registry, each way a room behind one interface, and a retired way refused by name."""

from dataclasses import dataclass

import numpy as np
import pytest
from helpers import save_model

from deblur import ways
from deblur.errors import SettingError
from deblur.inference import load_deblurrer
from deblur.losses import image_psnr
from deblur.ways.kernel_aware import HEAVY, LIGHT, OPEN, SHUT


def test_every_way_is_registered_under_its_name_and_the_default_is_one():
    assert list(ways.WAYS) == list(ways.METHODS) == ["kernel-aware", "network", "kernel"]
    assert all(way.name == name for name, way in ways.WAYS.items())
    assert ways.DEFAULT_METHOD in ways.WAYS
    assert {way.model_channels for way in ways.WAYS.values()} == {6, 3, None}


def test_an_unknown_way_is_refused_naming_the_choices_and_a_retired_one_naming_the_default():
    with pytest.raises(
        SettingError, match="method must be one of kernel-aware, network, kernel; got 'wiener'"
    ) as caught:
        ways.check_method("wiener")
    assert caught.value.settings == ("method",)
    with pytest.raises(SettingError, match=r"method auto is .* retired: .*; use the default, kernel-aware"):
        ways.check_method("auto")


def test_a_fourth_way_is_one_class_and_one_registry_entry(tmp_path, monkeypatch):
    """A way that halves the network's change: nothing but the class and its place in WAYS."""

    @dataclass(frozen=True)
    class Gentle:
        name: str = "gentle"
        model_channels: int | None = 3
        clips: str = "gentle"
        clips_note: str = ""
        summary: str = ", gently"
        estimates: int | None = None

        def deblur(self, image, model):
            return (image + model(image)) / 2

    monkeypatch.setitem(ways.WAYS, "gentle", Gentle())
    deblurrer = load_deblurrer(save_model(tmp_path / "run", zero_init_output=False), method="gentle")
    image = np.random.default_rng(0).random((48, 64, 3), dtype=np.float32)
    network = load_deblurrer(deblurrer.model_file)(image)
    np.testing.assert_allclose(deblurrer(image), (image + network) / 2, atol=1e-6)
    assert deblurrer.settings == "float32 on tensorflow, gently"


@pytest.mark.parametrize(
    ("gate", "change", "source"),
    [
        (0.5, 0.01, "network"),
        (SHUT - 0.01, 0.01, "photo"),  # a light deconvolution kept little: run again on the photo alone
        (SHUT - 0.01, 0.5, "network"),
        (OPEN - 0.01, 0.5, "network"),
        (OPEN + 0.01, 0.5, "deconvolution"),  # a heavy deconvolution leaned towards: kept whole
        (OPEN + 0.01, 0.05, "network"),  # 0.01 apart: 40 dB, light; 0.05: 26 dB; 0.5: under 10 dB, heavy
    ],
)
def test_the_kernel_aware_way_keeps_a_heavy_deconvolution_whole_and_runs_again_where_a_light_one_is_kept_little(
    monkeypatch, gate, change, source
):
    import deblur.shake.restore as restore

    image = np.random.default_rng(0).uniform(0.2, 0.8, (40, 56, 3)).astype(np.float32)
    deconvolved = image + change * np.random.default_rng(1).choice([-1, 1], image.shape).astype(np.float32)
    deconvolved = np.clip(deconvolved, 0, 1)
    assert (image_psnr(image, deconvolved) > LIGHT) == (change == 0.01)
    assert (image_psnr(image, deconvolved) < HEAVY) == (change == 0.5)
    monkeypatch.setattr(restore, "deconvolved", lambda photo, settings: deconvolved)
    seen = []

    def model(stacked):  # the network's result (here half its input's last three channels) and its gate, everywhere
        seen.append(stacked)
        return np.concatenate([stacked[:, :, 3:] / 2, np.full((40, 56, 1), gate, np.float32)], axis=2)

    restored = ways.WAYS["kernel-aware"].deblur(image, model)
    assert ways.kernel_aware.result_source(image, deconvolved, np.full((40, 56), gate)) == source
    assert len(seen) == (2 if source == "photo" else 1) and restored.shape == image.shape
    np.testing.assert_array_equal(seen[0][:, :, 3:], deconvolved)
    expected = {"network": deconvolved / 2, "photo": image / 2, "deconvolution": deconvolved}[source]
    np.testing.assert_array_equal(restored, expected)
