"""Running an exported model in its own runtime, to check it against `deblur predict` and time it.

Each runner takes one HWC RGB float32 image in [0, 1] and returns the deblurred one, as `Deblurrer` does, but
whole (no tiles) and through the exported file only.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import numpy as np

from deblur.errors import (
    DeblurError,
    MissingFileError,
    SettingError,
    check_choice,
    check_switches,
    check_threads,
    error_reason,
)
from deblur.files import as_path
from deblur.image_array import as_image
from deblur.imageio import to_uint8
from deblur.paths import exported_format

Runner = Callable[[np.ndarray], np.ndarray]


RUNTIMES = {"savedmodel": "TensorFlow", "litert": "LiteRT", "onnx": "ONNX Runtime", "openvino": "OpenVINO"}
PRECISIONS = ("f32", "bf16", "f16")  # OpenVINO's INFERENCE_PRECISION_HINT


def exported_runner(path: Path, *, threads: int | None = None, uint8: bool = False, precision: str = "f32") -> Runner:
    """A runner for a `.tflite` file (LiteRT interpreter), an `.onnx` file (ONNX Runtime), an OpenVINO `.xml` or
    its `.bin` (OpenVINO Runtime, compiled with `precision` as its INFERENCE_PRECISION_HINT: f32, bf16 or f16) or a
    SavedModel folder (TensorFlow; `uint8` runs its `serving_default` signature instead of `deblur_float32`).
    `threads`: every core by default, as TensorFlow uses them (the LiteRT interpreter would otherwise pick its
    own). A missing file is a MissingFileError, one its runtime cannot load a DeblurError naming both, and a setting
    it cannot use a SettingError; the runner refuses an array a `Deblurrer` refuses (ImageArrayError)."""
    # Each checked here: a wrong thread count or precision had been reported as a file the runtime cannot load.
    path = as_path(path, "the exported model", "model")
    check_threads(threads)
    check_choice("precision", precision, PRECISIONS)
    check_switches(uint8=uint8)
    threads = threads or os.cpu_count() or 1
    exported = "savedmodel" if path.is_dir() else exported_format(path)
    if exported not in RUNTIMES:
        raise SettingError(
            f"{path}: not a SavedModel folder, .tflite, .onnx or OpenVINO .xml file", settings=("model",)
        )
    if exported == "openvino":
        path = path.with_suffix(".xml")  # given its .bin too
    if not path.exists():  # ONNX Runtime's NO_SUCHFILE, or another runtime's own words, had said it
        raise MissingFileError(f"{path}: no such exported model", settings=("model",))
    try:
        if exported == "savedmodel":
            run = _savedmodel(path, uint8)
        elif exported == "litert":
            run = _litert(path, threads)
        elif exported == "onnx":
            run = _onnx(path, threads)
        else:
            run = _openvino(path, threads, precision)
        # The image checked as a Deblurrer checks it: a batch had met the runtime's own words, and uint8 pixels
        # were run as floats of 0-255 without a word.
        return lambda image: run(as_image(image))
    except DeblurError:
        raise
    except Exception as err:  # each runtime raises its own kinds for a file it cannot read
        raise DeblurError(
            f"{path} is not a model {RUNTIMES[exported]} can load ({type(err).__name__}: {error_reason(err)})",
            settings=("model",),
        ) from None


def _savedmodel(path: Path, uint8: bool) -> Runner:
    import tensorflow as tf

    loaded = tf.saved_model.load(str(path))
    if uint8:
        signature = loaded.signatures["serving_default"]
        return lambda image: signature(images=tf.constant(to_uint8(image)[None]))["images"].numpy()[0] / 255.0
    signature = loaded.signatures["deblur_float32"]
    return lambda image: signature(blurry=tf.constant(image[None]))["sharp"].numpy()[0]


def _litert(path: Path, threads: int) -> Runner:
    try:
        from ai_edge_litert.interpreter import Interpreter
    except ImportError:
        raise SettingError("running a .tflite file needs the LiteRT interpreter: pip install ai-edge-litert") from None
    interpreter = Interpreter(str(path), num_threads=threads)
    (source,), (target,) = interpreter.get_input_details(), interpreter.get_output_details()

    def run(image: np.ndarray) -> np.ndarray:
        # Resizing re-plans the interpreter's buffers: only when the size changes.
        if tuple(interpreter.get_input_details()[0]["shape"]) != (1, *image.shape):
            interpreter.resize_tensor_input(source["index"], (1, *image.shape))
            interpreter.allocate_tensors()
        interpreter.set_tensor(source["index"], image[None].astype(np.float32))
        interpreter.invoke()
        return interpreter.get_tensor(target["index"])[0]

    interpreter.allocate_tensors()
    return run


def _onnx(path: Path, threads: int) -> Runner:
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    return lambda image: session.run(None, {name: image[None].astype(np.float32)})[0][0]


def _openvino(path: Path, threads: int, precision: str) -> Runner:
    try:
        import openvino
    except ImportError:
        raise SettingError("running an OpenVINO .xml needs OpenVINO: pip install openvino") from None
    config = {"INFERENCE_PRECISION_HINT": precision, "INFERENCE_NUM_THREADS": threads}
    compiled = openvino.Core().compile_model(str(path), "CPU", config)
    return lambda image: compiled(image[None].astype(np.float32))[0][0]
