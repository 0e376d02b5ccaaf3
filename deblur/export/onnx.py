"""An ONNX model for ONNX Runtime, converted by Keras' own `model.export(format="onnx")` (tf2onnx underneath)
from the generator with its padding rewritten in ops tf2onnx converts correctly (`deblur.export.layers`).

Input `blurry`, float32 RGB in [0, 1], [batch, height, width, 3] of any size; output the same shape, float32.
With int8, ONNX Runtime's static post-training quantization (QDQ, per-channel int8 weights, uint8 activations
from MinMax calibration) is applied to the 18 residual-block convolutions only: they are 75% of the arithmetic,
and quantizing the rest as well (the input and output convolutions, the normalizations) lost 0.39 dB on real blur
where this loses 0.02 dB (the docs' export page has the figures).
"""

from __future__ import annotations

import re
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

from deblur.console import progress_bar
from deblur.errors import SettingError
from deblur.export.layers import convertible

INPUT_NAME = "blurry"
OUTPUT_NAME = "sharp"
DIMENSIONS = ("batch", "height", "width")  # the free dimensions' names, on the input and the output
# A residual-block convolution, as tf2onnx names its node: <model>/block3_conv1_1/convolution.
RESIDUAL_CONV = re.compile(r"(^|/)block\d+_conv[12](_\d+)?/")


def export_onnx(
    model: keras.Model,
    path: Path,
    *,
    calibration: list[np.ndarray] | None = None,
    every_op: bool = False,
    progress: bool = False,
) -> Path:
    """Write `model` (float32) as an `.onnx` file at `path`; with `calibration` (HWC float32 patches of blurry
    photos), quantized to int8 as described above. Returns `path`.

    every_op: quantize every op, not only the residual blocks. It lost 0.39 dB on real blur, so `deblur export`
    does not offer it; benchmarks/export_formats.py measures it.
    progress: a bar over the calibration patches (most of an int8 export's time: 16 s of 21 for the shipped model
    on a 2-core Zen 4).
    """
    if calibration is None:
        _convert(model, Path(path))
        return path
    with tempfile.TemporaryDirectory(prefix="deblur-onnx-") as folder:
        float_path, prepared = Path(folder) / "float32.onnx", Path(folder) / "prepared.onnx"
        _convert(model, float_path)
        _quantize(float_path, prepared, Path(path), calibration, every_op=every_op, progress=progress)
    return path


def _convert(model: keras.Model, path: Path) -> None:
    spec = tf.TensorSpec([None, None, None, model.inputs[0].shape[-1]], tf.float32, name=INPUT_NAME)
    with warnings.catch_warnings():
        # Keras' tf2onnx shim probes `np.object`, which NumPy 2 warns about; nothing for the user to act on.
        warnings.filterwarnings("ignore", category=FutureWarning, message=".*np.object.*")
        convertible(model).export(str(path), format="onnx", input_signature=[spec], verbose=False)
    _name_interface(path)


def _name_interface(path: Path) -> None:
    """Name the output `sharp` and the free dimensions `batch`, `height`, `width`: tf2onnx leaves `Identity:0`
    and `unk__2437`, which a deployer has to look up."""
    import onnx

    graph_model = onnx.load(str(path))
    graph = graph_model.graph
    old = graph.output[0].name
    for node in graph.node:
        node.output[:] = [OUTPUT_NAME if name == old else name for name in node.output]
        node.input[:] = [OUTPUT_NAME if name == old else name for name in node.input]
    graph.output[0].name = OUTPUT_NAME
    for value in (graph.input[0], graph.output[0]):
        for dim, name in zip(value.type.tensor_type.shape.dim, DIMENSIONS, strict=False):
            dim.dim_param = name
    onnx.checker.check_model(graph_model)
    onnx.save(graph_model, str(path))


def _quantize(
    float_path: Path,
    prepared: Path,
    path: Path,
    calibration: list[np.ndarray],
    *,
    every_op: bool = False,
    progress: bool = False,
) -> None:
    import onnx
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    class Patches(CalibrationDataReader):
        def __init__(self) -> None:
            bar = progress_bar(calibration, desc="calibrating", unit="patch", disable=not progress)
            self.batches: Iterator[np.ndarray] = iter(bar)

        def get_next(self) -> dict[str, np.ndarray] | None:
            patch = next(self.batches, None)
            return None if patch is None else {INPUT_NAME: patch[None].astype(np.float32)}

    # Folds constants and fixes shapes first, as ONNX Runtime advises before quantizing.
    quant_pre_process(str(float_path), str(prepared), skip_symbolic_shape=True)
    nodes = [node.name for node in onnx.load(str(prepared)).graph.node if node.op_type == "Conv"]
    residual = [name for name in nodes if RESIDUAL_CONV.search(name)]
    if not residual:
        raise SettingError(
            "int8 quantizes the residual blocks' convolutions, and this model has none", settings=("quantize",)
        )
    quantize_static(
        str(prepared),
        str(path),
        Patches(),
        quant_format=QuantFormat.QDQ,
        per_channel=True,
        activation_type=QuantType.QUInt8,
        weight_type=QuantType.QInt8,
        nodes_to_quantize=None if every_op else residual,
    )
