"""`deblur timings`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from deblur.cli.common import LOCAL, Quiet
from deblur.config import MIN_PATCH_SIZE, TimingsPreset


def timings(
    preset: Annotated[
        TimingsPreset,
        typer.Option(help="quick: 128x128 patches, 16 timed steps (minutes on a CPU); paper: the article's setup."),
    ] = "quick",
    out: Annotated[Path, typer.Option(**LOCAL, help="Folder for timings.json and timings.png.")] = Path("timings"),
    data: Annotated[
        Path | None,
        typer.Option(**LOCAL, help="Dataset folder (GOPRO layout or blur/ + sharp/); default: the demo data."),
    ] = None,
    stages: Annotated[
        str | None,
        typer.Option(
            help="Comma-separated subset: keras-sequence, tf.data, tf.data-optimized, mixed-precision, multi-gpu, "
            "xla, steps-per-call (under KERAS_BACKEND=jax: keras-sequence, read-ahead, mixed-bfloat16, "
            "mixed-float16, multi-gpu, larger-batch). Each keeps the optimizations of the stages before it."
        ),
    ] = None,
    config: Annotated[
        str | None,
        typer.Option("--config", "-c", help="Config whose model (and data) to time; default: gopro's model."),
    ] = None,
    steps: Annotated[int | None, typer.Option(min=1, help="Timed steps per stage (overrides the preset).")] = None,
    warmup: Annotated[int | None, typer.Option(min=1, help="Untimed warm-up steps per stage.")] = None,
    patch_size: Annotated[
        int | None, typer.Option(min=MIN_PATCH_SIZE, help="Patch side (overrides the preset).")
    ] = None,
    batch_size: Annotated[int | None, typer.Option(min=1, help="Batch per replica (overrides the preset).")] = None,
    pipeline_only: Annotated[
        bool, typer.Option("--pipeline-only", help="Only time the loaders, without the model.")
    ] = False,
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Replace timings.json and timings.png in --out.")
    ] = False,
    quiet: Quiet = False,
) -> None:
    """Time each training optimization in turn (the staged chart).

    Writes a table, timings.json and timings.png: the article's staged chart, measured on this machine."""
    from deblur.timings.run import timings as run_timings
    from deblur.timings.table import loader_table, stage_table

    report = run_timings(
        preset,
        out,
        config=config,
        data=data,
        stages=stages,
        steps=steps,
        warmup=warmup,
        patch_size=patch_size,
        batch_size=batch_size,
        pipeline_only=pipeline_only,
        overwrite=overwrite,
        progress=not quiet,
        log=typer.echo,
    )
    typer.echo("")
    if report.stages:
        typer.echo(stage_table(report))
        typer.echo("")
    typer.echo(loader_table(report))
    typer.echo(f"\nwrote {out / 'timings.json'} and {out / 'timings.png'}")
