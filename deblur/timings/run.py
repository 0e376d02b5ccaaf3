"""`deblur timings`: the staged training-speed measurement, end to end.

Each stage trains the same model on the same data with one more optimization than the stage before, from the same
initial weights; `Preset` fixes the workload. Results go to `OUT/timings.json` and `OUT/timings.png`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import keras

from deblur.config import MIN_PATCH_SIZE, Config, load_config
from deblur.data.demo import ensure_demo_dataset
from deblur.data.pairs import preflight
from deblur.errors import (
    Interrupted,
    OutputExistsError,
    SettingError,
    check_choice,
    check_switches,
    error_reason,
    given_log,
    is_list_of_strings,
)
from deblur.files import as_path, atomic_write_text, check_folder, refuse_folder
from deblur.hardware import cpu_bf16_flags, describe_device, gpu_compute_capabilities, keras_backend
from deblur.model import GRADIENTS, build_generator
from deblur.timings.chart import write_chart
from deblur.timings.flops import (
    TRAIN_FLOPS_PER_FORWARD,
    MatmulRate,
    achieved,
    forward_flops_per_pixel,
    matmul_rate,
)
from deblur.timings.report import ARTICLE_STEPS, StageResult, TimingsReport
from deblur.timings.stages import Stage, Workload, plan_stages, select_stages, skipped_result
from deblur.training.precision import choose_precision


@dataclass(frozen=True)
class Preset:
    name: str
    patch_size: int
    batch_size: int  # per replica
    warmup_steps: int
    steps: int  # timed
    loader_batches: int  # timed, per loader, in the pipeline-only mode (at least)
    steps_per_call: int
    loader_seconds: float = 2.0  # each loader is timed for at least this long

    def __post_init__(self) -> None:
        # Each named by the option that sets it: 0 steps had been a ZeroDivisionError, a batch of 0 numpy's
        # "need at least one array", and -1 warm-up steps went by as none.
        if self.patch_size < MIN_PATCH_SIZE:
            raise SettingError(
                f"patch_size must be at least {MIN_PATCH_SIZE}; got {self.patch_size}", settings=("patch_size",)
            )
        for setting, value in (("batch_size", self.batch_size), ("steps", self.steps), ("warmup", self.warmup_steps)):
            if value < 1:
                raise SettingError(f"{setting} must be at least 1; got {value}", settings=(setting,))


PRESETS = {
    # The article's setup exactly: 256x256 patches, batch 4, 5 epochs x 200 steps, all timed.
    "paper": Preset(
        "paper", 256, 4, warmup_steps=10, steps=ARTICLE_STEPS, loader_batches=200, steps_per_call=10, loader_seconds=5
    ),
    # The same model within 10 minutes on a 2-core CPU: smaller patches, fewer steps.
    "quick": Preset("quick", 128, 4, warmup_steps=2, steps=16, loader_batches=30, steps_per_call=8),
}

OUTPUTS = ("timings.json", "timings.png")


def timings(
    preset: str = "quick",
    out: Path = Path("timings"),
    *,
    config: str | None = None,
    data: Path | None = None,
    stages: str | list[str] | None = None,
    steps: int | None = None,
    warmup: int | None = None,
    patch_size: int | None = None,
    batch_size: int | None = None,
    pipeline_only: bool = False,
    overwrite: bool = False,
    progress: bool = True,
    log: Callable[[str], None] = print,
) -> TimingsReport:
    """`deblur timings`: `preset`'s workload with the options that are not None, the model (and data) of
    `config` (default: gopro's model on the demo data, or on `data`), the `stages` named (a list, or one string
    separated by commas; default all), then `run_timings`."""
    base = _preset(preset)
    changes = {"steps": steps, "warmup_steps": warmup, "patch_size": patch_size, "batch_size": batch_size}
    chosen = replace(base, **{key: value for key, value in changes.items() if value is not None})
    overrides = [f"data.root={data}"] if data else ([] if config else ["data.root=null"])
    return run_timings(
        load_config("gopro" if config is None else config, overrides),
        chosen,
        Path(out),
        stages=stages,
        pipeline_only=pipeline_only,
        overwrite=overwrite,
        progress=progress,
        log=log,
    )


def _preset(preset: Preset | str) -> Preset:
    if isinstance(preset, Preset):
        return preset
    check_choice("preset", preset, PRESETS)
    return PRESETS[preset]


def compute_dtype(stage: Stage) -> str:
    return keras.DTypePolicy(stage.setup.policy).compute_dtype


def check_outputs(out: Path, overwrite: bool) -> None:
    check_folder(out, "out")
    for name in OUTPUTS:  # found at the end, after minutes of timing, where overwriting was allowed
        refuse_folder(out / name, settings=("out",))
    existing = [str(out / name) for name in OUTPUTS if (out / name).exists()]
    if existing and not overwrite:
        raise OutputExistsError(
            f"{' and '.join(existing)} already exist{'s' if len(existing) == 1 else ''}: choose another output folder "
            "or allow overwriting",
            settings=("out", "overwrite"),
        )


def run_timings(
    config: Config,
    preset: Preset | str,
    out: str | Path,
    *,
    stages: str | list[str] | None = None,
    pipeline_only: bool = False,
    overwrite: bool = False,
    multi_devices: list[str] | None = None,
    progress: bool = True,
    log: Callable[[str], None] = print,
) -> TimingsReport:
    """Measure every selected stage (or only the loaders), write OUT/timings.json and OUT/timings.png.

    The model and data come from `config` (data.root, or the embedded demo dataset made from data.synth); the
    workload from `preset` (a Preset, or one of `PRESETS` by name); `stages` as `timings` takes them.
    """
    preset, out = _preset(preset), as_path(out, "the timings' folder", "out")  # a preset by name, a str path
    check_switches(pipeline_only=pipeline_only, overwrite=overwrite, progress=progress)
    log = given_log(log)
    if isinstance(stages, str):  # one string, its letters had each been "unknown stage"
        stages = [name.strip() for name in stages.split(",") if name.strip()]
    if stages is not None and not is_list_of_strings(stages):
        raise SettingError(  # 5 had been "'int' object is not iterable"
            f"stages must be a list of stage names, or one string separated by commas; got {stages!r}",
            settings=("stages",),
        )
    if multi_devices is not None and not is_list_of_strings(multi_devices):
        # "/cpu:0" had been read letter by letter, and failed on 'c' after the loaders' timings
        raise SettingError(
            f"multi_devices must be a list of device names, such as ['/gpu:0', '/gpu:1']; got {multi_devices!r}",
            settings=("multi_devices",),
        )
    if pipeline_only and stages:  # the loaders are timed without any stage: the stages had gone unread, unsaid
        raise SettingError(
            "the stages are training's, and pipeline_only times the loaders alone, without them: give one or the other",
            settings=("stages", "pipeline_only"),
        )
    check_outputs(out, overwrite)
    backend = Backend.here(preset, multi_devices)
    planned = select_stages(backend.stages, stages)
    root = config.data.root or ensure_demo_dataset(config.data.synth, log=log)
    splits = preflight(root, preset.patch_size, progress=progress, work="timed")
    work = Workload(
        config.model,
        config.train,
        splits.train,
        preset.patch_size,
        preset.batch_size,
        preset.warmup_steps,
        preset.steps,
    )
    device = describe_device()
    settings = {
        "patch_size": preset.patch_size,
        "batch_size": preset.batch_size,
        "warmup_steps": preset.warmup_steps,
        "timed_steps": preset.steps,
        "model": asdict(config.model),
        "data": str(root),
        "training_pairs": len(splits.train),
        "gradients": GRADIENTS,
    }
    log(f"data: {root}, {len(splits.train)} training pairs; {preset.patch_size}x{preset.patch_size} patches")

    results: list[StageResult] = []
    rates: dict[str, MatmulRate] = {}
    try:
        loaders = [
            _time_loader(backend, name, splits.train, preset, progress=progress, log=log) for name in backend.loaders
        ]
        if not pipeline_only:
            train_flops = TRAIN_FLOPS_PER_FORWARD * forward_flops_per_pixel(build_generator(**asdict(config.model)))
            settings["train_flops_per_image"] = train_flops * preset.patch_size**2
            # The hardware's own rate in each precision the stages compute in, measured before them, so that every
            # stage can be read as a share of it on any machine.
            for dtype in sorted({compute_dtype(stage) for stage in planned if not stage.skipped}):
                rates[dtype] = matmul_rate(dtype)
                log(f"matmul rate, {dtype}: {rates[dtype].gflops:.0f} GFLOP/s")
            for stage in planned:
                results.append(_time_stage(backend, stage, work, settings, rates, progress=progress, log=log))
    except KeyboardInterrupt:
        measured, compared = (
            ("", "loaders") if pipeline_only else (f" after {len(results)} of {len(planned)} stage(s)", "stages")
        )
        raise Interrupted(
            f"stopped{measured}: nothing was written to {out}. The {compared} are compared within one run (a "
            "machine's speed drifts between runs), so a stopped run's figures are not kept; the same command measures "
            "them again"
        ) from None
    if not pipeline_only:
        baseline = next((r for r in results if r.images_per_second), None)
        for result in results:
            if result.images_per_second and baseline:
                result.speedup = result.images_per_second / baseline.images_per_second
        settings["speedup_baseline"] = baseline.name if baseline else None

    report = TimingsReport(
        device,
        preset.name,
        settings,
        results,
        loaders,
        equivalent_workload=f"{ARTICLE_STEPS} steps (5 epochs x 200) of batch {preset.batch_size}",
        matmul=rates,
    )
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "timings.json", json.dumps(report.to_json(), indent=2) + "\n")
    write_chart(report, out / "timings.png")
    return report


@dataclass
class Backend:
    """What `deblur timings` runs on Keras' backend: TensorFlow's stages and loaders (the article's chart), or
    JAX's (`deblur.timings.jax`), and the functions that measure them."""

    stages: list[Stage]
    loaders: tuple[str, ...]
    measure_stage: Callable
    measure_loader: Callable
    failures: tuple[type[BaseException], ...]  # what a stage that cannot run here raises (out of memory, say)

    @classmethod
    def here(cls, preset: Preset, multi_devices: list[str] | None = None) -> Backend:
        if keras_backend() == "jax":
            import jax

            from deblur.timings import jax as on_jax

            stages = on_jax.plan_jax_stages(gpu_compute_capabilities(), bool(cpu_bf16_flags()), len(jax.devices()))
            return cls(
                stages,
                on_jax.JAX_LOADERS,
                on_jax.measure_jax_stage,
                on_jax.measure_jax_loader,
                (jax.errors.JaxRuntimeError,),
            )
        import tensorflow as tf

        from deblur.timings.loaders import LOADERS, measure_loader
        from deblur.timings.measure import measure_stage

        gpus = [device.name for device in tf.config.list_logical_devices("GPU")]
        stages = plan_stages(
            choose_precision("auto"), gpus, steps_per_call=preset.steps_per_call, multi_devices=multi_devices
        )
        return cls(stages, LOADERS, measure_stage, measure_loader, (tf.errors.OpError,))


def _time_loader(backend: Backend, name: str, pairs, preset: Preset, *, progress: bool, log: Callable[[str], None]):
    loader = backend.measure_loader(
        name,
        pairs,
        patch_size=preset.patch_size,
        batch_size=preset.batch_size,
        batches=preset.loader_batches,
        min_seconds=preset.loader_seconds,
        progress=progress,
    )
    log(f"loader {name}: {loader.patches_per_second:.1f} patches/s")
    return loader


def _time_stage(
    backend: Backend,
    stage: Stage,
    work: Workload,
    settings: dict,
    rates: dict[str, MatmulRate],
    *,
    progress: bool,
    log: Callable[[str], None],
) -> StageResult:
    """One stage's result: measured, or skipped with the reason it cannot run or failed here."""
    if stage.skipped:
        log(f"stage {stage.name}: skipped ({stage.skipped})")
        return skipped_result(stage)
    try:
        result = backend.measure_stage(stage, work, progress=progress)
    except backend.failures as err:
        # E.g. out of memory, or XLA unavailable for an op on this device: recorded, not hidden.
        reason = error_reason(err)
        log(f"stage {stage.name}: failed here ({reason})")
        failed = skipped_result(stage)
        failed.skipped = f"failed on this machine: {reason}"
        return failed
    # A second's work: the share is per replica, as each replica has a device of its own.
    result.gflops, share = achieved(
        settings["train_flops_per_image"] * result.images_per_second, 1.0, rates[compute_dtype(stage)]
    )
    result.matmul_share = share / result.replicas
    log(
        f"stage {stage.name}: {result.images_per_second:.2f} img/s, median step {result.step_ms_median:.0f} ms, "
        f"{result.gflops:.0f} GFLOP/s ({result.matmul_share:.0%} of the matmul rate)"
    )
    return result
