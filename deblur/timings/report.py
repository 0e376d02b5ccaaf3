"""What `deblur timings` measures: per stage, per loader, and the whole report. A leaf module: the measuring, the
table and the chart all read these types, and none of them is imported here."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field

from deblur.errors import DeblurError
from deblur.timings.flops import MatmulRate

# The article's workload: 5 epochs x 200 steps of batch 4. Stage times are scaled to it so they read like its chart.
ARTICLE_STEPS = 5 * 200


class TimingsError(DeblurError, RuntimeError):
    """The timings cannot be made or would mean nothing."""


@dataclass
class StageResult:
    name: str
    description: str
    images_per_second: float | None
    step_ms_median: float | None
    step_ms_p90: float | None
    input_wait_fraction: float | None  # None where input is taken inside the graph (steps-per-call)
    speedup: float | None  # against the first stage measured (normally keras-sequence)
    skipped: str | None
    settings: dict
    replicas: int = 1
    timed_steps: int = 0
    gflops: float | None = None  # the model's training arithmetic per second (3x the forward pass)
    matmul_share: float | None = None  # of the matmul rate in the stage's compute dtype, measured in the same run


@dataclass
class LoaderResult:
    name: str
    patches_per_second: float
    batches: int  # timed: at least the preset's, and at least its min_seconds' worth
    warmup_batches: int  # not timed: for the optimized loader, enough to fill its cache


@dataclass
class TimingsReport:
    device: dict
    preset: str
    settings: dict
    stages: list[StageResult]
    pipeline: list[LoaderResult]
    equivalent_workload: str
    matmul: dict[str, MatmulRate] = field(default_factory=dict)  # by compute dtype
    created: str = field(default_factory=lambda: time.strftime("%Y-%m-%dT%H:%M:%S%z"))

    def to_json(self) -> dict:
        stages = []
        for stage in self.stages:
            row = asdict(stage)
            seconds = self.equivalent_seconds(stage)
            row["equivalent_seconds"] = None if seconds is None else round(seconds, 1)
            stages.append(row)
        return {
            "device": self.device,
            "preset": self.preset,
            "settings": self.settings,
            "equivalent_workload": self.equivalent_workload,
            "stages": stages,
            "pipeline": [asdict(loader) for loader in self.pipeline],
            "matmul_gflops": {dtype: round(rate.gflops, 1) for dtype, rate in self.matmul.items()},
            "created": self.created,
        }

    def fastest(self) -> StageResult | None:
        """The measured stage with the most images per second: what the model can consume at best."""
        measured = [stage for stage in self.stages if stage.images_per_second]
        return max(measured, key=lambda stage: stage.images_per_second) if measured else None

    def equivalent_seconds(self, stage: StageResult) -> float | None:
        """Seconds for the article's workload (1000 steps of the per-replica batch) at the stage's speed."""
        if stage.images_per_second is None:
            return None
        return ARTICLE_STEPS * self.settings["batch_size"] / stage.images_per_second
