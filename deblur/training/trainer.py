"""One custom training loop for every tf.distribute strategy (Keras 3 `fit` breaks under multi-worker).

`train` reads as its phases; `Session` holds the run's state and does each: set-up (strategy first, then
precision, data, model, checkpoint), the next batch (timed, so the input wait is known), one optimizer step (the
loss read back to the host, so the device has finished and a NaN is caught at once), logging, and the end of each
epoch (validation, the metrics row, a checkpoint).
"""

from __future__ import annotations

import contextlib
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
from deblur.console import progress_bar
from deblur.data.file_cache import check_file_cache, claim_file_cache
from deblur.data.pairs import Pair, held_out
from deblur.data.pipeline import PipelineOptions, train_dataset, val_dataset
from deblur.errors import SettingError, error_reason, full_disk_from_tensorflow
from deblur.losses import PIXEL_LOSSES, build_vgg_features, psnr, ssim, step_loss
from deblur.model import build_generator, with_mix
from deblur.training.data_plan import Deadline, StepTimer, epoch_line, plan_data
from deblur.training.errors import StrategyError, TrainingError, TrainingInterrupted
from deblur.training.memory import batch_too_large
from deblur.training.optim import build_optimizer, replica_learning_rate
from deblur.training.precision import choose_precision, set_policy
from deblur.training.recovery import leave_out_unreadable
from deblur.training.result import TrainResult, training_config  # noqa: F401  training_config: its old home
from deblur.training.run_folder import (
    check_run_folder,
    checkpoint_manager,
    claim_run_folder,
    latest_checkpoint,
    load_initial_weights,
    read_metrics,
    refuse_other_backend,
    remove_unfinished_checkpoints,
    resuming_line,
    save_model,
    training_session,
    weights_fingerprint,
    write_metrics,
)
from deblur.training.step import make_train_step
from deblur.training.strategy import make_strategy, split_cpu
from deblur.training.validation import validate


def train(config: Config, out_dir: str | Path, *, progress: bool = True, log: Callable = print) -> TrainResult:
    """Train the generator as `config` says, in `out_dir`, resuming from its latest checkpoint if any."""
    with training_session(lambda held: Session(config, Path(out_dir), progress, log, held)) as session:
        while session.step < session.total_steps and not session.out_of_time:
            epoch = session.start_epoch()
            while not epoch.done:
                # next batch (input rebuilt without files that became unreadable), one optimizer step, log
                started = time.perf_counter()
                blurry, sharp = session.next_batch()
                fetched = time.perf_counter()
                loss = session.optimize(blurry, sharp)
                session.record(epoch, loss, started, fetched, time.perf_counter())
            session.end_epoch(epoch)  # validation, the metrics row, a checkpoint
        return session.finish()


@dataclass
class Epoch:
    index: int
    bar: tqdm
    losses: list[float] = field(default_factory=list)
    images: int = 0  # in the timed steps
    seconds: float = 0.0  # of the timed steps
    done: bool = False


