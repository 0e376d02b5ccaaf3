"""`deblur serve`."""

from __future__ import annotations

from typing import Annotated

import typer

from deblur.cli.common import MODEL_HELP, Estimates, MethodOption
from deblur.config import InferencePrecision
from deblur.runtime import DEFAULT_RUNTIME, RUNTIME_HELP, Runtime
from deblur.serve.limits import Limits
from deblur.ways import DEFAULT_METHOD

DEFAULTS = Limits()
# A terabyte: an upload limit beyond it is none, and `inf` (which the bare min= lets through) had been an
# OverflowError's traceback when made bytes.
MAX_MB = 2**20


def serve(
    model: Annotated[str | None, typer.Option(help=MODEL_HELP)] = None,
    host: Annotated[
        str, typer.Option(help="Address to listen on; 0.0.0.0 lets other machines in (no login: it warns).")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port to listen on (0: any free port).")] = 8000,
    precision: Annotated[InferencePrecision, typer.Option(help="As for predict.")] = "auto",
    runtime: Annotated[Runtime, typer.Option(help=RUNTIME_HELP)] = DEFAULT_RUNTIME,
    method: MethodOption = DEFAULT_METHOD,
    estimates: Estimates = None,
    queue: Annotated[
        int, typer.Option(min=0, help="Requests that may wait behind the one being deblurred; beyond: 503.")
    ] = DEFAULTS.waiting,
    max_upload_mb: Annotated[
        float, typer.Option(min=0.001, max=MAX_MB, help="Refuse larger uploads (413).")
    ] = DEFAULTS.max_bytes / 2**20,
    max_pixels: Annotated[
        int,
        typer.Option(
            min=1,
            help="Refuse larger images from their header (a decompression-bomb guard). Lower than predict's 200 "
            "million: anyone who reaches the server chooses what it holds in memory; 50 million keep it under "
            "about 6 GB.",
        ),
    ] = DEFAULTS.max_pixels,
    max_video_mb: Annotated[
        float, typer.Option(min=0.001, max=MAX_MB, help="Refuse larger video uploads (413).")
    ] = DEFAULTS.max_video_bytes / 2**20,
    max_video_seconds: Annotated[
        float, typer.Option(min=0.1, help="Refuse longer clips (413): a video job runs for about this x 10-100.")
    ] = DEFAULTS.max_video_seconds,
    cors_origin: Annotated[
        list[str] | None,
        typer.Option(help="Let pages from this origin call the API, e.g. http://localhost:3000 (repeatable)."),
    ] = None,
    allow_host: Annotated[
        list[str] | None,
        typer.Option(
            help="Also answer requests addressed to this host name (repeatable; * for any), as behind a proxy or on "
            "a name in your DNS. Without it, only localhost, IP addresses and --host are answered: a web page cannot "
            "reach the server by pointing its own name at this machine (DNS rebinding).",
        ),
    ] = None,
    show_paths: Annotated[
        bool,
        typer.Option(
            "--show-paths", help="Also tell visitors (page and /v1/model) the model file's path on this machine."
        ),
    ] = False,
) -> None:
    """Serve a web page and an HTTP API that deblur photos and clips.

    One process: the page to deblur photos and clips in the browser, and the API it uses (a clip is a job)."""
    from deblur.serve.server import serve as run_server

    limits = Limits(
        max_bytes=round(max_upload_mb * 2**20),
        max_pixels=max_pixels,
        waiting=queue,
        max_video_bytes=round(max_video_mb * 2**20),
        max_video_seconds=max_video_seconds,
    )
    origins = tuple(cors_origin or ())
    run_server(
        model,
        host=host,
        port=port,
        precision=precision,
        runtime=runtime,
        method=method,
        estimates=estimates,
        limits=limits,
        cors_origins=origins,
        allowed_hosts=tuple(allow_host or ()),
        show_paths=show_paths,
        log=typer.echo,
    )
