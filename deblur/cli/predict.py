"""`deblur predict`: its options, grouped as `deblur.settings` groups them, the progress bars it draws, and what it
prints of each engine's report."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from deblur.cli.common import (
    ENSEMBLE_HELP,
    MODEL_HELP,
    STRENGTH_HELP,
    Estimates,
    MethodOption,
    QuietNotes,
    fail,
    percent,
    reporter,
    user_message,
)
from deblur.config import InferencePrecision
from deblur.console import Hint, progress_bar
from deblur.imageio import DEFAULT_MAX_PIXELS, DEFAULT_QUALITY, WriteFormat, expand_patterns, raw_files
from deblur.runtime import DEFAULT_RUNTIME, RUNTIME_HELP, Runtime
from deblur.scale import ENGINE_HELP
from deblur.settings import (
    DEFAULT_OUT,
    WORKER_CPUS,
    DeblurSettings,
    Engine,
    PredictSettings,
    ReadSettings,
    RunSettings,
    WriteSettings,
)
from deblur.strength import DEFAULT_STRENGTH, MAX_STRENGTH
from deblur.tiling import DEFAULT_OVERLAP, DEFAULT_TILE, GRID
from deblur.video.encode import DEFAULT_CRF, MAX_CRF, Codec, Encoding  # light: PyAV loads on use
from deblur.ways import DEFAULT_METHOD

# === What to read ===
Inputs = Annotated[
    list[str],
    typer.Argument(
        metavar="INPUT",
        help="Photos, video clips and folders of them (searched recursively); with --engine, also URLs (s3://, "
        "gs://) of photos and folders of them.",
    ),
]
MaxPixels = Annotated[
    int,
    typer.Option(
        min=1,
        help="Refuse larger images and frames, from their header (a decompression-bomb guard for your own files; "
        "serve's own limit is lower, as strangers send what it holds in memory).",
    ),
]
# === How to deblur ===
Model = Annotated[str | None, typer.Option(help=MODEL_HELP)]
Precision = Annotated[
    InferencePrecision,
    typer.Option(help="auto: bfloat16 on CPUs with native support (needs the run's config.yaml), else float32."),
]
RuntimeOption = Annotated[Runtime, typer.Option(help=RUNTIME_HELP)]
Tile = Annotated[
    int, typer.Option(min=8 * GRID, help=f"Largest tile side, a multiple of {GRID}, for images over a megapixel.")
]
Overlap = Annotated[int, typer.Option(min=0, help="Pixels shared by neighbouring tiles, blended.")]
Ensemble = Annotated[int, typer.Option(help=ENSEMBLE_HELP)]
Strength = Annotated[float, typer.Option(min=0.0, max=100 * MAX_STRENGTH, help=STRENGTH_HELP)]
# === How to write ===
Out = Annotated[
    str,
    typer.Option(
        help="Output folder; <name>.<format> per photo, <name>.mp4 (.mkv, .mov kept) per clip. With --engine, "
        "also a URL (s3://, gs://) for photos."
    ),
]
Format = Annotated[
    WriteFormat,
    typer.Option(
        "--format",
        help="Output format of photos (HEIC and AVIF photos are read, and written as this). 16 bits are kept in "
        "png and tiff; transparency in png, webp and tiff (flattened onto white in jpg and bmp).",
    ),
]
Quality = Annotated[
    int | None,
    typer.Option(min=1, max=100, help=f"JPEG and WebP quality of photos, 1 to 100. Default: {DEFAULT_QUALITY}."),
]
StripMetadata = Annotated[
    bool,
    typer.Option(
        "--strip-metadata",
        help="Leave out the photos' EXIF (camera, date, GPS place) and ICC colour profile, which are otherwise "
        "kept in png, jpg, webp and tiff, and the clips' tags (recording time and place, title, camera).",
    ),
]
KeepExtension = Annotated[
    bool,
    typer.Option(
        "--keep-extension",
        help="Keep each input's extension in its output's name (photo.webp -> photo.webp.png), so that inputs "
        "differing only by it do not clash.",
    ),
]
SideBySide = Annotated[
    bool,
    typer.Option(
        "--side-by-side",
        help="Also write <name>_side_by_side of each photo and clip: blurry | deblurred.",
    ),
]
Overwrite = Annotated[bool, typer.Option("--overwrite", help="Replace existing outputs.")]
CodecOption = Annotated[
    Codec, typer.Option(help="Video codec of clips: h264 plays everywhere; h265, vp9, av1 are smaller.")
]
Crf = Annotated[
    int | None,
    typer.Option(
        min=0,
        max=max(MAX_CRF.values()),  # each codec's own limit is checked by Encoding
        help="Video quality, lower is better: the codec's constant rate factor. Default: visually lossless ("
        + ", ".join(f"{name} {value}" for name, value in DEFAULT_CRF.items())
        + ").",
    ),
]
# === How to run ===
EngineOption = Annotated[Engine | None, typer.Option(help=ENGINE_HELP)]
Workers = Annotated[
    int | None,
    typer.Option(min=1, help="With --engine: worker processes, each with its model. Default: one a CPU here."),
]
WorkerCpus = Annotated[int, typer.Option(min=1, help="With --engine: CPUs (threads) for each worker's model.")]
Address = Annotated[
    str | None,
    typer.Option(
        help="With --engine ray: the Ray cluster to run on (ray://host:10001, or auto). Default: a local Ray."
    ),
]


def predict(
    inputs: Inputs,
    model: Model = None,
    out: Out = DEFAULT_OUT,
    fmt: Format = "png",
    quality: Quality = None,
    strip_metadata: StripMetadata = False,
    keep_extension: KeepExtension = False,
    codec: CodecOption = Encoding.codec,
    crf: Crf = None,
    tile: Tile = DEFAULT_TILE,
    overlap: Overlap = DEFAULT_OVERLAP,
    ensemble: Ensemble = 1,
    strength: Strength = 100 * DEFAULT_STRENGTH,
    side_by_side: SideBySide = False,
    overwrite: Overwrite = False,
    precision: Precision = "auto",
    runtime: RuntimeOption = DEFAULT_RUNTIME,
    method: MethodOption = DEFAULT_METHOD,
    estimates: Estimates = None,
    max_pixels: MaxPixels = DEFAULT_MAX_PIXELS,
    engine: EngineOption = None,
    workers: Workers = None,
    worker_cpus: WorkerCpus = WORKER_CPUS,
    address: Address = None,
    quiet: QuietNotes = False,
) -> None:
    """Deblur photos of any size, and video clips: by default the kernel-aware network over each photo's deconvolution.

    Clips go through the network and keep their size, frame count, timestamps, rotation, audio and subtitles; a run
    that is stopped goes on from its last finished segment when the same command is run again."""
    settings = PredictSettings(
        ReadSettings(tuple(expand_patterns(inputs)), max_pixels),
        DeblurSettings(model, method, precision, runtime, tile, overlap, ensemble, percent(strength), estimates),
        WriteSettings(out, fmt, quality, strip_metadata, keep_extension, side_by_side, overwrite, Encoding(codec, crf)),
        RunSettings(engine, workers, worker_cpus, address),
    )
    log = reporter(quiet)
    if 0 < strength <= MAX_STRENGTH:  # the library's fraction, given where the command line takes percent
        log(Hint(f"--strength is in percent: {strength:g} keeps {strength:g}% of the model's change (100: all of it)"))
    if engine is not None:
        from deblur.scale.run import predict_at_scale

        failed = print_scaled(predict_at_scale(settings, progress=not quiet, log=log), settings.write, log)
    else:
        from deblur.predict import deblur_photos

        bars = ProgressBars(quiet)
        try:
            report = deblur_photos(settings, progress=bars, log=log)
        finally:
            bars.close()
        failed = print_report(report, settings.write, log)
    if failed:
        raise typer.Exit(1)


LOST = {  # what is said of the photos whose output format could not hold all of them (deblur.imageio.lost_in)
    "transparency": "had transparency, which {fmt} cannot hold: flattened onto white (png, webp and tiff keep it)",
    "depth": "had 16 bits a channel, which {fmt} holds 8 of: written in 8 bits (png and tiff keep 16)",
}


def print_report(report, write: WriteSettings, log) -> bool:
    """What predict prints of its own run (`deblur.predict.PredictReport`); whether any input failed."""
    for path in report.written:
        typer.echo(f"wrote {path}")
    say_lost(report.lost, write.fmt, log)
    say_small(report.small, log)
    for clip in report.clips:
        resumed = f" ({clip.resumed_frames} done before)" if clip.resumed_frames else ""
        speed = f", {clip.frames_per_second:.2f} frames/s" if clip.frames > clip.resumed_frames else ""
        frames = f"{clip.frames} frame" + ("s" if clip.frames != 1 else "")
        typer.echo(f"{clip.source.name}: {frames}{resumed} in {clip.seconds:.1f} s{speed}")
        for note in clip.notes:  # notes: not under --quiet, as the engine's run keeps its own
            log(f"  {note}")
    if report.raw:  # a camera's RAW + JPEG pairs: the JPEGs are deblurred, and the RAW files said to be left
        typer.echo(f"left out {raw_files(report.raw)}")
    say_earlier(report.earlier)
    for _, error in report.failed:
        typer.secho(f"failed: {user_message(error)}", fg=typer.colors.RED, err=True)
    if report.skipped:
        typer.echo(skipped_line(len(report.skipped)))
    typer.echo(f"{len(report.written)} written, {len(report.failed)} failed; {_where(write.out)}")
    return bool(report.failed)


def _where(out: str) -> str:
    """Where the outputs are; a folder that was never made (every input failed) is not named as holding them."""
    if "://" in out:
        return f"outputs in {out}"
    folder = Path(out).resolve()
    return f"outputs in {folder}" if folder.is_dir() else f"{folder} was not made (nothing to put in it)"


def print_scaled(scaled, write: WriteSettings, log) -> bool:
    """What predict prints of a run on an engine (`deblur.scale.run.ScaleReport`); whether any input failed."""
    out = write.out
    for location in scaled.written:
        typer.echo(f"wrote {location}")
    say_lost(scaled.lost, write.fmt, log)
    say_small(scaled.small, log)
    for _, reason in scaled.failed:
        typer.secho(f"failed: {reason}", fg=typer.colors.RED, err=True)
    if scaled.raw:
        typer.echo(f"left out {raw_files(scaled.raw)}")
    say_earlier(scaled.earlier)
    if scaled.failed_list:
        typer.echo(f"failed inputs listed in {scaled.failed_list}")
    if scaled.skipped:
        typer.echo(skipped_line(len(scaled.skipped)))
    typer.echo(f"{scaled.summary}; {_where(out)}")
    if scaled.stopped:
        raise fail(scaled.stopped)  # the error the CLI gives a full disk, last, as the line to act on
    return bool(scaled.failed)


def say_lost(lost: dict[str, list], fmt: str, log) -> None:
    """What the output format could not hold of the photos, said once for each thing lost, on either engine."""
    for loss, photos in lost.items():
        log(f"{len(photos)} photo(s) " + LOST[loss].format(fmt=fmt))


def say_small(photos: list, log) -> None:
    """The photos under deblur.predict.SMALL_PHOTO a network deblurred, where there are any, on either engine."""
    if photos:
        from deblur.predict import small_photos_hint  # loaded: both reports are its

        log(small_photos_hint(photos))


def say_earlier(folders: list) -> None:
    """The folders of earlier runs' outputs the search left out, where there are any, on either engine."""
    if folders:
        from deblur.predict import earlier_outputs  # loaded: both reports are its

        typer.echo(earlier_outputs(folders))


