"""`deblur export`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from deblur.cli.common import LOCAL, MODEL_HELP
from deblur.export.exporter import ExportFormat, Quantization  # light: the choices only


def export(
    out: Annotated[
        Path,
        typer.Option(
            **LOCAL,
            help="Where to write: a folder for savedmodel (e.g. serving/deblur/1), a .tflite, .onnx or .xml file "
            "(openvino: its .bin beside it).",
        ),
    ],
    fmt: Annotated[
        ExportFormat,
        typer.Option(
            "--format", help="savedmodel (TF Serving), litert (.tflite), onnx (ONNX Runtime) or openvino (OpenVINO IR)."
        ),
    ],
    model: Annotated[str | None, typer.Option(help=MODEL_HELP)] = None,
    float16: Annotated[bool, typer.Option("--float16", help="litert: store the weights as float16.")] = False,
    quantize: Annotated[
        Quantization | None,
        typer.Option(help="int8: onnx, the residual blocks quantized and calibrated on photos; litert, int8 weights."),
    ] = None,
    calibration: Annotated[
        Path | None,
        typer.Option(
            **LOCAL, help="onnx --quantize int8: a folder of blurry photos to calibrate on; default: the demo's."
        ),
    ] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace an existing --out.")] = False,
) -> None:
    """Export a model for TF Serving, LiteRT, ONNX Runtime or OpenVINO.

    SavedModel for TF Serving, a .tflite file for LiteRT, an .onnx file for ONNX Runtime, or an OpenVINO IR
    (.xml and .bin)."""
    from deblur.export.exporter import ExportRequest, export_model

    request = ExportRequest(
        fmt=fmt, out=out, overwrite=overwrite, float16=float16, quantize=quantize, calibration=calibration
    )
    report = export_model(request, model=model, log=typer.echo)
    typer.echo(f"wrote {report.path} ({report.fmt}, {report.variant}, {report.bytes / 1e6:.1f} MB)")
    typer.echo(f"run it: {report.hint}")
