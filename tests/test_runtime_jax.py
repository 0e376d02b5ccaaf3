"""Deblurring through the JAX runtime (`deblur.runtime.jax`), as on a GPU machine: a process with KERAS_BACKEND=jax
in which TensorFlow cannot be imported gives the photo TensorFlow's `deblur predict` gives."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import numpy as np
import pytest
from helpers import noise_image, write_image
from PIL import Image
from test_training_jax import WITHOUT_TENSORFLOW

from deblur.errors import SettingError
from deblur.runtime import choose_runtime
from deblur.runtime.jax import MAX_CALL_PIXELS, call_pixels_for

needs_jax = pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="JAX is not installed")


@needs_jax
@pytest.mark.slow
def test_predict_under_jax_without_tensorflow_matches_tensorflow(tmp_path):
    photo = tmp_path / "photo.png"
    write_image(photo, noise_image(np.random.default_rng(3), 70, 91))
    env = {**os.environ, "KERAS_BACKEND": "jax"}
    command = [sys.executable, "-c", WITHOUT_TENSORFLOW, "predict", str(photo), "--out", str(tmp_path / "jax")]
    done = subprocess.run([*command, "--precision", "float32"], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "in float32 on JAX on cpu" in done.stdout

    from deblur.predict import deblur_photos
    from deblur.settings import DeblurSettings, PredictSettings, ReadSettings, WriteSettings

    deblur = DeblurSettings(precision="float32", runtime="tensorflow")
    deblur_photos(PredictSettings(ReadSettings((photo,)), deblur, WriteSettings(str(tmp_path / "tf"))), log=str)
    under_jax = np.asarray(Image.open(tmp_path / "jax" / "photo.png"), dtype=np.int16)
    under_tf = np.asarray(Image.open(tmp_path / "tf" / "photo.png"), dtype=np.int16)
    assert np.abs(under_jax - under_tf).max() <= 1


def test_the_keras_runtimes_need_their_backend():
    assert choose_runtime("tensorflow") == ("tensorflow", None)
    with pytest.raises(SettingError, match="KERAS_BACKEND=jax"):
        choose_runtime("jax")


def test_gpu_calls_grow_with_memory_and_shrink_with_the_model():
    h200 = 141 * 2**30
    assert call_pixels_for(h200, 32) == MAX_CALL_PIXELS  # 4K frames go whole
    assert 3840 * 2160 <= call_pixels_for(16 * 2**30, 32) < MAX_CALL_PIXELS
    assert call_pixels_for(16 * 2**30, 64) == call_pixels_for(16 * 2**30, 32) // 2
