"""The `deblur` command line: each command parses its options, calls one library function, prints the result."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer
from tqdm import tqdm
from typer.core import TyperGroup

from deblur.config import (
    Blur,
    EvaluationSplit,
    InferencePrecision,
    KernelPath,
    Precision,
    Strategy,
    SynthConfig,
    TimingsPreset,
)
from deblur.console import hide_native_noise
from deblur.errors import DeblurError
from deblur.imageio import DEFAULT_MAX_PIXELS, WriteFormat  # light: Pillow and NumPy only

# TensorFlow's C++ INFO and WARNING lines drown the command's own output; set the variable to see them.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


class Commands(TyperGroup):
    """Runs every command inside the one handler for user errors: a `DeblurError` becomes one line on stderr and
    its exit code; anything else is a bug and shows its traceback."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except DeblurError as err:
            raise fail(user_message(err), err.exit_code) from None


def user_message(err: DeblurError) -> str:
    """The library's message, with the flags of the settings it concerns."""
    flags = ", ".join("--" + setting.replace("_", "-") for setting in err.settings)
    return f"{err} ({flags})" if flags else str(err)


app = typer.Typer(
    cls=Commands,
    help="Deblur photos with a DeblurGAN-style CNN, and measure what each training optimization buys.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def main() -> None:
    """Deblur photos with a DeblurGAN-style CNN, and measure what each training optimization buys."""


ENSEMBLE_HELP = (
    "Deblur 1, 2, 4 or 8 mirrored/turned copies of each image and average them: a little sharper and safer on "
    "mild blur, at that many times the time."
)
MODEL_HELP = (
    "A model.keras; 'latest': the newest runs/*/model.keras; default: the pretrained model shipped with deblur "
    "(in a copy without one, the newest run)."
)


def fail(message: str, code: int = 1) -> typer.Exit:
    typer.secho(f"error: {message}", fg=typer.colors.RED, err=True)
    return typer.Exit(code)


@app.command()
def train(
    config: Annotated[
        str | None,
        typer.Option(
            "--config",
            "-c",
            help="A config file, or a shipped one by name: demo, gopro, pretrained, pretrained-finetune, smoke.",
        ),
    ] = None,
    data: Annotated[
        Path | None,
        typer.Option(help="Dataset folder (GOPRO layout or blur/ + sharp/); default: the embedded demo data."),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(help="Run folder; an existing run resumes from its latest checkpoint. Default: runs/<time>."),
    ] = None,
    epochs: Annotated[int | None, typer.Option(min=1, help="train.epochs")] = None,
    steps_per_epoch: Annotated[int | None, typer.Option(min=1, help="train.steps_per_epoch")] = None,
    batch_size: Annotated[int | None, typer.Option(min=1, help="data.batch_size, per replica")] = None,
    patch_size: Annotated[int | None, typer.Option(min=8, help="data.patch_size")] = None,
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
        typer.Option(help="train.init: start from pretrained (the shipped model), latest, or a model.keras."),
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bars.")] = False,
) -> None:
    """Train the deblurring model. With no options: the demo config on the embedded demo data."""
    from deblur.config import load_config
    from deblur.paths import new_run_dir
    from deblur.training.trainer import train as run_training

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
    result = run_training(load_config(config, overrides), out or new_run_dir(), progress=not quiet, log=typer.echo)
    if result.metrics:
        last = result.metrics[-1]
        gain = last["val_psnr"] - last["val_psnr_blurry"]
        typer.echo(
            f"done: {result.step} steps; validation PSNR {last['val_psnr']:.2f} dB vs blurry "
            f"{last['val_psnr_blurry']:.2f} dB ({gain:+.2f} dB); input wait "
            f"{100 * result.input_wait_fraction:.1f}% of step time"
        )
    if result.skipped:
        typer.echo(f"skipped {len(result.skipped)} unreadable file(s):")
        for problem in result.skipped:
            typer.echo(f"  - {problem}")
    if result.model_path:
        typer.echo(f"model: {result.model_path}")


class ProgressBars:
    """Progress bars for predict: one over the images, one over the model calls of the image being deblurred (its
    tiles, times the copies of the ensemble)."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self.images: tqdm | None = None
        self.calls: tqdm | None = None

    def start(self, images: int) -> None:
        self.images = tqdm(total=images, desc="images", unit="image", disable=self.quiet)

    def image(self, name: str, calls: int):
        # A model call is one tile of one copy: with --ensemble 4, a photo of 2 tiles makes 8 calls.
        self.calls = tqdm(total=calls, desc=name, unit="model call", leave=False, disable=self.quiet)
        return self.calls.update

    def finished(self) -> None:
        if self.calls is not None:
            self.calls.close()
            self.calls = None
        self.images.update(1)

    def close(self) -> None:
        if self.images is not None:
            self.images.close()


@app.command()
def predict(
    inputs: Annotated[list[Path], typer.Argument(help="Image files and folders (searched recursively).")],
    model: Annotated[str | None, typer.Option(help=MODEL_HELP)] = None,
    out: Annotated[Path, typer.Option(help="Output folder; <name>.<format> per input.")] = Path("deblurred"),
    fmt: Annotated[WriteFormat, typer.Option("--format", help="Output format.")] = "png",
    tile: Annotated[
        int, typer.Option(min=32, help="Largest tile side, a multiple of 4, for images over a megapixel.")
    ] = 1024,
    overlap: Annotated[int, typer.Option(min=0, help="Pixels shared by neighbouring tiles, blended.")] = 64,
    ensemble: Annotated[int, typer.Option(help=ENSEMBLE_HELP)] = 1,
    side_by_side: Annotated[
        bool, typer.Option("--side-by-side", help="Also write <name>_side_by_side: blurry | deblurred.")
    ] = False,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace existing outputs.")] = False,
    precision: Annotated[
        InferencePrecision,
        typer.Option(help="auto: bfloat16 on CPUs with native support (needs the run's config.yaml), else float32."),
    ] = "auto",
    max_pixels: Annotated[
        int, typer.Option(min=1, help="Refuse larger images (a decompression-bomb guard).")
    ] = DEFAULT_MAX_PIXELS,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bars.")] = False,
) -> None:
    """Deblur photos of any size with a trained model."""
    from deblur.inference import PredictOptions, deblur_photos

    bars = ProgressBars(quiet)
    try:
        options = PredictOptions(fmt, overwrite, side_by_side, max_pixels)
        report = deblur_photos(
            inputs,
            out,
            model=model,
            precision=precision,
            tile=tile,
            overlap=overlap,
            ensemble=ensemble,
            options=options,
            progress=bars,
            log=typer.echo,
        )
    finally:
        bars.close()
    for path in report.written:
        typer.echo(f"wrote {path}")
    for _, error in report.failed:
        typer.secho(f"failed: {user_message(error)}", fg=typer.colors.RED, err=True)
    typer.echo(f"{len(report.written)} written, {len(report.failed)} failed")
    if report.failed:
        raise typer.Exit(1)


@app.command()
def timings(
    preset: Annotated[
        TimingsPreset,
        typer.Option(help="quick: 128x128 patches, 16 timed steps (minutes on a CPU); paper: the article's setup."),
    ] = "quick",
    out: Annotated[Path, typer.Option(help="Folder for timings.json and timings.png.")] = Path("timings"),
    data: Annotated[
        Path | None, typer.Option(help="Dataset folder (GOPRO layout or blur/ + sharp/); default: the demo data.")
    ] = None,
    stages: Annotated[
        str | None,
        typer.Option(
            help="Comma-separated subset: keras-sequence, tf.data, tf.data-optimized, mixed-precision, multi-gpu, "
            "xla, steps-per-call. Each keeps the optimizations of the stages before it."
        ),
    ] = None,
    config: Annotated[
        str | None,
        typer.Option("--config", "-c", help="Config whose model (and data) to time; default: gopro's model."),
    ] = None,
    steps: Annotated[int | None, typer.Option(min=1, help="Timed steps per stage (overrides the preset).")] = None,
    warmup: Annotated[int | None, typer.Option(min=1, help="Untimed warm-up steps per stage.")] = None,
    patch_size: Annotated[int | None, typer.Option(min=8, help="Patch side (overrides the preset).")] = None,
    batch_size: Annotated[int | None, typer.Option(min=1, help="Batch per replica (overrides the preset).")] = None,
    pipeline_only: Annotated[
        bool, typer.Option("--pipeline-only", help="Only time the loaders, without the model.")
    ] = False,
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Replace timings.json and timings.png in --out.")
    ] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bars.")] = False,
) -> None:
    """Time each training optimization in turn (the article's staged chart) and write a table, JSON and chart."""
    from dataclasses import replace

    from deblur.config import load_config
    from deblur.timings.report import loader_table, stage_table
    from deblur.timings.run import PRESETS, run_timings

    chosen = PRESETS[preset]
    changes = {"steps": steps, "warmup_steps": warmup, "patch_size": patch_size, "batch_size": batch_size}
    chosen = replace(chosen, **{key: value for key, value in changes.items() if value is not None})
    overrides = [f"data.root={data}"] if data else ([] if config else ["data.root=null"])
    names = [name.strip() for name in stages.split(",") if name.strip()] if stages else None
    report = run_timings(
        load_config(config or "gopro", overrides),
        chosen,
        out,
        stages=names,
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


data_app = typer.Typer(help="Make and check datasets.", no_args_is_help=True)
app.add_typer(data_app, name="data")


_BUILT_IN = SynthConfig()


@data_app.command("synth")
def data_synth(
    src: Annotated[Path, typer.Option(help="Folder of sharp photos (searched recursively).")],
    out: Annotated[Path, typer.Option(help="New folder for the pairs, in GOPRO's layout.")],
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
    per_image: Annotated[int | None, typer.Option(min=1, help="Blurry versions of each photo.")] = None,
    seed: Annotated[int | None, typer.Option(help="Makes the blur and noise reproducible.")] = None,
    holdout_seed: Annotated[
        int | None,
        typer.Option(help="Chooses the photos held out in test/ (default: --seed's); keep it across stages."),
    ] = None,
    blur: Annotated[
        Blur | None,
        typer.Option(help="kernel: one shake kernel over the photo; motion: the photo moved along a camera path."),
    ] = None,
    min_length: Annotated[float | None, typer.Option(min=0.5, help="Shortest camera-shake path, in pixels.")] = None,
    max_length: Annotated[float | None, typer.Option(min=0.5, help="Longest camera-shake path, in pixels.")] = None,
    max_rotation: Annotated[
        float | None, typer.Option(min=0.0, help="Motion blur: largest camera roll over the exposure, degrees.")
    ] = None,
    max_zoom: Annotated[
        float | None, typer.Option(min=0.0, help="Motion blur: largest change of scale over the exposure (0.02).")
    ] = None,
    path: Annotated[
        KernelPath | None,
        typer.Option(help="Kernel blur: shake (a wandering path), smooth (a line or arc, as GOPRO's) or mixed."),
    ] = None,
    varying: Annotated[
        float | None,
        typer.Option(
            min=0.0,
            max=1.0,
            help="Kernel blur: share of photos blurred in random regions only (sharp or mild elsewhere).",
        ),
    ] = None,
    min_frames: Annotated[
        int | None,
        typer.Option(min=0, help="Kernel blur: fewest video frames per exposure, sharp = the middle one (GOPRO's 7)."),
    ] = None,
    max_frames: Annotated[
        int | None, typer.Option(min=0, help="Kernel blur: most video frames per exposure (GOPRO's 13); 0: continuous.")
    ] = None,
    linear_light: Annotated[
        bool | None, typer.Option("--linear-light/--no-linear-light", help="Blur in linear light (gamma 2.2).")
    ] = None,
    noise: Annotated[
        float | None,
        typer.Option(min=0.0, max=0.5, help="Gaussian noise std, in [0, 1] units (largest, with --min-noise)."),
    ] = None,
    min_noise: Annotated[
        float | None,
        typer.Option(
            min=0.0, max=0.5, help="Draw each photo's noise std from this to --noise (default: always --noise)."
        ),
    ] = None,
    val_fraction: Annotated[
        float, typer.Option(min=0.0, max=0.99, help="Share of the photos held out in test/ for validation.")
    ] = 0.1,
    max_side: Annotated[
        int | None, typer.Option(min=16, help="Scale photos down to this longer side first (e.g. 1280).")
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bars.")] = False,
) -> None:
    """Make blurry/sharp training pairs from any folder of sharp photos, with random camera-shake blur."""
    from deblur.data.make_pairs import synth_recipe, synthesize_pairs

    synth = synth_recipe(
        config,
        pairs_per_photo=per_image,
        seed=seed,
        holdout_seed=holdout_seed,
        blur=blur,
        min_length=min_length,
        max_length=max_length,
        max_rotation=max_rotation,
        max_zoom=max_zoom,
        path=path,
        varying=varying,
        min_frames=min_frames,
        max_frames=max_frames,
        linear_light=linear_light,
        noise=noise,
        min_noise=min_noise,
    )
    report = synthesize_pairs(
        src, out, synth, val_fraction=val_fraction, max_side=max_side, progress=not quiet, log=typer.echo
    )
    typer.echo(f"check it: deblur data check {report.out}; train on it: deblur train --data {report.out}")


@data_app.command("check")
def data_check(
    root: Annotated[Path, typer.Argument(help="Dataset folder: GOPRO layout or blur/ + sharp/.")],
    patch_size: Annotated[
        int | None, typer.Option(min=8, help="Also flag training images smaller than this (e.g. 256).")
    ] = None,
    deep: Annotated[
        bool, typer.Option("--deep", help="Decode every image fully (finds truncated files; slower).")
    ] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bars.")] = False,
) -> None:
    """Check a dataset as deblur train would, and print a summary: pairs, sizes, every problem."""
    from deblur.data.check import format_summary, summarize

    summary = summarize(root, patch_size, deep=deep, progress=not quiet)
    typer.echo(format_summary(summary))
    if not summary.ok:
        raise typer.Exit(1)


@app.command()
def evaluate(
    data: Annotated[Path, typer.Option(help="Dataset folder (GOPRO layout or blur/ + sharp/).")],
    model: Annotated[str | None, typer.Option(help=MODEL_HELP)] = None,
    out: Annotated[Path | None, typer.Option(help="Also write the results as JSON to this file.")] = None,
    split: Annotated[
        EvaluationSplit, typer.Option(help="Which pairs: the validation split, training, or all.")
    ] = "val",
    limit: Annotated[int | None, typer.Option(min=1, help="Score at most this many pairs.")] = None,
    baselines: Annotated[bool, typer.Option(help="Also score classical deblurring (slower).")] = True,
    precision: Annotated[InferencePrecision, typer.Option(help="As for predict.")] = "auto",
    ensemble: Annotated[int, typer.Option(help=ENSEMBLE_HELP)] = 1,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace an existing --out file.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bars.")] = False,
) -> None:
    """Full-image PSNR and SSIM of a model, the blurry input and classical deblurring, per image and mean."""
    from deblur.evaluation.evaluate import evaluate_model
    from deblur.evaluation.table import results_table

    report = evaluate_model(
        model,
        data,
        split=split,
        limit=limit,
        precision=precision,
        ensemble=ensemble,
        baselines=baselines,
        out=out,
        overwrite=overwrite,
        progress=not quiet,
        log=typer.echo,
    )
    typer.echo(results_table(report))
    if out is not None:
        typer.echo(f"wrote {out}")


@app.command()
def export(
    out: Annotated[
        Path,
        typer.Option(help="Where to write: a folder for savedmodel (e.g. serving/deblur/1), a .tflite or .onnx file."),
    ],
    fmt: Annotated[
        str, typer.Option("--format", help="savedmodel (TF Serving), litert (.tflite) or onnx (ONNX Runtime).")
    ],
    model: Annotated[str | None, typer.Option(help=MODEL_HELP)] = None,
    float16: Annotated[bool, typer.Option("--float16", help="litert: store the weights as float16.")] = False,
    quantize: Annotated[
        str | None,
        typer.Option(help="int8: onnx, the residual blocks quantized and calibrated on photos; litert, int8 weights."),
    ] = None,
    calibration: Annotated[
        Path | None,
        typer.Option(help="onnx --quantize int8: a folder of blurry photos to calibrate on; default: the demo's."),
    ] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace an existing --out.")] = False,
) -> None:
    """Export a trained model for TF Serving (SavedModel), LiteRT or ONNX Runtime."""
    from deblur.export.exporter import ExportRequest, export_model

    request = ExportRequest(
        fmt=fmt, out=out, overwrite=overwrite, float16=float16, quantize=quantize, calibration=calibration
    )
    report = export_model(request, model=model, log=typer.echo)
    typer.echo(f"wrote {report.path} ({report.fmt}, {report.variant}, {report.bytes / 1e6:.1f} MB)")
    typer.echo(f"run it: {report.hint}")


@app.command()
def serve(
    model: Annotated[str | None, typer.Option(help=MODEL_HELP)] = None,
    host: Annotated[
        str, typer.Option(help="Address to listen on; 0.0.0.0 lets other machines in (no login: it warns).")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port to listen on (0: any free port).")] = 8000,
    precision: Annotated[InferencePrecision, typer.Option(help="As for predict.")] = "auto",
    queue: Annotated[
        int, typer.Option(min=0, help="Requests that may wait behind the one being deblurred; beyond: 503.")
    ] = 8,
    max_upload_mb: Annotated[float, typer.Option(min=0.001, help="Refuse larger uploads (413).")] = 64.0,
    max_pixels: Annotated[
        int, typer.Option(min=1, help="Refuse larger images from their header (a decompression-bomb guard).")
    ] = 50_000_000,
    cors_origin: Annotated[
        list[str] | None,
        typer.Option(help="Let pages from this origin call the API, e.g. http://localhost:3000 (repeatable)."),
    ] = None,
) -> None:
    """Serve a web page to deblur photos in the browser, and an HTTP API, from one process."""
    from deblur.serve.server import serve as run_server
    from deblur.serve.service import Limits

    limits = Limits(max_bytes=round(max_upload_mb * 2**20), max_pixels=max_pixels, waiting=queue)
    origins = tuple(cors_origin or ())
    run_server(model, host=host, port=port, precision=precision, limits=limits, cors_origins=origins, log=typer.echo)


def run() -> None:
    """The `deblur` command: the app, with TensorFlow's native start-up lines filtered from the terminal."""
    hide_native_noise()
    app(prog_name="deblur")
