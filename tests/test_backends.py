"""The model on every Keras backend installed here: the shipped model gives the same output under each.

Each backend runs in its own process (Keras picks its backend once, at import). The mirror padding that Keras'
torch backend cannot do with `ops.pad` is checked here too, against NumPy, on whatever backend the tests run.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import numpy as np
import pytest
from keras import ops

from deblur.model import mirror_pad

BACKENDS = ("tensorflow", "jax", "torch")
INSTALLED = [name for name in BACKENDS if importlib.util.find_spec(name) is not None]

# An odd size, so PadToMultiple mirrors rows and columns on the way in, and CropToMatch crops on the way out.
RUN_SHIPPED_MODEL = """
import sys
import keras
import numpy as np
import deblur.model  # registers the custom layers
from deblur.paths import choose_model

model = keras.saving.load_model(choose_model(None).path, safe_mode=True, compile=False)
image = np.random.default_rng(0).random((1, 37, 54, 3), dtype=np.float32)
assert keras.backend.backend() == sys.argv[2], keras.backend.backend()
np.save(sys.argv[1], keras.ops.convert_to_numpy(model(image)))
"""


def shipped_outputs(backends: list[str], folder) -> dict[str, np.ndarray]:
    """Each backend's output, from processes run side by side: one after another they took 28 s of the suite,
    most of it importing the backends."""
    running = {}
    for backend in backends:
        env = {**os.environ, "KERAS_BACKEND": backend, "TF_CPP_MIN_LOG_LEVEL": "3"}
        command = [sys.executable, "-c", RUN_SHIPPED_MODEL, str(folder / f"{backend}.npy"), backend]
        running[backend] = subprocess.Popen(
            command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
    errors = {backend: process.communicate()[1] for backend, process in running.items()}
    for backend, process in running.items():
        assert process.returncode == 0, f"{backend}: {errors[backend][-2000:]}"
    return {backend: np.load(folder / f"{backend}.npy") for backend in backends}


@pytest.mark.slow
@pytest.mark.skipif(len(INSTALLED) < 2, reason="one Keras backend installed: nothing to compare")
def test_the_shipped_model_gives_the_same_output_on_every_installed_backend(tmp_path):
    outputs = shipped_outputs(INSTALLED, tmp_path)
    reference = outputs[INSTALLED[0]]
    assert reference.shape == (1, 37, 54, 3)
    for backend, output in outputs.items():
        psnr = 10 * np.log10(1.0 / max(float(np.mean((output - reference) ** 2)), 1e-20))
        assert psnr >= 80, f"{backend} differs from {INSTALLED[0]}: {psnr:.1f} dB"


@pytest.mark.parametrize("repeat_edge", [False, True])
@pytest.mark.parametrize("pads", [(1, 1, 1, 1), (3, 3, 3, 3), (0, 3, 0, 1), (0, 0, 0, 2), (2, 0, 1, 0)])
def test_mirror_pad_matches_numpy(pads, repeat_edge):
    top, bottom, left, right = pads
    image = np.arange(2 * 5 * 6 * 3, dtype=np.float32).reshape(2, 5, 6, 3)
    expected = np.pad(image, [(0, 0), (top, bottom), (left, right), (0, 0)], "symmetric" if repeat_edge else "reflect")
    got = ops.convert_to_numpy(mirror_pad(image, top, bottom, left, right, repeat_edge=repeat_edge))
    np.testing.assert_array_equal(got, expected)
