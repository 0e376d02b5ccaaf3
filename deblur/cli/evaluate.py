"""`deblur evaluate`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from deblur.cli.common import (
    ENSEMBLE_HELP,
    LOCAL,
    MODEL_HELP,
    Estimates,
    MethodOption,
    QuietNotes,
    local_path,
    reporter,
)
from deblur.config import EvaluationSplit, InferencePrecision
from deblur.runtime import DEFAULT_RUNTIME, RUNTIME_HELP, Runtime
from deblur.ways import DEFAULT_METHOD


def evaluate(
    data: Annotated[
        Path | None,
        typer.Argument(
            parser=local_path,
            metavar="DATA",
            help="Dataset folder (GOPRO layout or blur/ + sharp/), as `data check` takes it.",
        ),
    ] = None,
    data_option: Annotated[
        Path | None,
        typer.Option("--data", **LOCAL, hidden=True, help="The dataset folder, as earlier versions took it."),
    ] = None,
    model: Annotated[str | None, typer.Option(help=MODEL_HELP)] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            **LOCAL,
            help="Also write the results as JSON to this file; a stopped run then goes on from the pairs it scored.",
        ),
    ] = None,
    split: Annotated[
        EvaluationSplit,
        typer.Option(help="Which pairs: auto is the held-out split where the data has one (GOPRO's test/), else all."),
    ] = "auto",
    limit: Annotated[int | None, typer.Option(min=1, help="Score at most this many pairs.")] = None,
    baselines: Annotated[bool, typer.Option(help="Also score classical deblurring (slower).")] = True,
    align: Annotated[
        bool,
        typer.Option(
            "--align",
            help="Also score each method at its best shift within 5 px, in quarter pixels (Levin et al.'s protocol "
            "for blind deblurring, whose result is known only up to a shift).",
        ),
    ] = False,
    precision: Annotated[InferencePrecision, typer.Option(help="As for predict.")] = "auto",
    runtime: Annotated[Runtime, typer.Option(help=RUNTIME_HELP)] = DEFAULT_RUNTIME,
    method: MethodOption = DEFAULT_METHOD,
    ensemble: Annotated[int, typer.Option(help=ENSEMBLE_HELP)] = 1,
    estimates: Estimates = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace an existing --out file.")] = False,
    quiet: QuietNotes = False,
) -> None:
    """Score a model on pairs: PSNR and SSIM, per image and mean.

    Full images, against the blurry input and classical deblurring."""
    from deblur.evaluation.evaluate import evaluate_model
    from deblur.evaluation.table import results_table

    if data is None and data_option is None:
        raise typer.BadParameter(
            "give the folder of pairs to score: GOPRO's layout or blur/ + sharp/ (deblur data synth makes one)",
            param_hint="DATA",
        )
    if data is not None and data_option is not None:
        raise typer.BadParameter("give the dataset folder once: deblur evaluate DATA", param_hint="DATA")
    data = data or data_option

    report = evaluate_model(
        model,
        data,
        split=split,
        limit=limit,
        precision=precision,
        runtime=runtime,
        method=method,
        ensemble=ensemble,
        estimates=estimates,
        baselines=baselines,
        align=align,
        out=out,
        overwrite=overwrite,
        progress=not quiet,
        log=reporter(quiet),
    )
    typer.echo(results_table(report))
    if out is not None:
        typer.echo(f"wrote {out}")
