"""`deblur data synth`, `deblur data from-video` and `deblur data check`.

`data synth` offers every blur-recipe key of `SynthConfig` that `SYNTH_HELP` explains as an option of the same
name, typed and defaulted from the dataclass: a new recipe key needs no change here.
"""

from __future__ import annotations

import dataclasses
import inspect
import types
import typing
from pathlib import Path
from typing import Annotated

import typer

from deblur.cli.common import LOCAL, PlainUsage, Quiet, local_path
from deblur.config import SMALLEST_MAX_SIDE, SYNTH_HELP, SynthConfig
from deblur.video.pairs import HIGH_FRAME_RATE, MAX_FRAME_RATE, WindowRecipe  # light: PyAV loads on use

app = typer.Typer(help="Make and check datasets.", no_args_is_help=True)

_BUILT_IN = SynthConfig()
_WINDOWS = WindowRecipe()


def _recipe_options(command):
    """`command` with a keyword option per `SYNTH_HELP` key added to its signature (default None: the recipe's)."""
    hints = typing.get_type_hints(SynthConfig)
    added = []
    for field in dataclasses.fields(SynthConfig):
        if field.name not in SYNTH_HELP:
            continue
        kind = hints[field.name]
        if isinstance(kind, types.UnionType):  # int | None: the option is an int that may be left out
            kind = next(arg for arg in typing.get_args(kind) if arg is not type(None))
        flag = "--" + field.name.replace("_", "-")
        names = (f"{flag}/--no-{flag[2:]}",) if kind is bool else (flag,)
        option = typer.Option(*names, help=SYNTH_HELP[field.name])
        added.append(
            inspect.Parameter(
                field.name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Annotated[kind | None, option]
            )
        )
    # The command's own annotations are strings (postponed evaluation): Typer needs them as objects.
    own_hints = typing.get_type_hints(command, include_extras=True)
    signature = inspect.signature(command)
    own = [
        p.replace(annotation=own_hints[p.name])
        for p in signature.parameters.values()
        if p.kind is not inspect.Parameter.VAR_KEYWORD
    ]
    command.__signature__ = signature.replace(parameters=[*own, *added], return_annotation=None)
    command.__annotations__ = {p.name: p.annotation for p in [*own, *added]}
    return command


@app.command("synth", cls=PlainUsage)
@_recipe_options
def synth(
    src: Annotated[Path, typer.Option(**LOCAL, help="Folder of sharp photos (searched recursively).")],
    out: Annotated[
        Path,
        typer.Option(
            **LOCAL,
            help="New folder for the pairs, in GOPRO's layout. A stopped run goes on from the photos it finished when "
            "the same command is run again.",
        ),
    ],
    config: Annotated[
        str | None,
        typer.Option(
            "--config",
            "-c",
            help="Take the blur recipe (data.synth) from this config, e.g. pretrained; the options "
            f"below override it. Default: the built-in recipe ({_BUILT_IN.blur} blur, {_BUILT_IN.min_length:g}-"
            f"{_BUILT_IN.max_length:g} px, noise {_BUILT_IN.noise:g}, {_BUILT_IN.pairs_per_photo} per photo).",
        ),
    ] = None,
    val_fraction: Annotated[
        float,
        typer.Option(
            min=0.0,
            max=0.99,
            help="Share of the photos held out in test/ for validation (at least one of two or more).",
        ),
    ] = 0.1,
    max_side: Annotated[
        int | None, typer.Option(min=SMALLEST_MAX_SIDE, help="Scale photos down to this longer side first (e.g. 1280).")
    ] = None,
    quiet: Quiet = False,
    **recipe,
) -> None:
    """Make blurry/sharp training pairs from any folder of sharp photos, with random camera-shake blur."""
    from deblur.data.synth import synth_recipe, synthesize_pairs

    report = synthesize_pairs(
        src,
        out,
        synth_recipe(config, **recipe),
        val_fraction=val_fraction,
        max_side=max_side,
        progress=not quiet,
        log=typer.echo,
    )
    typer.echo(f"check it: deblur data check {report.out}; train on it: deblur train --data {report.out}")


@app.command("from-video", cls=PlainUsage)
def from_video(
    source: Annotated[
        Path,
        typer.Argument(
            parser=local_path,
            metavar="CLIP|FOLDER",
            help="A high-frame-rate clip (slow motion), or a folder of its frames.",
        ),
    ],
    out: Annotated[
        Path,
        typer.Option(
            **LOCAL,
            help="New folder for the pairs, in GOPRO's layout. A stopped run goes on from the windows it finished "
            "when the same command is run again.",
        ),
    ],
    min_frames: Annotated[
        int, typer.Option(min=3, help="Fewest frames averaged into one blurry image (odd counts are drawn).")
    ] = _WINDOWS.min_frames,
    max_frames: Annotated[int, typer.Option(min=3, help="Most frames averaged into one.")] = _WINDOWS.max_frames,
    min_motion: Annotated[
        float,
        typer.Option(min=0.0, max=1.0, help="Skip windows whose first and last frames differ less (mean, 0-1)."),
    ] = _WINDOWS.min_motion,
    val_fraction: Annotated[
        float,
        typer.Option(
            min=0.0,
            max=0.99,
            help="Share of the windows, the last in time, held out in test/ (at least one of three or more).",
        ),
    ] = _WINDOWS.val_fraction,
    seed: Annotated[int, typer.Option(help="Makes the window lengths reproducible.")] = _WINDOWS.seed,
    fps: Annotated[
        float | None,
        typer.Option(
            min=1.0,
            max=MAX_FRAME_RATE,
            help=f"The frame rate of a folder of frames, or in place of a clip's own where its slow motion was "
            f"stored to play at 30 fps (checked against {HIGH_FRAME_RATE}).",
        ),
    ] = None,
    quiet: Quiet = False,
) -> None:
    """Make real blurry/sharp pairs from a slow-motion clip, as GOPRO was made.

    Consecutive frames are averaged in linear light into a blurry image; the middle one is the sharp image."""
    from deblur.video.pairs import pairs_from_video

    recipe = WindowRecipe(min_frames, max_frames, min_motion, val_fraction, seed)
    report = pairs_from_video(source, out, recipe, fps=fps, progress=not quiet, log=typer.echo)
    typer.echo(report.summary())
    typer.echo(f"check it: deblur data check {out}; fine-tune on it: deblur train --init pretrained --data {out}")


@app.command("check", cls=PlainUsage)
def check(
    root: Annotated[
        Path,
        typer.Argument(parser=local_path, metavar="DIR", help="Dataset folder: GOPRO layout or blur/ + sharp/."),
    ],
    patch_size: Annotated[
        int | None, typer.Option(min=8, help="Also flag training images smaller than this (e.g. 256).")
    ] = None,
    deep: Annotated[
        bool, typer.Option("--deep", help="Decode every image fully (finds truncated files; slower).")
    ] = False,
    quiet: Quiet = False,
) -> None:
    """Check a dataset as deblur train would, and print a summary: pairs, sizes, every problem."""
    from deblur.data.check import format_summary, summarize

    summary = summarize(root, patch_size, deep=deep, progress=not quiet)
    typer.echo(format_summary(summary))
    if not summary.ok:
        raise typer.Exit(1)
