"""`timings.png`: the time per stage as horizontal bars (like the article's chart), beside the loaders' speed."""

from __future__ import annotations

from pathlib import Path

from matplotlib import ticker
from matplotlib.figure import Figure

from deblur.files import atomic_path
from deblur.timings.report import TimingsReport


def write_chart(report: TimingsReport, path: Path) -> None:
    settings = report.settings
    model = settings["model"]
    if report.stages:
        # A bare Figure renders to files with no pyplot state and no display backend.
        figure = Figure(figsize=(13, 5.2), layout="constrained")
        stages_axis, loaders_axis = figure.subplots(1, 2, gridspec_kw={"width_ratios": [1.7, 1]})
        _stage_bars(stages_axis, report)
        workload = f"{settings['timed_steps']} timed steps per stage"
    else:  # --pipeline-only
        figure = Figure(figsize=(10, 4.5), layout="constrained")
        loaders_axis = figure.subplots()
        workload = f"{report.pipeline[0].batches} timed batches per loader" if report.pipeline else ""
    _loader_bars(loaders_axis, report)
    blocks = f"{model['blocks']} block" + ("s" if model["blocks"] != 1 else "")
    figure.suptitle(
        f"deblur timings, {report.preset} preset: {short_device(report.device)}\n"
        f"{backend_label(report.device)}, Keras {report.device['keras']}; generator width "
        f"{model['width']}, {blocks}; {settings['patch_size']}x{settings['patch_size']} patches, "
        f"batch {settings['batch_size']}, {workload}{_gradients_note(settings)}",
        fontsize=10,
    )
    with atomic_path(path, suffix=".png") as tmp:
        figure.savefig(tmp, dpi=110, format="png")


def backend_label(device: dict) -> str:
    """ "TensorFlow 2.21.0" or "JAX 0.10.2": the backend the figures were measured on (older reports: TensorFlow)."""
    backend = device.get("backend", "tensorflow")
    return f"{ {'tensorflow': 'TensorFlow', 'jax': 'JAX', 'torch': 'PyTorch'}.get(backend, backend) } {device[backend]}"


def _gradients_note(settings: dict) -> str:
    """The instance norm's gradient (deblur.model.GRADIENTS): reports from before it was recorded left it to
    automatic differentiation."""
    if not settings.get("timed_steps"):
        return ""
    norm = settings.get("gradients", {}).get("instance norm", "automatic differentiation")
    return f"; instance-norm gradient: {norm.split(' (')[0]}"


def _stage_bars(axis, report: TimingsReport) -> None:
    stages = report.stages
    names = [stage.name for stage in stages][::-1]  # first stage at the top
    seconds = [report.equivalent_seconds(stage) or 0.0 for stage in stages][::-1]
    colours = ["#4c72b0" if s else "#cccccc" for s in seconds]
    bars = axis.barh(names, seconds, color=colours)
    longest = max(seconds) or 1.0
    for bar, stage in zip(bars, stages[::-1], strict=True):
        if stage.skipped:
            label = f"skipped: {stage.skipped}"
            label = label if len(label) < 70 else label[:67] + "..."
            axis.text(longest * 0.01, bar.get_y() + bar.get_height() / 2, label, va="center", fontsize=8)
        else:
            share = "" if stage.matmul_share is None else f", {stage.matmul_share:.0%} of matmul"
            label = f" {report.equivalent_seconds(stage):.0f} s  ({stage.speedup:.2f}x{share})"
            axis.text(bar.get_width(), bar.get_y() + bar.get_height() / 2, label, va="center", fontsize=9)
    axis.set_xlim(0, longest * 1.6)
    axis.set_xlabel(f"seconds for {report.equivalent_workload} (lower is better)")
    axis.set_title("time per stage, each adding one optimization", fontsize=10)


def _loader_bars(axis, report: TimingsReport) -> None:
    loaders = report.pipeline[::-1]
    bars = axis.barh(
        [loader.name for loader in loaders], [loader.patches_per_second for loader in loaders], color="#55a868"
    )
    for bar, loader in zip(bars, loaders, strict=True):
        axis.text(
            bar.get_width(),
            bar.get_y() + bar.get_height() / 2,
            f" {loader.patches_per_second:.0f}",
            va="center",
            fontsize=9,
        )
    speeds = [loader.patches_per_second for loader in loaders]
    fastest = report.fastest()
    if fastest:
        consumed = fastest.images_per_second
        speeds.append(consumed)
        axis.axvline(consumed, color="#c44e52", linestyle="--", label=f"the model consumes {consumed:.1f}/s")
        axis.legend(loc="upper right", fontsize=8, frameon=False)  # the top bar (the Sequence) is the shortest
    axis.set_xscale("log")
    axis.set_xlim(min(speeds) / 2, max(speeds) * 4)  # room for the value labels
    axis.xaxis.set_major_formatter(ticker.FuncFormatter(lambda value, _: f"{value:g}"))
    axis.xaxis.set_minor_formatter(ticker.NullFormatter())
    axis.set_xlabel("patches per second delivered, no model (log scale)")
    axis.set_title("input pipeline alone", fontsize=10)


def short_device(device: dict) -> str:
    """One line for a chart title: 'AMD EPYC, 2 cores, no GPU'."""
    gpus = device["gpus"]
    gpu_text = f"{len(gpus)} x {gpus[0]}" if gpus else "no GPU"
    return f"{device['cpu']}, {device['cpu_cores']} cores, {gpu_text}"
