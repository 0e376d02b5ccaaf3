"""What a training run reads and for how long: the checked pairs, the global batch and the steps. TensorFlow's loop
and JAX's both start from it, time their steps with the same timer, and end each epoch with the same line."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from deblur.config import Config
from deblur.data.check import seen_in_training, seen_line
from deblur.data.demo import ensure_demo_dataset
from deblur.data.pairs import Pair, check_deconvolved, check_not_held_out, preflight, without_deconvolved
from deblur.errors import SettingError


@dataclass
class DataPlan:
    train_pairs: list[Pair]
    val_pairs: list[Pair]
    skipped: list[str]  # unreadable files left out (data.skip_bad_images)
    global_batch: int
    steps_per_epoch: int
    total_steps: int


def plan_data(
    config: Config, replicas: int, *, progress: bool, log: Callable[[str], None], on_checked: Callable[[], None]
) -> DataPlan:
    """Find and check the data (the embedded demo when no root is set), then size the run for `replicas`.
    `on_checked` runs once the data has passed: a failed check leaves no run folder behind."""
    data, training = config.data, config.train
    root = data.root or ensure_demo_dataset(data.synth, log=log)
    check_not_held_out(root)
    splits = preflight(root, data.patch_size, progress=progress, skip_unreadable=data.skip_bad_images)
    if config.model.kernel_aware:
        check_deconvolved(splits.train + splits.val, root)
    elif any(pair.deconvolved for pair in splits.train):  # a plain network reads blurry and sharp only
        log("the pairs' deconvolutions are left unread: model.kernel_aware is false (a plain network)")
        splits = replace(splits, train=without_deconvolved(splits.train), val=without_deconvolved(splits.val))
    skipped = list(splits.skipped)
    if skipped:
        log(f"skipping {len(skipped)} unreadable file(s) (data.skip_bad_images): " + "; ".join(skipped[:5]))
    global_batch = data.batch_size * replicas
    steps_per_epoch = training.steps_per_epoch or max(1, len(splits.train) // global_batch)
    last = steps_per_epoch * training.epochs
    if training.profile_batch is not None and not 1 <= training.profile_batch <= last:  # it was never traced
        raise SettingError(
            f"train.profile_batch {training.profile_batch} is no step of this run (1 to {last}: {training.epochs} "
            f"epoch(s) of {steps_per_epoch} steps): give one of them, or leave it unset"
        )
    if (warmup := training.warmup_within(last)) < training.warmup_steps:  # shortened, which went without a word
        log(
            f"train.warmup_steps {training.warmup_steps} is as long as this run ({last} steps): the warm-up is "
            f"shortened to {warmup} and the learning rate reaches train.learning_rate only at the last step"
        )
    on_checked()
    val_pairs = splits.val[: data.val_limit] if data.val_limit else splits.val
    log(
        f"data: {root} ({splits.layout} layout): {len(splits.train)} training pairs, {len(val_pairs)} "
        f"validation; global batch {global_batch} = {data.batch_size} per replica x {replicas} replica(s)"
    )
    if seen := seen_in_training(splits.train, splits.held_out):
        log(seen_line(seen))
    return DataPlan(splits.train, val_pairs, skipped, global_batch, steps_per_epoch, last)


def epoch_line(row: dict) -> str:
    """The log line of a finished epoch's metrics row. An epoch of one step after a (re)start has no speed: a
    process's first step compiles and is not timed, and 0.0 img/s would read as a stall."""
    speed = row["images_per_second"]
    return (
        f"epoch {row['epoch']}: loss {row['loss']:.4f}, val PSNR {row['val_psnr']:.2f} dB "
        f"(blurry {row['val_psnr_blurry']:.2f}), SSIM {row['val_ssim']:.4f} "
        f"(blurry {row['val_ssim_blurry']:.4f}), "
        + (f"{speed:.1f} img/s" if speed else "speed not timed (only the first step, which compiles)")
    )


class StepTimer:
    """Sums input-wait and step time over the steps after the first of this process."""

    def __init__(self) -> None:
        self.steps = -1
        self.wait = 0.0
        self.total = 0.0

    def record(self, started: float, fetched: float, finished: float) -> bool:
        self.steps += 1
        if self.steps == 0:
            return False
        self.wait += fetched - started
        self.total += finished - started
        return True

    @property
    def wait_fraction(self) -> float:
        return self.wait / self.total if self.total else 0.0


class Deadline:
    """When a run with `train.max_minutes` stops: that long after it was made (None: never)."""

    def __init__(self, minutes: float | None) -> None:
        self.minutes = minutes
        self.ends = None if minutes is None else time.monotonic() + 60 * minutes

    @property
    def passed(self) -> bool:
        return self.ends is not None and time.monotonic() >= self.ends

    def stopped_line(self, step: int, total: int) -> str:
        return (
            f"stopped at the time limit (train.max_minutes={self.minutes:g}) after {step} of {total} steps; "
            "run the same command with --out on this run folder to go on"
        )
