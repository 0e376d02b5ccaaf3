"""The `deblur` command line: each command parses its options, calls one library function, prints the result.

One module a command (train.py, predict.py, ...; data.py holds the `data` group); this one builds the app, with the
one handler for user errors, and registers them.
"""

from __future__ import annotations

import os
import platform
from typing import Annotated

import typer
from typer.core import TyperGroup

from deblur import __version__
from deblur.cli import data, evaluate, export, predict, serve, timings, train
from deblur.cli.common import PlainUsage, fail, user_message
from deblur.cli.stopping import stop_cleanly
from deblur.console import hide_native_noise
from deblur.errors import DeblurError, full_disk_message

# TensorFlow's C++ INFO and WARNING lines drown the command's own output; set the variable to see them.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


class Commands(TyperGroup):
    """Runs every command inside the one handler for user errors: a `DeblurError` becomes one line on stderr and
    its exit code, and so does a full disk (exit 1) and a stop (exit 130); anything else is a bug and shows its
    traceback. An option's bad value keeps Click's message, without the "Value error, " that Typer's pydantic
    validation puts before it (plumbing, not information)."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except DeblurError as err:
            raise fail(user_message(err), err.exit_code) from None
        except OSError as err:
            if (message := full_disk_message(err)) is None:
                raise
            raise fail(message) from None
        except typer.BadParameter as err:
            err.message = err.message.removeprefix("Value error, ")
            raise
        except KeyboardInterrupt:
            # Ctrl-C or SIGTERM before a command's work began (its model loading, its inputs planned): Typer ended
            # it with exit 130 and no word. The commands that write say what they kept; what deblur writes appears
            # only whole, so nothing was written here.
            raise fail("stopped: nothing was written", 130) from None


app = typer.Typer(
    cls=Commands,
    help="Deblur photos with a DeblurGAN-style CNN, and measure what each training optimization buys.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # Click's plain help: Typer's rich panels label every flag <bool>, --help included.
    rich_markup_mode=None,
)
for command in (train.train, predict.predict, timings.timings, evaluate.evaluate, export.export, serve.serve):
    app.command(cls=PlainUsage)(command)
app.add_typer(data.app, name="data")


def _show_version(asked: bool) -> None:
    if asked:  # what a bug report needs first; light: no TensorFlow
        typer.echo(f"deblur {__version__} (Python {platform.python_version()})")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_show_version, is_eager=True, help="Show deblur's version and exit."),
    ] = False,
) -> None:
    """Deblur photos with a DeblurGAN-style CNN, and measure what each training optimization buys."""


def run() -> None:
    """The `deblur` command: the app, with TensorFlow's native start-up lines filtered from the terminal."""
    hide_native_noise()
    stop_cleanly()
    app(prog_name="deblur")
