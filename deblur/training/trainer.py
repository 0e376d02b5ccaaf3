"""One custom training loop for every tf.distribute strategy (Keras 3 `fit` breaks under multi-worker).

Each step: take the next distributed batch (timed, so the input wait is known), run the replicated step, read
the loss back to the host (so the device has finished, and a NaN is caught at once).
"""

from __future__ import annotations

import math
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf
from tqdm import tqdm

from deblur.config import Config
from deblur.data.demo import ensure_demo_dataset
from deblur.data.pairs import check_pairs, preflight, problem_listing, split_unreadable
from deblur.data.pipeline import PipelineOptions, train_dataset, val_dataset
from deblur.errors import DeblurError
from deblur.losses import PIXEL_LOSSES, build_vgg_features, perceptual_loss, psnr, ssim
from deblur.model import build_generator
from deblur.training.checkpoints import (
    check_run_folder,
    checkpoint_manager,
    export_model,
    latest_checkpoint,
    read_metrics,
    record_config,
    weights_fingerprint,
    write_metrics,
)
from deblur.training.errors import error_reason
from deblur.training.optim import build_optimizer, scaled_learning_rate
from deblur.training.precision import choose_precision, set_policy
from deblur.training.step import make_train_step
from deblur.training.strategy import make_strategy, split_cpu
from deblur.training.validation import validate


class TrainingError(DeblurError, RuntimeError):
    """Training stopped; the message says why and what was kept."""


class TrainingInterrupted(TrainingError):
    exit_code = 130  # as a shell reports Ctrl-C


@dataclass
class TrainResult:
    out_dir: Path
    model: keras.Model  # the trained model, as trained (under the training strategy and precision)
    model_path: Path | None  # None on workers other than the chief
    metrics: list[dict]
    step: int
    replicas: int
    precision: str
    input_wait_fraction: float  # of the timed training steps in this process
    timed_steps: int
    skipped: list[str] = field(default_factory=list)  # unreadable files left out (data.skip_bad_images)


