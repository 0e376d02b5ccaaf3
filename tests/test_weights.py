"""The pretrained model shipped in the package: in the wheel, loadable in safe mode once installed, better than the
blurry input on blur its recipe covers, and a starting point for fine-tuning."""

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
import yaml
from helpers import largest_difference, make_flat_dataset, quiet_train, smoke_config
from skimage import data
from skimage.metrics import peak_signal_noise_ratio

from deblur.config import SynthConfig
from deblur.data.degrade import degrade
from deblur.inference import deblur_image, load_deblurrer
from deblur.paths import shipped_model

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ("model.keras", "config.yaml", "MODEL_CARD.md")


def test_this_copy_ships_a_model_with_its_config_and_card():
    model = shipped_model()
    assert model is not None
    for name in SHIPPED:
        assert (model.parent / name).is_file(), name
    assert model.stat().st_size < 25 * 2**20


@pytest.mark.slow
def test_an_installed_wheel_has_the_model_and_loads_it_in_safe_mode(tmp_path):
    # A non-editable install: build the wheel as pip would (offline, with this environment's setuptools) from a
    # copy of what the build reads (so no build/ folder is left in the checkout), install it into a folder of its
    # own, and load the model from there in a fresh interpreter.
    source = tmp_path / "source"
    shutil.copytree(ROOT / "deblur", source / "deblur", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "configs", source / "configs")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source)
    pip = [sys.executable, "-m", "pip", "-q"]
    build = subprocess.run(
        [*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", tmp_path, source], capture_output=True, text=True
    )
    # the output is captured for the check below, so a failed build must show it itself
    assert build.returncode == 0, build.stderr
    # setuptools' warnings (a data folder it "would ignore", a deprecated licence table) are what a user sees first
    assert "BuildBackendWarning" not in build.stderr + build.stdout, build.stderr
    (wheel,) = tmp_path.glob("*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {f"deblur/weights/{name}" for name in SHIPPED} <= names
    assert {f"deblur/weights/kernel_aware/{name}" for name in SHIPPED} <= names
    site = tmp_path / "site"
    subprocess.run([*pip, "install", "--no-deps", "--target", site, wheel], check=True)
    check = (
        "import keras, deblur.model\n"
        "from deblur.paths import shipped_model\n"
        "path = shipped_model()\n"
        "keras.saving.load_model(path, safe_mode=True, compile=False)\n"
        "print(path)\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", check], cwd=tmp_path, env={"PYTHONPATH": str(site)}, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    assert Path(run.stdout.strip()).is_relative_to(site)


def test_the_shipped_model_sharpens_a_photo_blurred_as_its_recipe_does():
    # A photo the model never saw (scikit-image's, not the training photos), a shake kernel of 12-16 px (the
    # recipe's range is 3-32 px) and the recipe's noise.
    sharp = data.chelsea()
    blurry, _ = degrade(sharp, np.random.default_rng(0), SynthConfig(min_length=12.0, max_length=16.0, noise=0.01))
    sharp, blurry = sharp.astype(np.float32) / 255.0, blurry.astype(np.float32) / 255.0
    restored = deblur_image(blurry, load_deblurrer(shipped_model(), precision="float32"))
    gain = peak_signal_noise_ratio(sharp, restored, data_range=1.0) - peak_signal_noise_ratio(
        sharp, blurry, data_range=1.0
    )
    assert gain > 0.5  # 1.24 dB measured with the shipped weights


@pytest.mark.slow
def test_fine_tuning_from_the_shipped_model_runs(tmp_path):
    shipped = shipped_model()
    architecture = yaml.safe_load((shipped.parent / "config.yaml").read_text())["model"]
    config = smoke_config(
        *(f"model.{key}={value}" for key, value in architecture.items()),
        "train.init=pretrained",
        "train.epochs=1",
        "train.steps_per_epoch=1",
        "train.learning_rate=0.00001",
        f"data.root={make_flat_dataset(tmp_path / 'data', size=(64, 64))}",
    )
    messages = []
    tuned = quiet_train(config, tmp_path / "run", messages)
    assert any(f"starting from the weights of {shipped}" in m for m in messages)
    assert np.isfinite(tuned.metrics[-1]["loss"])
    assert largest_difference(load_deblurrer(shipped, precision="float32").model, tuned.model) < 0.001


def test_this_copy_ships_the_kernel_aware_network_with_its_config_and_card():
    model = shipped_model(kernel_aware=True)
    assert model is not None and model.parent.name == "kernel_aware"
    for name in SHIPPED:
        assert (model.parent / name).is_file(), name
    assert yaml.safe_load((model.parent / "config.yaml").read_text())["model"]["kernel_aware"] is True
    assert model.stat().st_size < 25 * 2**20


def test_the_default_deblurs_camera_shake_far_more_than_the_network_and_leaves_a_sharp_photo_alone():
    # A photo neither model saw (scikit-image's), shaken by a 25 px hand-shake kernel of the recipe's kind.
    sharp = data.chelsea()
    recipe = SynthConfig(min_length=25.0, max_length=25.0, noise=0.005)
    blurry, _ = degrade(sharp, np.random.default_rng(4), recipe)
    sharp, blurry = sharp.astype(np.float32) / 255.0, blurry.astype(np.float32) / 255.0
    default = load_deblurrer(shipped_model(kernel_aware=True), precision="float32", method="kernel-aware")
    network = load_deblurrer(shipped_model(), precision="float32")
    psnr = lambda image: peak_signal_noise_ratio(sharp[20:-20, 20:-20], image[20:-20, 20:-20], data_range=1.0)  # noqa: E731
    deblurred = psnr(default(blurry))  # once: the kernel path's estimate is most of this test's time
    assert deblurred > psnr(network(blurry)) + 1.0
    assert deblurred > psnr(blurry) + 2.0
    assert peak_signal_noise_ratio(sharp, default(sharp), data_range=1.0) > 35  # a sharp photo comes back as it was
