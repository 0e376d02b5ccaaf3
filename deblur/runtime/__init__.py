"""Which runtime runs the model's forward pass: TensorFlow, OpenVINO Runtime (the `openvino` extra), or JAX (Keras'
JAX backend, `KERAS_BACKEND=jax`: GPUs, and machines without TensorFlow). Tiling, the ensemble and the strength are
deblur's own (`deblur.inference`), the same on every runtime.

"auto" picks OpenVINO when it is installed: on the shipped model and a 1280x720 photo it was 1.4x faster than
TensorFlow in bfloat16 on a 2-core AMD EPYC Zen 4 (docs/speed.md), with output 84 dB from TensorFlow float32.
Under `KERAS_BACKEND=jax` it picks JAX, on the GPU when JAX has one (`deblur.runtime.jax`).
"""

from __future__ import annotations

import importlib.util
from typing import Literal, get_args

from deblur.errors import SettingError, check_choice
from deblur.hardware import keras_backend

Runtime = Literal["auto", "tensorflow", "openvino", "jax"]
DEFAULT_RUNTIME: Runtime = "auto"
RUNTIME_HELP = (
    "auto: OpenVINO when it is installed (faster on CPUs), else TensorFlow; JAX (on its GPU if any) under "
    "KERAS_BACKEND=jax."
)
OPENVINO_INSTALL = "pip install 'deblur-keras[openvino]'"
# The runtimes that run the Keras model itself, and the backend each needs Keras to be on.
KERAS_RUNTIMES = {"tensorflow": "tensorflow", "jax": "jax"}


def openvino_installed() -> bool:
    return importlib.util.find_spec("openvino") is not None


def check_runtime(runtime: str) -> None:
    """Refuse a runtime that is none of `Runtime`'s, naming the choices."""
    check_choice("runtime", runtime, get_args(Runtime))


def choose_runtime(runtime: str) -> tuple[str, str | None]:
    """The runtime to use for `runtime` ("auto", "tensorflow", "openvino" or "jax"), and a hint for the user when
    auto fell back to TensorFlow because OpenVINO is not installed (else None)."""
    check_runtime(runtime)
    backend = keras_backend()
    if runtime == "auto":
        if backend == "jax":  # asked for by the environment; OpenVINO's converter would need TensorFlow
            return "jax", None
        if openvino_installed():
            return "openvino", None
        return "tensorflow", f"OpenVINO is faster on CPUs: {OPENVINO_INSTALL}"
    if runtime == "openvino" and not openvino_installed():
        raise SettingError(f"runtime openvino needs OpenVINO: {OPENVINO_INSTALL}", settings=("runtime",))
    if runtime == "openvino" and backend != "tensorflow":
        raise SettingError(
            "runtime openvino converts the model through TensorFlow: run it with KERAS_BACKEND=tensorflow",
            settings=("runtime",),
        )
    if runtime in KERAS_RUNTIMES and backend != KERAS_RUNTIMES[runtime]:
        raise SettingError(
            f"runtime {runtime} needs Keras on its {runtime} backend: set KERAS_BACKEND={runtime} before deblur "
            f"starts (Keras is on {backend})",
            settings=("runtime",),
        )
    return runtime, None
