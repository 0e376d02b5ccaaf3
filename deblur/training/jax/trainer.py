"""`deblur train` under `KERAS_BACKEND=jax`: the same configs, run folder, metrics and resuming as TensorFlow's loop,
as one jitted, stateless step (`model.stateless_call`, `optimizer.stateless_apply`).

TensorFlow's custom loop with tf.data and `tf.distribute` stays the reference (`deblur.training.trainer`); this
room is what runs where TensorFlow is missing, on GPUs in particular. It imports no TensorFlow. Several devices
train data-parallel through `keras.distribution.DataParallel` (train.strategy auto or mirrored); the precision is
chosen as for TensorFlow, except that GPUs with bfloat16 (compute capability 8.0 and newer) train in it.
TensorBoard logs are TensorFlow's: here the run's record is metrics.jsonl.
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

import jax
import keras
import numpy as np

from deblur.config import Config
from deblur.console import progress_bar
from deblur.data.device_pairs import check_patch_size
from deblur.data.file_cache import NOT_FILES
from deblur.data.pairs import problem_listing, split_unreadable
from deblur.errors import SettingError
from deblur.losses import PIXEL_LOSSES, build_vgg_features, step_loss
from deblur.model import build_generator, with_mix
from deblur.training.data_plan import Deadline, StepTimer, epoch_line, plan_data
from deblur.training.errors import RunFolderError, StrategyError, TrainingError, TrainingInterrupted
from deblur.training.jax.batches import device_draws, training_batches, validation_images
from deblur.training.jax.checkpoints import (
    GROUPS,
    checkpoint_path,
    load_checkpoint,
    save_checkpoint,
    saved_steps,
)
from deblur.training.jax.step import initial_state, make_eval_step, make_pair_maker, make_train_step, variables_of
from deblur.training.memory import batch_too_large
from deblur.training.optim import build_optimizer, replica_learning_rate
from deblur.training.precision import choose_precision, set_policy
from deblur.training.result import TrainResult
from deblur.training.run_folder import (
    check_run_folder,
    claim_run_folder,
    load_initial_weights,
    read_metrics,
    refuse_other_backend,
    resuming_line,
    save_model,
    training_session,
    weights_fingerprint,
    write_metrics,
)


def train(config: Config, out_dir: str | Path, *, progress: bool = True, log: Callable = print) -> TrainResult:
    """Train the generator as `config` says, in `out_dir`, resuming from its latest checkpoint if any."""
    try:
        with training_session(lambda held: Session(config, Path(out_dir), progress, log, held)) as session:
            while session.step < session.total_steps and not session.out_of_time:
                session.run_epoch()
            return session.finish()
    finally:
        keras.distribution.set_distribution(None)  # the process's later models are not this run's to shard


def use_cpu_devices(count: int) -> None:
    """Split the CPU into `count` XLA devices, to try the data-parallel path without GPUs (train.cpu_replicas).
    XLA reads the flag when JAX first asks for its devices, so this must come before anything does."""
    flag = f"--xla_force_host_platform_device_count={count}"
    if flag not in os.environ.get("XLA_FLAGS", ""):
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + flag).strip()


class Session:
    """One training run's state: the variables live as JAX arrays in `self.state` between steps, and are written
    back to the Keras model only to save it."""

    def __init__(self, config: Config, out_dir: Path, progress: bool, log: Callable, held: contextlib.ExitStack):
        """`held` keeps the run folder's lock until the caller's run ends."""
        self.config, self.progress, self.log, self.held = config, progress, log, held
        self.training, self.data = config.train, config.data
        self.deadline = Deadline(self.training.max_minutes)
        self._refuse_tensorflow_only()
        self._distribute()
        self.precision = choose_precision(self.training.precision, gpu_bfloat16=True)
        set_policy(self.precision.policy)
        log(f"precision: {self.precision.policy} ({self.precision.reason})")
        keras.utils.set_random_seed(self.training.seed)
        self.run = check_run_folder(out_dir, config)
        refuse_other_backend(self.run, "jax")
        self._find_data()
        self._build_model()
        self._check_memory()
        self._restore()
        self.metrics = read_metrics(self.run, self.step // self.steps_per_epoch)
        self._compile_steps()
        self.bar = None
        self.timer = StepTimer()

    # === Set-up ===

    def _refuse_tensorflow_only(self) -> None:
        """Refuse what only TensorFlow's loop reads, naming it: here it would go unused without a word."""
        training = self.training
        if training.strategy == "multi-worker":
            raise SettingError(
                "train.strategy multi-worker is TensorFlow's (TF_CONFIG); under JAX, one process trains on all its "
                "devices with auto or mirrored",
                settings=("strategy",),
            )
        if training.devices:
            raise SettingError(
                "train.devices names TensorFlow devices; under JAX leave it unset", settings=("KERAS_BACKEND",)
            )
        if self.data.cache not in NOT_FILES:
            raise SettingError(
                f"data.cache {self.data.cache} is tf.data's cache in files, for the TensorFlow loop; the JAX loop "
                "reads the pairs ahead on threads: leave data.cache as memory or none here",
                settings=("KERAS_BACKEND",),
            )
        off = [f"data.{key}" for key in ("parallel", "prefetch") if not getattr(self.data, key)]
        if off:
            them = "it" if len(off) == 1 else "them"
            raise SettingError(
                f"{' and '.join(off)} false: tf.data's parallel map and prefetch are the TensorFlow loop's, and the "
                f"JAX loop reads the pairs ahead on threads whatever they say: leave {them} true here",
                settings=("KERAS_BACKEND",),
            )
        if training.profile_batch is not None:
            raise SettingError(
                "train.profile_batch traces a step with TensorFlow's profiler, in the TensorFlow loop; under JAX leave "
                "it unset (jax.profiler traces a JAX program)",
                settings=("KERAS_BACKEND",),
            )

    def _distribute(self) -> None:
        training = self.training
        if training.cpu_replicas > 1 and training.strategy == "default":  # the split went unused
            raise StrategyError(
                f"train.cpu_replicas={training.cpu_replicas} splits the CPU into devices to train on together, and "
                "--strategy default trains on one: set --strategy auto or mirrored, or leave train.cpu_replicas unset"
            )
        if training.cpu_replicas > 1:
            use_cpu_devices(training.cpu_replicas)
        devices = jax.devices()
        if training.strategy == "default":
            devices = devices[:1]
        self.replicas = len(devices)
        self.distribution = keras.distribution.DataParallel(devices=devices) if self.replicas > 1 else None
        keras.distribution.set_distribution(self.distribution)
        kinds = sorted({device.device_kind for device in devices})
        how = "keras.distribution.DataParallel" if self.distribution else "one device"
        self.log(f"strategy: JAX, {how}: {self.replicas} x {', '.join(kinds)} ({devices[0].platform})")

    def _find_data(self) -> None:
        plan = plan_data(
            self.config,
            self.replicas,
            progress=self.progress,
            log=self.log,
            on_checked=lambda: claim_run_folder(self.run, self.config, self.held),
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
        self.model = build_generator(**asdict(self.config.model))
        self.optimizer = build_optimizer(training, self.total_steps, self.precision.policy, learning_rate)
        self.optimizer.build(self.model.trainable_variables)
        wants_vgg = training.perceptual_weight > 0
        self.features = build_vgg_features(training.vgg_weights or "") if wants_vgg else None
        self.pixel_loss = PIXEL_LOSSES[training.loss]

    def _check_memory(self) -> None:
        """Say, before the first step, a batch this CPU's memory cannot hold: it had been killed with no word."""
        if jax.devices()[0].platform != "cpu":  # a GPU's memory is its own, and XLA names its exhaustion
            return
        compute = keras.DTypePolicy(self.precision.policy).compute_dtype
        # one process trains on all its devices: the global batch is this machine's
        if warning := batch_too_large(self.model, self.data.patch_size, self.global_batch, compute, backend="jax"):
            self.log(f"warning: {warning}")

    def _variables(self) -> dict[str, list]:
        return variables_of(self.model, self.optimizer)

    def _restore(self) -> None:
        self.step = 0
        steps = saved_steps(self.run.checkpoints)
        if steps:
            path = checkpoint_path(self.run.checkpoints, steps[-1])
            variables = self._variables()
            self.step, stored = load_checkpoint(path, {group: len(variables[group]) for group in GROUPS})
            try:
                for group in GROUPS:
                    for variable, value in zip(variables[group], stored[group], strict=True):
                        variable.assign(value)
            except ValueError as err:
                raise RunFolderError(f"{path} does not fit this model ({err})") from None
            self.log(resuming_line(path, self.step, self.total_steps, self.training.init))
        elif self.training.init:
            source = load_initial_weights(self.model, self.training.init, self.config)
            self.log(f"starting from the weights of {source} (train.init={self.training.init})")
        self.start_step = self.step
        self.state = initial_state(self.model, self.optimizer)

    def _compile_steps(self) -> None:
        training = self.training
        loss = step_loss(
            self.pixel_loss,
            mix_weight=training.mix_weight,
            features=self.features,
            perceptual_weight=training.perceptual_weight,
        )
        # with train.mix_weight: the same layers and variables, in the same order, giving the gated mix too
        trained = with_mix(self.model) if training.mix_weight else self.model
        self.train_step = make_train_step(trained, self.optimizer, loss)
        self.eval_step = make_eval_step(self.model)
        self.pair_maker = None
        if self.data.device_pairs:
            check_patch_size(self.data.patch_size, self.data.synth)
            self.pair_maker = make_pair_maker(self.config.model.kernel_aware)

    # === Training ===

    def _batches(self):
        data = self.data
        where = {
            "patch_size": data.patch_size,
            "batch_size": self.global_batch,
            "steps_per_epoch": self.steps_per_epoch,
            "first_step": self.step,
            "last_step": self.total_steps,
            "seed": self.training.seed,
            "augment": data.augment,
        }
        if data.device_pairs:
            return self._made_on_device(device_draws(self.train_pairs, data.synth, **where))
        return training_batches(self.train_pairs, **where)

    def _made_on_device(self, draws):
        """The pairs of each batch, made on the device from the host's draws (`deblur.data.device_pairs`)."""
        step = self.step
        try:
            for drawn in draws:
                key = jax.random.PRNGKey(self.training.seed * 1_000_003 + step)  # the noise of step `step`
                yield self.pair_maker(drawn.sharp, drawn.kernels, drawn.estimates, drawn.noise, drawn.linear, key)
                step += 1
        finally:
            draws.close()

    def _shard(self, batch: np.ndarray):
        """Split a global batch over the devices (DataParallel), or leave it for the one device."""
        if self.distribution is None:
            return batch
        return keras.distribution.distribute_tensor(batch, self.distribution.get_data_layout(batch.shape))

    def run_epoch(self) -> None:
        index = self.step // self.steps_per_epoch
        end = min((index + 1) * self.steps_per_epoch, self.total_steps)
        self.bar = progress_bar(
            total=self.steps_per_epoch,
            initial=self.step % self.steps_per_epoch,
            desc=f"epoch {index + 1}/{self.training.epochs}",
            unit="step",
            disable=not self.progress,
            dynamic_ncols=True,
        )
        losses, images, seconds = [], 0, 0.0
        batches = self._batches()
        while self.step < end and not self.out_of_time:
            started = time.perf_counter()
            try:
                blurry, sharp = next(batches)
            except OSError as err:  # a file that passed the pre-flight check broke: name it, or leave it out
                batches.close()
                self._leave_out_unreadable(err)
                batches = self._batches()
                continue
            fetched = time.perf_counter()
            loss = self._optimize(blurry, sharp)
            finished = time.perf_counter()
            if self.timer.record(started, fetched, finished):  # the process's first step compiles: not timed
                images += self.global_batch
                seconds += finished - started
            losses.append(loss)
            self.bar.set_postfix(loss=f"{loss:.4f}", img_s=f"{images / seconds if seconds else 0:.1f}")
            self.bar.update(1)
            if self.step < end and self.step % self.training.checkpoint_every == 0:
                self._save()
        batches.close()
        self.bar.close()
        self._end_epoch(index, losses, images, seconds)

    def _leave_out_unreadable(self, err: OSError) -> None:
        readable, broken = split_unreadable(self.train_pairs, deep=True, progress=False)
        if not (self.data.skip_bad_images and broken and readable):
            raise TrainingError(
                f"reading the data failed at step {self.step}: {err}\n"
                f"{problem_listing(broken) or '  (all files decode now; see the error)'}\n"
                f"The last checkpoint ({self._latest() or 'none yet'}) is kept: fix or remove these files and run "
                "the same command to resume."
            ) from None
        self.train_pairs = readable
        self.skipped += broken
        self.log(f"\nskipping {len(broken)} file(s) that became unreadable: " + "; ".join(broken[:5]))

    def _optimize(self, blurry: np.ndarray, sharp: np.ndarray) -> float:
        """One optimizer step; the loss is read back to the host, so the device has finished and a NaN is seen."""
        loss, self.state = self.train_step(self.state, self._shard(blurry), self._shard(sharp))
        loss = float(loss)
        self.step += 1
        if not math.isfinite(loss):
            raise TrainingError(
                f"the loss became {loss} at step {self.step}; training stopped. The last good checkpoint "
                f"({self._latest() or 'none yet'}) is kept. Try a lower train.learning_rate."
            )
        return loss

    def _end_epoch(self, index: int, losses: list[float], images: int, seconds: float) -> None:
        scores = self._validate()
        row = {
            "epoch": index + 1,
            "step": self.step,
            "loss": float(np.mean(losses)) if losses else float("nan"),
            **scores,
            "images_per_second": round(images / seconds, 3) if seconds else None,
        }
        self.log(epoch_line(row))
        self.metrics.append(row)
        write_metrics(self.run, self.metrics)  # before the checkpoint: a crash between replays the epoch
        self._save()

    def _validate(self) -> dict[str, float]:
        sums, count = np.zeros(4), 0
        for blurry, sharp in validation_images(self.val_pairs, self.data.val_crop):
            sums += [float(score[0]) for score in self.eval_step(self.state, blurry, sharp)]
            count += 1
        names = ("val_psnr", "val_ssim", "val_psnr_blurry", "val_ssim_blurry")
        return {name: round(float(value / max(count, 1)), 4) for name, value in zip(names, sums, strict=True)}

    def _save(self) -> Path:
        return save_checkpoint(self.run.checkpoints, self.step, self.state, self.training.keep_checkpoints)

    def _latest(self) -> Path | None:
        steps = saved_steps(self.run.checkpoints)
        return checkpoint_path(self.run.checkpoints, steps[-1]) if steps else None

    # === The end ===

    def interrupted(self) -> TrainingInterrupted:
        if self.bar is not None:
            self.bar.close()
        try:
            saved = self._save()
        except RuntimeError:  # stopped inside a step, whose input state was already handed (donated) to XLA
            return TrainingInterrupted(
                f"interrupted inside step {self.step + 1}; the last checkpoint ({self._latest() or 'none yet'}) is "
                "kept. Run the same command again to resume."
            )
        return TrainingInterrupted(
            f"interrupted at step {self.step}; checkpoint {saved} saved. Run the same command again to resume."
        )

    @property
    def out_of_time(self) -> bool:
        """Past `train.max_minutes`, once this process has taken a step: a run always moves on."""
        return self.deadline.passed and self.step > self.start_step

    def finish(self) -> TrainResult:
        if self.step < self.total_steps:
            self.log(self.deadline.stopped_line(self.step, self.total_steps))
        for group, variables in self._variables().items():
            for variable, value in zip(variables, self.state[group], strict=True):
                variable.assign(value)
        self.log(f"final weights fingerprint: {weights_fingerprint(self.model)}")
        model_path = save_model(self.model, self.config, self.run)
        self.log(f"saved {model_path} and {self.run.config}")
        return TrainResult(
            out_dir=self.run.root,
            model=self.model,
            model_path=model_path,
            metrics=self.metrics,
            step=self.step,
            replicas=self.replicas,
            precision=self.precision.policy,
            input_wait_fraction=self.timer.wait_fraction,
            timed_steps=max(self.timer.steps, 0),
            skipped=self.skipped,
            example=self.val_pairs[0].blurry.resolve() if self.val_pairs else None,
        )
