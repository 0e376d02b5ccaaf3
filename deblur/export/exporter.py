"""`deblur export`: check the request, load the model, hand it to one format's adapter, write atomically."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, get_args

from deblur.errors import OutputExistsError, SettingError, check_choice, check_switches, given_log
from deblur.files import as_path, atomic_dir, atomic_path, check_parent, refuse_existing
from deblur.paths import EXPORT_SUFFIXES, exported_format

ExportFormat = Literal["savedmodel", "litert", "onnx", "openvino"]
Quantization = Literal["int8"]
RUN_HINTS = {
    "savedmodel": "tf.saved_model.load(path).signatures['serving_default'](images=uint8 NHWC batch)['images']; "
    "TF Serving: model_base_path=<folder holding it>/, version folder 1/",
    "litert": "ai_edge_litert.interpreter.Interpreter(path): resize_tensor_input to [1, H, W, 3], float32 in [0, 1]",
    "onnx": "onnxruntime.InferenceSession(path).run(None, {'blurry': float32 NHWC batch in [0, 1]})[0]",
    "openvino": "openvino.Core().compile_model(path, 'CPU', {'INFERENCE_PRECISION_HINT': 'bf16'})(float32 NHWC "
    "batch in [0, 1])[0] (the .bin beside it; 'f32' on CPUs without native bfloat16)",
}


# What the exported kernel-aware network takes: the kernel path runs beside it, in NumPy and SciPy.
KERNEL_AWARE_INPUT = (
    "a kernel-aware model takes 6 channels, the photo's and then those of its deconvolution, "
    "deblur.shake.restore.deconvolved(photo)"
)


@dataclass(frozen=True)
class ExportRequest:
    """What to write. Checked on construction, before any slow work."""

    fmt: str
    out: str | Path  # made a Path
    overwrite: bool = False
    float16: bool = False  # litert: float16 weights
    quantize: str | None = None  # "int8": onnx calibrated static int8 on the residual blocks; litert int8 weights
    calibration: str | Path | None = None  # onnx int8: a folder of blurry photos; default: the demo data's; a Path

    def __post_init__(self) -> None:
        # Strings from Python, as every other function takes paths: they had ended on AttributeError ... 'suffix'.
        object.__setattr__(self, "out", as_path(self.out, "the export's out", "out"))
        if self.calibration is not None:
            object.__setattr__(self, "calibration", as_path(self.calibration, "the calibration folder", "calibration"))
        check_switches(overwrite=self.overwrite, float16=self.float16)
        check_choice("format", self.fmt, get_args(ExportFormat))
        if self.quantize is not None and self.quantize not in get_args(Quantization):
            raise SettingError(f"quantize must be int8; got {self.quantize!r}", settings=("quantize",))
        if self.float16 and self.fmt != "litert":
            raise SettingError("float16 weights are offered for litert only", settings=("float16", "format"))
        if self.float16 and self.quantize:
            raise SettingError("choose float16 or int8 weights, not both", settings=("float16", "quantize"))
        if self.quantize and self.fmt == "savedmodel":
            raise SettingError("int8 is offered for litert and onnx, not savedmodel", settings=("quantize", "format"))
        if self.calibration is not None and not (self.fmt == "onnx" and self.quantize):
            raise SettingError(
                "calibration photos are used by onnx int8 only (litert int8 quantizes weights, with no calibration)",
                settings=("calibration",),
            )
        suffix = EXPORT_SUFFIXES.get(self.fmt)
        if suffix and self.out.suffix.lower() != suffix:
            raise SettingError(f"{self.fmt} files are named *{suffix}: {self.out}", settings=("out",))
        named = "a Keras model" if self.out.suffix.lower() == ".keras" else exported_format(self.out)
        if not suffix and named:  # a folder named m.onnx: --format forgotten?
            raise SettingError(
                f"savedmodel writes a folder, and {self.out} is named as a file for {named}",
                settings=("out", "format"),
            )


@dataclass(frozen=True)
class ExportReport:
    path: Path
    fmt: str
    model: str  # which model was exported, as the user is told
    bytes: int
    variant: str  # float32, float16 weights, int8 ...
    hint: str  # how to run it


def export_model(
    request: ExportRequest,
    *,
    model: str | Path | None = None,
    log: Callable[[str], None] = print,
    progress: bool = True,
) -> ExportReport:
    """Export a trained deblurrer (`model` as `deblur.paths.choose_model` takes it; default the shipped one);
    `progress`: a bar over int8 calibration."""
    if not isinstance(request, ExportRequest):  # a format's name had ended on AttributeError: ... 'out'
        raise SettingError(
            f"request must be an ExportRequest, not {type(request).__name__}: deblur.ExportRequest(format, out) "
            "names the format and the file",
            settings=("format",),
        )
    check_switches(progress=progress)  # "no" had drawn the calibration's bar: a string is true
    log = given_log(log)
    from deblur.inference import open_deblurrer
    from deblur.model import is_kernel_aware
    from deblur.paths import choose_model

    chosen = choose_model(model)
    _check_out(request, chosen.path)  # before the slow load
    # method network: the model file as it is, with no word of the ways of deblurring that run beside it
    keras_model = open_deblurrer(chosen, precision="float32", runtime="tensorflow", method="network", log=log)[0].model
    hint = RUN_HINTS[request.fmt]
    if is_kernel_aware(keras_model):
        if request.quantize == "int8" and request.fmt == "onnx":
            raise SettingError(
                f"{chosen.path} is kernel-aware: int8 calibrates on photos alone, and its input is a photo and its "
                "deconvolution; export it in float32",
                settings=("quantize",),
            )
        hint += f"; {KERNEL_AWARE_INPUT}"
    calibration = None
    if request.fmt == "onnx" and request.quantize:
        from deblur.export.calibration import calibration_patches

        calibration = calibration_patches(request.calibration)
        source = request.calibration or "the demo data's blurry images"
        log(f"calibrating int8 on {len(calibration)} patches of {source}")
    log(f"exporting to {request.fmt} ({_variant(request)}): {request.out}")
    _write(request, keras_model, calibration, progress)
    return ExportReport(request.out, request.fmt, chosen.description, _size(request.out), _variant(request), hint)


def _check_out(request: ExportRequest, model_path: Path) -> None:
    out = request.out
    check_parent(out, "out")
    given = model_path.resolve()
    if out.resolve() in (given, given.parent) or given.is_relative_to(out.resolve()):
        raise SettingError(f"{out} would overwrite the model being exported; choose another --out", settings=("out",))
    weights = out.with_suffix(".bin") if request.fmt == "openvino" else None
    for target in (weights, out) if weights else (out,):
        refuse_existing(target, overwrite=request.overwrite, settings=("out", "overwrite"))
    if not out.exists():
        return
    if request.fmt == "savedmodel" and not (out / "saved_model.pb").is_file():
        raise OutputExistsError(f"{out} exists and is not a SavedModel folder: not replacing it", settings=("out",))
    if request.fmt != "savedmodel" and not out.is_file():
        raise OutputExistsError(f"{out} exists and is not a file: not replacing it", settings=("out",))


def _write(request: ExportRequest, model, calibration, progress: bool) -> None:
    if request.fmt == "savedmodel":
        from deblur.export.savedmodel import export_savedmodel

        with atomic_dir(request.out, replace=request.overwrite) as folder:
            folder.rmdir()  # the SavedModel writer makes the folder itself
            export_savedmodel(model, folder)
        return
    if request.fmt == "openvino":
        from deblur.export.openvino import export_openvino

        export_openvino(model, request.out)  # two files, each put in place whole
        return
    with atomic_path(request.out, suffix=request.out.suffix) as tmp:
        if request.fmt == "litert":
            from deblur.export.litert import export_litert

            export_litert(model, tmp, float16=request.float16, int8_weights=request.quantize == "int8")
        else:
            from deblur.export.onnx import export_onnx

            export_onnx(model, tmp, calibration=calibration, progress=progress)


def _variant(request: ExportRequest) -> str:
    if request.float16:
        return "float16 weights"
    if request.quantize and request.fmt == "litert":
        return "int8 weights, float32 activations"
    if request.quantize:
        return "int8 residual blocks, calibrated"
    return "float32"


def _size(path: Path) -> int:
    if path.suffix == ".xml" and path.with_suffix(".bin").is_file():  # OpenVINO: the weights beside it
        return path.stat().st_size + path.with_suffix(".bin").stat().st_size
    if path.is_file():
        return path.stat().st_size
    return sum(item.stat().st_size for item in path.rglob("*") if item.is_file())
