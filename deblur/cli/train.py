"""`deblur train`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from deblur.cli.common import LOCAL, reporter
from deblur.config import MIN_PATCH_SIZE, SHIPPED, Precision, Strategy


def train(
    config: Annotated[
        str | None,
        typer.Option(
            "--config",
            "-c",
            help=f"A config file, or a shipped one by name: {', '.join(SHIPPED)}.",
        ),
    ] = None,
    data: Annotated[
        Path | None,
        typer.Option(**LOCAL, help="Dataset folder (GOPRO layout or blur/ + sharp/); default: the embedded demo data."),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            **LOCAL, help="Run folder; an existing run resumes from its latest checkpoint. Default: runs/<time>."
        ),
    ] = None,
    epochs: Annotated[int | None, typer.Option(min=1, help="train.epochs")] = None,
    steps_per_epoch: Annotated[int | None, typer.Option(min=1, help="train.steps_per_epoch")] = None,
    batch_size: Annotated[int | None, typer.Option(min=1, help="data.batch_size, per replica")] = None,
    patch_size: Annotated[int | None, typer.Option(min=MIN_PATCH_SIZE, help="data.patch_size")] = None,
    strategy: Annotated[Strategy | None, typer.Option(help="train.strategy")] = None,
    precision: Annotated[Precision | None, typer.Option(help="train.precision")] = None,
    set_: Annotated[
        list[str] | None,
        typer.Option("--set", help="Override any config key, e.g. --set train.learning_rate=3e-4 (repeatable)."),
    ] = None,
    skip_bad_images: Annotated[
        bool, typer.Option("--skip-bad-images", help="Leave out and count unreadable pairs instead of stopping.")
    ] = False,
    init: Annotated[
        str | None,
        typer.Option(
            parser=_an_init,
            metavar="<str>",
            help="train.init: start from pretrained (the shipped model), latest, or a model.keras.",
        ),
    ] = None,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="No progress bars or epoch lines: the result only.")
    ] = False,
) -> None:
    """Train the deblurring model. With no options: the demo config on the embedded demo data."""
    from deblur.paths import new_run_dir
    from deblur.training.run import train as run_training
    from deblur.training.run import training_config

    flags = {
        "data.root": str(data) if data else None,
        "train.epochs": epochs,
        "train.steps_per_epoch": steps_per_epoch,
        "data.batch_size": batch_size,
        "data.patch_size": patch_size,
        "train.strategy": strategy,
        "train.precision": precision,
        "data.skip_bad_images": "true" if skip_bad_images else None,
        "train.init": init,
    }
    overrides = list(set_ or []) + [f"{key}={value}" for key, value in flags.items() if value is not None]
    result = run_training(
        training_config(config, overrides), out or new_run_dir(), progress=not quiet, log=reporter(quiet)
    )
    if result.metrics:
        last = result.metrics[-1]
        gain = last["val_psnr"] - last["val_psnr_blurry"]
        # No step timed (a finished run run again, or one step): no input wait to give, rather than 0.0%.
        wait = f"; input wait {100 * result.input_wait_fraction:.1f}% of step time" if result.timed_steps > 0 else ""
        typer.echo(
            f"done: {result.step} steps; validation PSNR {last['val_psnr']:.2f} dB vs blurry "
            f"{last['val_psnr_blurry']:.2f} dB ({gain:+.2f} dB){wait}"
        )
    if result.skipped:
        typer.echo(f"skipped {len(result.skipped)} unreadable file(s):")
        for problem in result.skipped:
            typer.echo(f"  - {problem}")
    if result.model_path:
        typer.echo(f"model: {result.model_path}")
        typer.echo(f"try it: {next_command(result.model_path, result.example)}")


def _an_init(value: str) -> str:
    """--init, refused empty here: an unset "$INIT" had been named as the override `train.init=`, not given."""
    if not value.strip():
        raise typer.BadParameter("empty: name pretrained, latest or a model.keras, or leave it out")
    return value


def next_command(model_path: Path, example: Path | None = None) -> str:
    """What to run next on a model just trained, ready to paste: predict on `example`, a blurry photo it never
    trained on (`predict` without --model uses the shipped model, not this one)."""
    import shlex

    from deblur.paths import RUNS_DIR, latest_model

    newest = latest_model(RUNS_DIR)
    which = "latest" if newest is not None and newest.resolve() == model_path.resolve() else str(model_path)
    photo = shlex.quote(str(example)) if example else "PHOTO.jpg"
    name = example.stem if example else "PHOTO"
    where = "a photo it never trained on" if example else "any photo of yours"
    return (
        f"deblur predict --model {which} {photo}  ({where}; writes deblurred/{name}.png; without --model, predict "
        "uses the shipped model)"
    )