class Session:
    """One training run's state, set up in the order TensorFlow needs, with one method per phase of a step."""

    def __init__(self, config: Config, out_dir: Path, progress: bool, log: Callable, held: contextlib.ExitStack):
        """`held` keeps the run folder's lock (the chief's) until the caller's run ends."""
        self.config, self.progress, self.log, self.held = config, progress, log, held
        self.training, self.data = config.train, config.data
        if self.data.device_pairs:
            raise SettingError(
                "data.device_pairs makes pairs in the JAX loop, for accelerators: run with KERAS_BACKEND=jax, or "
                "make the pairs with deblur data synth",
                settings=("KERAS_BACKEND",),
            )
        self.deadline = Deadline(self.training.max_minutes)
        # Every worker checks the folder before the strategy joins them (making it waits for all): the chief
        # writes into it only after, so a slower worker never finds its config half-written and refuses the run.
        self.run = check_run_folder(out_dir, config)
        refuse_other_backend(self.run, "tensorflow")
        check_file_cache(self.data.cache)
        if self.training.cpu_replicas > 1:
            split_cpu(self.training.cpu_replicas)
        # The strategy comes first: MultiWorkerMirroredStrategy must be made before other TensorFlow work.
        self.distribution = make_strategy(self.training.strategy, self.training.devices)
        if self.training.cpu_replicas > 1 and self.distribution.name == "default":  # the split went unused
            raise StrategyError(
                f"train.cpu_replicas={self.training.cpu_replicas} splits the CPU into devices for --strategy mirrored, "
                f"and --strategy {self.training.strategy} trains on one device here: set --strategy mirrored, or leave "
                "train.cpu_replicas unset"
            )
        self.strategy = self.distribution.strategy
        self.replicas = self.strategy.num_replicas_in_sync
        log(f"strategy: {self.distribution.description}")
        self.precision = choose_precision(self.training.precision)
        set_policy(self.precision.policy)
        log(f"precision: {self.precision.policy} ({self.precision.reason})")
        keras.utils.set_random_seed(self.training.seed)
        self._find_data()
        self._build_model()
        self._check_memory()
        self._restore()
        self.batches = iter(self.strategy.distribute_datasets_from_function(self._dataset))
        self.validation = val_dataset(self.val_pairs, crop=self.data.val_crop, parallel=self.data.parallel)
        self.train_step = make_train_step(
            with_mix(self.model) if self.training.mix_weight else self.model,
            self.optimizer,
            self.strategy,
            self.loss,
            self.global_batch,
            jit_compile=self.training.jit_compile,
        )
        chief = self.distribution.is_chief
        self.writer = tf.summary.create_file_writer(str(self.run.logs)) if chief else tf.summary.create_noop_writer()
        self.metrics = read_metrics(self.run, self.step // self.steps_per_epoch)
        self.timer = StepTimer()
        self.bar: tqdm | None = None

    # === Set-up ===

    def _find_data(self) -> None:
        plan = plan_data(
            self.config,
            self.replicas,
            progress=self.progress,
            log=self.log,
            # the chief is the run folder's only writer
            on_checked=lambda: (
                claim_run_folder(self.run, self.config, self.held) if self.distribution.is_chief else None
            ),
        )
        self.train_pairs, self.val_pairs, self.skipped = plan.train_pairs, plan.val_pairs, plan.skipped
        self.global_batch, self.steps_per_epoch, self.total_steps = (
            plan.global_batch,
            plan.steps_per_epoch,
            plan.total_steps,
        )

    def _build_model(self) -> None:
        training = self.training
        learning_rate = replica_learning_rate(training, self.replicas, self.log)
        with self.strategy.scope():
            self.model = build_generator(**asdict(self.config.model))
            self.optimizer = build_optimizer(training, self.total_steps, self.precision.policy, learning_rate)
            self.optimizer.build(self.model.trainable_variables)
            self.step_counter = tf.Variable(0, dtype=tf.int64, trainable=False, name="step")
            wants_vgg = training.perceptual_weight > 0
            self.features = build_vgg_features(training.vgg_weights or "") if wants_vgg else None
        self.pixel_loss = PIXEL_LOSSES[training.loss]
        self.loss = step_loss(
            self.pixel_loss,
            mix_weight=training.mix_weight,
            features=self.features,
            perceptual_weight=training.perceptual_weight,
        )
        model = self.model

        @tf.function(reduce_retracing=True, jit_compile=False)
        def eval_step(blurry, sharp):
            restored = model(blurry, training=False)
            photo = blurry[..., :3]  # the kernel-aware network's input also holds the deconvolution
            scores = (psnr(sharp, restored), ssim(sharp, restored), psnr(sharp, photo), ssim(sharp, photo))
            return scores, restored

        self.eval_step = eval_step

    def _check_memory(self) -> None:
        """Say, before the first step, a batch this CPU's memory cannot hold: it had been killed with no word."""
        if tf.config.list_logical_devices("GPU"):  # a GPU's memory is its own, and TensorFlow names its exhaustion
            return
        local = 1 if self.distribution.name == "default" else len(self.strategy.extended.worker_devices)
        local_batch = self.data.batch_size * local  # this machine's replicas
        compute = keras.DTypePolicy(self.precision.policy).compute_dtype
        if warning := batch_too_large(self.model, self.data.patch_size, local_batch, compute):
            self.log(f"warning: {warning}")

    def _restore(self) -> None:
        self.checkpoint = tf.train.Checkpoint(model=self.model, optimizer=self.optimizer, step=self.step_counter)
        self.manager = checkpoint_manager(
            self.checkpoint,
            self.run,
            is_chief=self.distribution.is_chief,
            task=self.distribution.task,
            keep=self.training.keep_checkpoints,
        )
        resume_from = latest_checkpoint(self.run)
        if resume_from:
            self.checkpoint.restore(resume_from).assert_existing_objects_matched()
            self.log(resuming_line(resume_from, int(self.step_counter.numpy()), self.total_steps, self.training.init))
        elif self.training.init:
            source = load_initial_weights(self.model, self.training.init, self.config)
            self.log(f"starting from the weights of {source} (train.init={self.training.init})")
        self.step = self.start_step = int(self.step_counter.numpy())

    def _dataset(self, context: tf.distribute.InputContext) -> tf.data.Dataset:
        data = self.data
        pipelines = context.num_input_pipelines
        part = f"-{context.input_pipeline_id + 1}of{pipelines}" if pipelines > 1 else ""
        cache = claim_file_cache(data.cache, self.train_pairs, self.held, part)
        if cache != data.cache:
            finished = Path(f"{cache}.index").exists()
            self.log(f"data.cache: {'reading' if finished else 'writing, in the first pass,'} {cache}.*")
        return train_dataset(
            self.train_pairs,  # read at each (re)build: files found unreadable later are left out
            patch_size=data.patch_size,
            batch_size=context.get_per_replica_batch_size(self.global_batch),
            seed=self.training.seed + self.start_step,  # a resumed run draws new patches, not the first ones again
            options=PipelineOptions(data.parallel, cache, data.prefetch, data.augment),
            num_shards=context.num_input_pipelines,
            shard_index=context.input_pipeline_id,
        )

    # === The phases of a step ===

    def start_epoch(self) -> Epoch:
        index = self.step // self.steps_per_epoch
        self.bar = progress_bar(
            total=self.steps_per_epoch,
            initial=self.step % self.steps_per_epoch,
            desc=f"epoch {index + 1}/{self.training.epochs}",
            unit="step",
            disable=not self.progress,
            dynamic_ncols=True,
        )
        return Epoch(index, self.bar)

    def next_batch(self):
        """The next distributed batch; a file that became unreadable is left out (or named) and the input rebuilt."""
        while True:
            if self.training.profile_batch == self.step + 1 and self.distribution.is_chief:
                tf.profiler.experimental.start(str(self.run.logs))
            try:
                return next(self.batches)
            except tf.errors.OpError as err:
                self.train_pairs, broken = leave_out_unreadable(
                    err, self.train_pairs, self.data.skip_bad_images, self.step, self.manager.latest_checkpoint
                )
                self.skipped += broken
                self.log(f"\nskipping {len(broken)} file(s) that became unreadable: " + "; ".join(broken[:5]))
                self.batches = iter(self.strategy.distribute_datasets_from_function(self._dataset))

    def optimize(self, blurry, sharp) -> float:
        """One optimizer step; the loss is read back to the host, so the device has finished and a NaN is seen."""
        try:
            loss = float(self.train_step(blurry, sharp))
        except (tf.errors.UnavailableError, tf.errors.CancelledError) as err:
            # Another worker died: collective operations cannot complete without it.
            raise TrainingError(
                f"training stopped at step {self.step}: another worker is gone ({error_reason(err)}). The last "
                f"checkpoint ({self.manager.latest_checkpoint or 'none yet'}) is kept: start every worker again "
                "with the same command to resume."
            ) from None
        if self.training.profile_batch == self.step + 1 and self.distribution.is_chief:
            tf.profiler.experimental.stop()
        self.step += 1
        self.step_counter.assign(self.step)
        if not math.isfinite(loss):
            raise TrainingError(
                f"the loss became {loss} at step {self.step}; training stopped. The last good checkpoint "
                f"({self.manager.latest_checkpoint or 'none yet'}) is kept. Try a lower train.learning_rate."
            )
        return loss

    def record(self, epoch: Epoch, loss: float, started: float, fetched: float, finished: float) -> None:
        """Timing, the progress bar and TensorBoard; then the epoch's end, or a checkpoint when one is due."""
        if self.timer.record(started, fetched, finished):  # the process's first step includes tracing: not timed
            epoch.images += self.global_batch
            epoch.seconds += finished - started
        epoch.losses.append(loss)
        speed = epoch.images / epoch.seconds if epoch.seconds else 0.0
        epoch.bar.set_postfix(loss=f"{loss:.4f}", img_s=f"{speed:.1f}")
        epoch.bar.update(1)
        if self.step % 10 == 0:
            with self.writer.as_default(step=self.step):
                tf.summary.scalar("train/loss", loss)
                tf.summary.scalar(
                    "train/learning_rate", float(keras.ops.convert_to_numpy(self.optimizer.learning_rate))
                )
                tf.summary.scalar("train/images_per_second", speed)
        epoch.done = self.step % self.steps_per_epoch == 0 or self.step == self.total_steps or self.out_of_time
        if not epoch.done and self.step % self.training.checkpoint_every == 0:
            self.save()

    def end_epoch(self, epoch: Epoch) -> None:
        epoch.bar.close()
        scores, samples = self._validate()
        row = {
            "epoch": epoch.index + 1,
            "step": self.step,
            "loss": float(np.mean(epoch.losses)),
            **scores,
            "images_per_second": round(epoch.images / epoch.seconds, 3) if epoch.seconds else None,
        }
        self.log(epoch_line(row))
        self.metrics.append(row)
        # Metrics before the checkpoint: a crash in between replays the epoch and rewrites its row.
        if self.distribution.is_chief:
            write_metrics(self.run, self.metrics)
        with self.writer.as_default(step=self.step):
            for key in ("val_psnr", "val_ssim", "val_psnr_blurry", "val_ssim_blurry"):
                tf.summary.scalar(f"val/{key.removeprefix('val_')}", row[key])
            if samples is not None:
                tf.summary.image("val/blurry_restored_sharp", samples, max_outputs=self.training.log_images)
        self.save()

    def _validate(self):
        try:
            return validate(self.eval_step, self.validation, self.training.log_images)
        except tf.errors.OpError as err:
            self.val_pairs, broken = leave_out_unreadable(
                err, self.val_pairs, self.data.skip_bad_images, self.step, self.manager.latest_checkpoint
            )
            self.skipped += broken
            self.validation = val_dataset(self.val_pairs, crop=self.data.val_crop, parallel=self.data.parallel)
            return validate(self.eval_step, self.validation, self.training.log_images)

    def save(self) -> str:
        """A checkpoint at this step. A full disk is raised as the OSError it is (TensorFlow says
        ResourceExhaustedError), which the command says in one line, what was written of the checkpoint removed."""
        try:
            return self.manager.save(checkpoint_number=self.step)
        except tf.errors.ResourceExhaustedError as err:
            if (full := full_disk_from_tensorflow(err, self.manager.directory)) is None:
                raise
            remove_unfinished_checkpoints(Path(self.manager.directory))
            raise full from err

    # === The end ===

    def interrupted(self) -> TrainingInterrupted:
        if self.bar is not None:
            self.bar.close()
        saved = self.save()
        return TrainingInterrupted(
            f"interrupted at step {self.step}; checkpoint {saved} saved. Run the same command again to resume."
        )

    @property
    def out_of_time(self) -> bool:
        """Past `train.max_minutes`, once this process has taken a step: a run always moves on."""
        return self.deadline.passed and self.step > self.start_step

    def finish(self) -> TrainResult:
        self.writer.flush()
        if self.step < self.total_steps:
            self.log(self.deadline.stopped_line(self.step, self.total_steps))
        # Equal on every worker of a multi-worker run: a cheap check that they trained one model in step.
        self.log(f"final weights fingerprint: {weights_fingerprint(self.model)}")
        model_path = None
        if self.distribution.is_chief:
            model_path = save_model(self.model, self.config, self.run)
            self.log(f"saved {model_path} and {self.run.config}")
        else:  # this worker's own checkpoints were only needed for the collective saves
            shutil.rmtree(self.manager.directory, ignore_errors=True)
        return TrainResult(
            out_dir=self.run.root,
            model=self.model,
            model_path=model_path,
            metrics=self.metrics,
            step=self.step,
            replicas=self.replicas,
            precision=self.precision.policy,
            input_wait_fraction=self.timer.wait_fraction,
            timed_steps=self.timer.steps,
            skipped=self.skipped,
            example=_held_out_photo(self.train_pairs, self.val_pairs),
        )


def _held_out_photo(train_pairs: list[Pair], val_pairs: list[Pair]) -> Path | None:
    """The first blurry photo that training never saw (data of one pair validates on it: none)."""
    unseen = held_out(train_pairs, val_pairs)
    return unseen[0].blurry.resolve() if unseen else None
