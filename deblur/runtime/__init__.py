"""Which runtime runs the model's forward pass: TensorFlow (always there) or OpenVINO Runtime (the `openvino`
extra). Tiling, the ensemble and the strength are deblur's own (`deblur.inference`), the same on every runtime.

"auto" picks OpenVINO when it is installed: on the shipped model and a 1280x720 photo it was 1.4x faster than
TensorFlow in bfloat16 on a 2-core AMD EPYC Zen 4 (docs/speed.md), with output 84 dB from TensorFlow float32.
"""

from __future__ import annotations

import importlib.util
from typing import Literal, get_args

from deblur.errors import SettingError

Runtime = Literal["auto", "tensorflow", "openvino"]
DEFAULT_RUNTIME: Runtime = "auto"
RUNTIME_HELP = "auto: OpenVINO when it is installed (faster on CPUs), else TensorFlow."
OPENVINO_INSTALL = "pip install 'deblur-keras[openvino]'"


def openvino_installed() -> bool:
    return importlib.util.find_spec("openvino") is not None


def choose_runtime(runtime: str) -> tuple[str, str | None]:
    """The runtime to use for `runtime` ("auto", "tensorflow" or "openvino"), and a hint for the user when auto
    fell back to TensorFlow because OpenVINO is not installed (else None)."""
    if runtime not in get_args(Runtime):
        choices = ", ".join(get_args(Runtime))
        raise SettingError(f"runtime must be one of {choices}; got {runtime!r}", settings=("runtime",))
    if runtime == "openvino" and not openvino_installed():
        raise SettingError(f"runtime openvino needs OpenVINO: {OPENVINO_INSTALL}", settings=("runtime",))
    if runtime == "auto":
        if openvino_installed():
            return "openvino", None
        return "tensorflow", f"OpenVINO is faster on CPUs: {OPENVINO_INSTALL}"
    return runtime, None
