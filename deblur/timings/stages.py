"""The staged optimizations `deblur timings` measures, each adding one to the stage before.

Stages 1-5 follow the article (Keras Sequence -> tf.data -> parallel/cache/prefetch -> mixed precision ->
MirroredStrategy); 6-7 go beyond it. A stage that cannot run on this machine is kept with the reason, and the
stages after it build on the last one that could run.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

import numpy as np

from deblur.config import ModelConfig, TrainConfig
from deblur.data.pairs import Pair
from deblur.errors import SettingError
from deblur.timings.report import StageResult
from deblur.training.precision import PrecisionChoice


@dataclass(frozen=True)
class Setup:
    """Everything a stage's measurement depends on besides the model and data."""

    loader: str = "keras-sequence"  # keras-sequence | tf.data | tf.data-optimized
    policy: str = "float32"
    devices: tuple[str, ...] = ()  # () : one device (the default strategy); else MirroredStrategy over these
    jit_compile: bool = False
    steps_per_call: int = 1
    batch_factor: int = 1  # the workload's batch times this (JAX's larger-batch stage)


@dataclass(frozen=True)
class Stage:
    name: str
    description: str
    setup: Setup
    skipped: str | None = None  # why the stage cannot run here; None when it runs


STAGE_NAMES = (
    "keras-sequence",
    "tf.data",
    "tf.data-optimized",
    "mixed-precision",
    "multi-gpu",
    "xla",
    "steps-per-call",
)


@dataclass(frozen=True)
class Workload:
    """What every stage trains: the same model, data, patch and batch (per replica)."""

    model: ModelConfig
    train: TrainConfig  # learning rate and loss: the optimizer and loss of `deblur train`
    pairs: list[Pair]
    patch_size: int
    batch_size: int
    warmup_steps: int
    steps: int
    seed: int = 0


def measured_result(stage: Stage, durations, waits, global_batch: int, replicas: int) -> StageResult:
    """A stage's result from its timed steps' durations and input waits (None: input taken inside the graph)."""
    durations = np.asarray(durations)
    return StageResult(
        stage.name,
        stage.description,
        images_per_second=global_batch * len(durations) / float(durations.sum()),
        step_ms_median=1000 * float(np.median(durations)),
        step_ms_p90=1000 * float(np.percentile(durations, 90)),
        input_wait_fraction=None if waits is None else float(np.sum(waits) / durations.sum()),
        speedup=None,
        skipped=None,
        settings=asdict(stage.setup),
        replicas=replicas,
        timed_steps=len(durations),
    )


def skipped_result(stage: Stage) -> StageResult:
    return StageResult(stage.name, stage.description, None, None, None, None, None, stage.skipped, asdict(stage.setup))


def plan_stages(
    precision: PrecisionChoice, gpus: list[str], *, steps_per_call: int = 8, multi_devices: list[str] | None = None
) -> list[Stage]:
    """All stages in order, cumulative, with skip reasons for this hardware.

    `precision` is what `choose_precision("auto")` picked here; `gpus` the logical GPU devices. `multi_devices`
    replaces the GPUs for the multi-gpu stage (tests use two logical CPU devices).
    """
    stages = []
    setup = Setup()
    stages.append(Stage("keras-sequence", "Keras PyDataset, Pillow decoding in Python, float32", setup))
    setup = replace(setup, loader="tf.data")
    stages.append(Stage("tf.data", "tf.data: sequential decode and crop, no cache, no prefetch", setup))
    setup = replace(setup, loader="tf.data-optimized")
    stages.append(Stage("tf.data-optimized", "+ parallel map, uint8 cache, prefetch", setup))

    if precision.policy == "float32":
        stages.append(Stage("mixed-precision", "+ mixed precision", setup, skipped=precision.reason))
    else:
        setup = replace(setup, policy=precision.policy)
        stages.append(Stage("mixed-precision", f"+ {precision.policy} ({precision.reason})", setup))

    devices = list(multi_devices) if multi_devices is not None else list(gpus)
    if len(devices) >= 2:
        setup = replace(setup, devices=tuple(devices))
        stages.append(Stage("multi-gpu", f"+ MirroredStrategy over {len(devices)} devices", setup))
    else:
        visible = f"{len(gpus)} GPU{'' if len(gpus) == 1 else 's'} visible"
        stages.append(Stage("multi-gpu", "+ MirroredStrategy", setup, skipped=f"{visible}: needs 2 or more"))

    setup = replace(setup, jit_compile=True)
    stages.append(Stage("xla", "+ XLA (jit_compile=True) on each replica's step", setup))
    setup = replace(setup, steps_per_call=steps_per_call)
    stages.append(
        Stage("steps-per-call", f"+ {steps_per_call} steps per tf.function call, batches taken in the graph", setup)
    )
    return stages


def select_stages(stages: list[Stage], names: list[str] | None) -> list[Stage]:
    """The stages named (None: all), in the canonical order; each keeps the optimizations of the stages before it."""
    if names is None:
        return stages
    known = [stage.name for stage in stages]
    if not names:
        # `--stages ""` (or ",") is a list that names nothing: timing all of them, tens of minutes, was not asked for.
        raise SettingError(
            f"the list of stages is empty: leave it out to time them all, or choose from {', '.join(known)}",
            settings=("stages",),
        )
    unknown = [name for name in names if name not in known]
    if unknown:
        raise SettingError(
            f"unknown stage(s) {', '.join(unknown)}: choose from {', '.join(known)}", settings=("stages",)
        )
    return [stage for stage in stages if stage.name in names]
