"""What the commands share: how a user error is shown, and the help of options several commands take."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer
from typer.core import TyperCommand

from deblur.console import Hint
from deblur.errors import DeblurError, SettingError
from deblur.hardware import check_keras_backend_variable
from deblur.shake.tries import ESTIMATES, MOST_ESTIMATES
from deblur.strength import MAX_STRENGTH
from deblur.ways import METHOD_HELP, check_method

ENSEMBLE_HELP = (
    "Deblur 1, 2, 4 or 8 mirrored/turned copies of each image through the network and average them: a little "
    "sharper and safer on mild blur, at that many times the network's time (--method kernel runs no network)."
)
ESTIMATES_HELP = (
    f"Camera-shake estimates tried per photo by the kernel-aware and kernel ways, 1 to {MOST_ESTIMATES} (default "
    f"{ESTIMATES}; --method network estimates none): more try "
    "other edge weights side by side and keep the one whose deconvolution is sharpest. On long shake it sometimes "
    "finds the kernel the first missed. On 2 cores (1280x720) 2 take about 1.3x the kernel way's time of 1 and 1.2x "
    "the default's; 3 about 2.5x and 1.5x."
)
MODEL_HELP = (
    "A model.keras; 'latest': the model you trained last (deblur train notes it; or a newer runs/*/model.keras "
    "here); default: the pretrained model shipped with deblur (in a copy without one, the newest run)."
)
STRENGTH_HELP = (
    f"How much of the model's change to keep, in percent (0 to {100 * MAX_STRENGTH:.0f}): 0 gives the input back, "
    "100 the model's output, more pushes further (see docs/predict.md for what it does to fidelity)."
)

Estimates = Annotated[int | None, typer.Option(min=1, max=MOST_ESTIMATES, help=ESTIMATES_HELP)]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bars.")]


def _a_way(method: str) -> str:
    """--method checked as the library checks it, so that a retired way's refusal names the default."""
    try:
        check_method(method)
    except SettingError as err:
        raise typer.BadParameter(str(err)) from None
    return method


def local_path(value: str | Path) -> Path:
    """A file or folder on this machine. As a path, "s3://bucket/x" is s3:/bucket/x: the command would write a
    folder named "s3:" here, or call the input missing. Only predict's Ray engine reads and writes URLs."""
    if "://" in str(value):
        raise typer.BadParameter(
            f"{value} is a URL; give a path on this machine (only `deblur predict --engine ray` reads and writes URLs)"
        )
    if not str(value).strip():  # an unset variable in a script ("$DIR"): Path("") is ".", meant by nobody
        raise typer.BadParameter("an empty path: name a file or folder")
    return Path(value)


# Every path option but predict's, which takes URLs with --engine ray (arguments: parser=local_path).
LOCAL = {"parser": local_path, "metavar": "<path>"}  # as Typer shows a Path option

# predict, evaluate and serve: a way of deblurring (`deblur.ways`).
MethodOption = Annotated[str, typer.Option("--method", help=METHOD_HELP, callback=_a_way, metavar="METHOD")]
# predict and evaluate: only what was written or measured, and errors.
QuietNotes = Annotated[
    bool, typer.Option("--quiet", "-q", help="No progress bars, notes or hints: results and errors only.")
]


def reporter(quiet: bool) -> Callable[[str], None]:
    """The log a command hands the library: nothing under --quiet; otherwise notes on stdout and hints
    (`deblur.console.Hint`) on stderr, so that they never mix with what a script reads."""

    def log(message: str) -> None:
        if not quiet:
            typer.echo(message, err=isinstance(message, Hint))

    return log


class PlainUsage(TyperCommand):
    """The usage line as the docs write it, `deblur predict [OPTIONS] INPUT...`: Typer 0.29 wraps a required
    argument in braces (`{inputs}...`), which reads as a set to fill in."""

    def collect_usage_pieces(self, ctx) -> list[str]:
        return [re.sub(r"^\{(.+)\}", r"\1", piece) for piece in super().collect_usage_pieces(ctx)]

    def invoke(self, ctx):
        check_keras_backend_variable()  # here, after the options are read: --help needs no backend
        return super().invoke(ctx)


def user_message(err: DeblurError) -> str:
    """The library's message, with the flags of the settings it concerns (an environment variable, KERAS_BACKEND,
    as it is set)."""
    flags = ", ".join(s if s.isupper() else "--" + s.replace("_", "-") for s in err.settings)
    return f"{err} ({flags})" if flags else str(err)


def fail(message: str, code: int = 1) -> typer.Exit:
    typer.secho(f"error: {message}", fg=typer.colors.RED, err=True)
    return typer.Exit(code)


def percent(value: float) -> float:
    """A percentage from the command line as the fraction the library takes."""
    return value / 100.0