def skipped_line(count: int) -> str:
    """The one way both engines say that a finished run's outputs were left as they are."""
    return f"{count} skipped: they exist; --overwrite redoes them"


class ProgressBars:
    """Progress bars for predict: one over the inputs, one over the model calls of the photo being deblurred (its
    tiles, times the copies of the ensemble) or the frames of the clip (with its ETA)."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self.images = None
        self.calls = None

    def start(self, images: int) -> None:
        self.images = progress_bar(total=images, desc="inputs", unit="input", disable=self.quiet)

    def image(self, name: str, calls: int, waiting: str | None = None):
        # A model call is one tile of one copy: with --ensemble 4, a photo of 2 tiles makes 8 calls. Until the first,
        # the bar says what runs before it (`waiting`), so that a bar at 0 does not read as stuck.
        # Told 0 as the first call starts: the bar's clock restarts there, or the estimate's time, in the first call's,
        # would make the rate and the ETA of the calls left far too slow (3x on a 2-call photo).
        desc = f"{name}, {waiting}" if waiting else name
        self.calls = bar = progress_bar(total=calls, desc=desc, unit="model call", leave=False, disable=self.quiet)

        def update(done: int) -> None:
            if waiting and bar.n == 0:  # a disabled bar (-q) stays at 0: it is only told its description again
                bar.set_description_str(name, refresh=False)
                if done == 0:
                    bar.reset(total=bar.total)
            if bar.n + done > bar.total:  # the default ran the photo again (`ways.kernel_aware.result_source`)
                bar.total += calls
            bar.update(done)

        return update

    def clip(self, name: str, frames: int | None, done: int):
        self.calls = progress_bar(total=frames, initial=done, desc=name, unit="frame", leave=False, disable=self.quiet)
        return self.calls.update

    def finished(self) -> None:
        if self.calls is not None:
            self.calls.close()
            self.calls = None
        self.images.update(1)

    def close(self) -> None:
        if self.calls is not None:  # a run stopped inside a photo or clip: its bar goes before the error is printed
            self.calls.close()
            self.calls = None
        if self.images is not None:
            self.images.close()