def train(config: Config, out_dir: str | Path, *, progress: bool = True, log: Callable = print) -> TrainResult:
    """Train the generator as `config` says, in `out_dir`, resuming from its latest checkpoint if any."""
    tcfg, dcfg = config.train, config.data
    if tcfg.cpu_replicas > 1:
        split_cpu(tcfg.cpu_replicas)
    # The strategy comes first: MultiWorkerMirroredStrategy must be made before other TensorFlow work.
    dist = make_strategy(tcfg.strategy, tcfg.devices)
    strategy = dist.strategy
    replicas = strategy.num_replicas_in_sync
    log(f"strategy: {dist.description}")
    precision = choose_precision(tcfg.precision)
    set_policy(precision.policy)
    log(f"precision: {precision.policy} ({precision.reason})")
    keras.utils.set_random_seed(tcfg.seed)

    run = check_run_folder(Path(out_dir), config)
    root = dcfg.root or ensure_demo_dataset(dcfg.synth, log=log)
    splits = preflight(root, dcfg.patch_size, progress=progress, skip_unreadable=dcfg.skip_bad_images)
    skipped = list(splits.skipped)
    if skipped:
        log(f"skipping {len(skipped)} unreadable file(s) (data.skip_bad_images): " + "; ".join(skipped[:5]))
    train_pairs = splits.train
    if dist.is_chief:  # only once the data has passed: a failed check leaves no run folder behind
        record_config(run, config)
    val_pairs = splits.val[: dcfg.val_limit] if dcfg.val_limit else splits.val
    global_batch = dcfg.batch_size * replicas
    steps_per_epoch = tcfg.steps_per_epoch or max(1, len(splits.train) // global_batch)
    total_steps = steps_per_epoch * tcfg.epochs
    log(
        f"data: {root} ({splits.layout} layout): {len(splits.train)} training pairs, {len(val_pairs)} validation; "
        f"global batch {global_batch} = {dcfg.batch_size} per replica x {replicas} replica(s)"
    )

    options = PipelineOptions(dcfg.parallel, dcfg.cache, dcfg.prefetch, dcfg.augment)

    learning_rate = scaled_learning_rate(tcfg.learning_rate, replicas, tcfg.lr_scaling)
    if replicas > 1:
        log(
            f"learning rate {tcfg.learning_rate:g} for one replica -> {learning_rate:g} for {replicas} "
            f"(train.lr_scaling={tcfg.lr_scaling})"
        )
    with strategy.scope():
        model = build_generator(**asdict(config.model))
        optimizer = build_optimizer(tcfg, total_steps, precision.policy, learning_rate)
        optimizer.build(model.trainable_variables)
        step_counter = tf.Variable(0, dtype=tf.int64, trainable=False, name="step")
        features = build_vgg_features(tcfg.vgg_weights or "") if tcfg.perceptual_weight > 0 else None
    pixel_loss = PIXEL_LOSSES[tcfg.loss]

    checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer, step=step_counter)
    manager = checkpoint_manager(checkpoint, run, is_chief=dist.is_chief, task=dist.task, keep=tcfg.keep_checkpoints)
    resume_from = latest_checkpoint(run)
    if resume_from:
        checkpoint.restore(resume_from).assert_existing_objects_matched()
        log(f"resuming from {resume_from} at step {int(step_counter.numpy())}")
    start_step = int(step_counter.numpy())

    def dataset_fn(context: tf.distribute.InputContext) -> tf.data.Dataset:
        return train_dataset(
            train_pairs,  # read at each (re)build: files found unreadable later are left out
            patch_size=dcfg.patch_size,
            batch_size=context.get_per_replica_batch_size(global_batch),
            seed=tcfg.seed + start_step,  # a resumed run draws new patches, not the first ones again
            options=options,
            num_shards=context.num_input_pipelines,
            shard_index=context.input_pipeline_id,
        )

    batches = iter(strategy.distribute_datasets_from_function(dataset_fn))
    validation = val_dataset(val_pairs, crop=dcfg.val_crop, parallel=dcfg.parallel)

    def loss_fn(sharp, restored):
        per_image = pixel_loss(sharp, restored)
        if features is not None:
            per_image += tcfg.perceptual_weight * perceptual_loss(features, sharp, restored)
        return per_image

    train_step = make_train_step(model, optimizer, strategy, loss_fn, global_batch, jit_compile=tcfg.jit_compile)

    @tf.function(reduce_retracing=True, jit_compile=False)
    def eval_step(blurry, sharp):
        restored = model(blurry, training=False)
        return (psnr(sharp, restored), ssim(sharp, restored), psnr(sharp, blurry), ssim(sharp, blurry)), restored

    writer = tf.summary.create_file_writer(str(run.logs)) if dist.is_chief else tf.summary.create_noop_writer()
    step = start_step
    metrics = read_metrics(run, step // steps_per_epoch)
    timer = _StepTimer()
    bar = None

    try:
        while step < total_steps:
            epoch = step // steps_per_epoch
            losses, images, epoch_seconds = [], 0, 0.0
            bar = tqdm(
                total=steps_per_epoch,
                initial=step % steps_per_epoch,
                desc=f"epoch {epoch + 1}/{tcfg.epochs}",
                unit="step",
                disable=not progress,
                dynamic_ncols=True,
            )
            while True:
                if tcfg.profile_batch == step + 1 and dist.is_chief:
                    tf.profiler.experimental.start(str(run.logs))
                started = time.perf_counter()
                try:
                    blurry, sharp = next(batches)
                except tf.errors.OpError as err:
                    train_pairs, broken = _leave_out_unreadable(err, train_pairs, dcfg.skip_bad_images, step, manager)
                    skipped += broken
                    log(f"\nskipping {len(broken)} file(s) that became unreadable: " + "; ".join(broken[:5]))
                    batches = iter(strategy.distribute_datasets_from_function(dataset_fn))
                    continue
                fetched = time.perf_counter()
                try:
                    loss = float(train_step(blurry, sharp))
                except (tf.errors.UnavailableError, tf.errors.CancelledError) as err:
                    # Another worker died: collective operations cannot complete without it.
                    raise TrainingError(
                        f"training stopped at step {step}: another worker is gone ({error_reason(err)}). The last "
                        f"checkpoint ({manager.latest_checkpoint or 'none yet'}) is kept: start every worker again "
                        "with the same command to resume."
                    ) from None
                finished = time.perf_counter()
                if tcfg.profile_batch == step + 1 and dist.is_chief:
                    tf.profiler.experimental.stop()
                step += 1
                step_counter.assign(step)
                if not math.isfinite(loss):
                    raise TrainingError(
                        f"the loss became {loss} at step {step}; training stopped. The last good checkpoint "
                        f"({manager.latest_checkpoint or 'none yet'}) is kept. Try a lower train.learning_rate."
                    )
                # The first step of a process includes tracing the step function: not a fair timing.
                if timer.record(started, fetched, finished):
                    images += global_batch
                    epoch_seconds += finished - started
                losses.append(loss)
                speed = images / epoch_seconds if epoch_seconds else 0.0
                bar.set_postfix(loss=f"{loss:.4f}", img_s=f"{speed:.1f}")
                bar.update(1)
                if step % 10 == 0:
                    with writer.as_default(step=step):
                        tf.summary.scalar("train/loss", loss)
                        tf.summary.scalar(
                            "train/learning_rate", float(keras.ops.convert_to_numpy(optimizer.learning_rate))
                        )
                        tf.summary.scalar("train/images_per_second", speed)
                if step % steps_per_epoch == 0 or step == total_steps:
                    break
                if step % tcfg.checkpoint_every == 0:
                    manager.save(checkpoint_number=step)
            bar.close()

            try:
                scores, samples = validate(eval_step, validation, tcfg.log_images)
            except tf.errors.OpError as err:
                val_pairs, broken = _leave_out_unreadable(err, val_pairs, dcfg.skip_bad_images, step, manager)
                skipped += broken
                validation = val_dataset(val_pairs, crop=dcfg.val_crop, parallel=dcfg.parallel)
                scores, samples = validate(eval_step, validation, tcfg.log_images)
            row = {
                "epoch": epoch + 1,
                "step": step,
                "loss": float(np.mean(losses)),
                **scores,
                "images_per_second": round(images / epoch_seconds, 3) if epoch_seconds else None,
            }
            log(
                f"epoch {epoch + 1}: loss {row['loss']:.4f}, val PSNR {row['val_psnr']:.2f} dB "
                f"(blurry {row['val_psnr_blurry']:.2f}), SSIM {row['val_ssim']:.4f} "
                f"(blurry {row['val_ssim_blurry']:.4f}), {row['images_per_second'] or 0:.1f} img/s"
            )
            metrics.append(row)
            # Metrics before the checkpoint: a crash in between replays the epoch and rewrites its row.
            if dist.is_chief:
                write_metrics(run, metrics)
            with writer.as_default(step=step):
                for key in ("val_psnr", "val_ssim", "val_psnr_blurry", "val_ssim_blurry"):
                    tf.summary.scalar(f"val/{key.removeprefix('val_')}", row[key])
                if samples is not None:
                    tf.summary.image("val/blurry_restored_sharp", samples, max_outputs=tcfg.log_images)
            manager.save(checkpoint_number=step)
    except KeyboardInterrupt:
        if bar is not None:
            bar.close()
        saved = manager.save(checkpoint_number=step)
        raise TrainingInterrupted(
            f"interrupted at step {step}; checkpoint {saved} saved. Run the same command again to resume."
        ) from None
    writer.flush()
    # Equal on every worker of a multi-worker run: a cheap check that they trained one model in step.
    log(f"final weights fingerprint: {weights_fingerprint(model)}")

    model_path = None
    if dist.is_chief:
        model_path = export_model(model, config, run)
        log(f"saved {model_path} and {run.config}")
    else:  # this worker's own checkpoints were only needed for the collective saves
        shutil.rmtree(manager.directory, ignore_errors=True)
    return TrainResult(
        run.root,
        model,
        model_path,
        metrics,
        step,
        replicas,
        precision.policy,
        timer.wait_fraction,
        timer.steps,
        skipped,
    )


def _leave_out_unreadable(err: tf.errors.OpError, pairs, skip: bool, step: int, manager):
    """After a read error: with `skip`, the pairs still readable and the files that are not; otherwise, or when
    nothing (or everything) turns out unreadable, a TrainingError naming the files."""
    if skip:
        readable, broken = split_unreadable(pairs, deep=True, progress=False)
        if broken and readable:
            return readable, broken
    raise _data_error(err, pairs, step, manager) from None


def _data_error(err: tf.errors.OpError, pairs, step: int, manager) -> TrainingError:
    """A clear error for data that broke after the pre-flight check: decode every file again to name them."""
    broken = check_pairs(pairs, deep=True, progress=False)
    listing = problem_listing(broken) or "  (all files decode now; see the error)"
    first_line = (err.message or str(err)).strip().splitlines()[0]
    if "transformation with iterator" in first_line:  # tf.data's wrapper; what went wrong is the last part
        first_line = first_line.rsplit(": ", 1)[-1]
    return TrainingError(
        f"reading the data failed at step {step}: {first_line}\n{listing}\nThe last checkpoint "
        f"({manager.latest_checkpoint or 'none yet'}) is kept: fix or remove these files and run the same command "
        "to resume."
    )


class _StepTimer:
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
