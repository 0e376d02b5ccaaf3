"""The terminal table of a timings report."""

from __future__ import annotations

from deblur.tables import aligned_table
from deblur.timings.report import TimingsReport


def _number(value: float | None, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def stage_table(report: TimingsReport) -> str:
    header = ("stage", "img/s", "median ms", "p90 ms", "input wait", "speedup", "5x200 time", "GFLOP/s", "of matmul")
    rows = []
    notes = []
    for stage in report.stages:
        if stage.skipped:
            rows.append((stage.name, "skipped", "", "", "", "", "", "", ""))
            notes.append(f"{stage.name}: {stage.skipped}")
            continue
        wait = None if stage.input_wait_fraction is None else 100 * stage.input_wait_fraction
        seconds = report.equivalent_seconds(stage)
        rows.append(
            (
                stage.name,
                _number(stage.images_per_second, ".2f"),
                _number(stage.step_ms_median, ".0f"),
                _number(stage.step_ms_p90, ".0f"),
                "in graph" if wait is None else f"{wait:.1f}%",
                _number(stage.speedup, ".2f") + "x",
                _number(seconds, ".0f") + " s",
                _number(stage.gflops, ".0f"),
                "-" if stage.matmul_share is None else f"{100 * stage.matmul_share:.0f}%",
            )
        )
    lines = aligned_table(header, rows)
    if report.matmul:
        rates = ", ".join(f"{dtype} {rate.gflops:.0f} GFLOP/s" for dtype, rate in report.matmul.items())
        lines.append(f"  of matmul: a share of this device's {rates} (2048x2048 matmul, this run)")
    return "\n".join(lines + [f"  skipped {note}" for note in notes])


def loader_table(report: TimingsReport) -> str:
    lines = [f"{'loader (no model)':<20} {'patches/s':>10}"]
    lines += [f"{loader.name:<20} {loader.patches_per_second:>10.1f}" for loader in report.pipeline]
    fastest = report.fastest()
    if fastest:
        lines.append(f"{'model consumes':<20} {fastest.images_per_second:>10.1f}  (fastest stage: {fastest.name})")
        verdict = bottleneck(report)
        if verdict:
            lines.append(verdict)
    return "\n".join(lines)


def bottleneck(report: TimingsReport) -> str | None:
    """Which limits training here: the plain input pipeline, or the model's compute."""
    fastest = report.fastest()
    # The plainest loader of the backend: tf.data unoptimized on TensorFlow, the PyDataset in the loop on JAX.
    plain = next((loader for loader in report.pipeline if loader.name == "tf.data"), None)
    plain = plain or next((loader for loader in report.pipeline if loader.name == "keras-sequence"), None)
    if fastest is None or plain is None:
        return None
    consumed = fastest.images_per_second
    ratio = plain.patches_per_second / consumed
    if ratio >= 1:
        return (
            f"here the compute is the bottleneck: even the plain {plain.name} loader delivers {ratio:.1f}x what the "
            "model consumes"
        )
    return (
        f"here the input pipeline is the bottleneck: the plain {plain.name} loader delivers only {ratio:.2f}x what "
        "the model consumes; the optimized loader is needed"
    )
