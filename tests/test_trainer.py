import json
import zipfile
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf
import yaml
from helpers import largest_difference, make_flat_dataset, noise_image, quiet_train, smoke_config, write_image
from PIL import Image

from deblur.config import ConfigError, SynthConfig, config_to_dict
from deblur.data.degrade import degrade
from deblur.data.demo import load_photo
from deblur.data.pairs import DatasetError
from deblur.errors import SettingError
from deblur.model import build_generator
from deblur.training import data_plan, trainer
from deblur.training.errors import RunFolderError, StrategyError, TrainingError, TrainingInterrupted
from deblur.training.optim import build_optimizer, scaled_learning_rate
from deblur.training.run_folder import RunFolder, check_init, check_run_folder, read_metrics, weights_fingerprint

METRIC_KEYS = [
    "epoch",
    "step",
    "loss",
    "val_psnr",
    "val_ssim",
    "val_psnr_blurry",
    "val_ssim_blurry",
    "images_per_second",
]


def test_smoke_run_writes_model_config_and_metrics(tmp_path):
    config = smoke_config()
    result = quiet_train(config, tmp_path / "run")
    run = RunFolder(tmp_path / "run")
    assert result.step == 8 and result.replicas == 1 and result.precision == "float32"
    rows = [json.loads(line) for line in run.metrics.read_text().splitlines()]
    assert [list(row) for row in rows] == [METRIC_KEYS, METRIC_KEYS]
    assert [row["epoch"] for row in rows] == [1, 2] and rows[-1]["step"] == 8
    assert rows[-1]["images_per_second"] > 0
    model = keras.saving.load_model(run.model, safe_mode=True)
    assert model.get_layer("head_conv").dtype_policy.name == "float32"
    x = np.random.rand(1, 20, 20, 3).astype("float32")
    np.testing.assert_allclose(model(x), result.model(x), atol=1e-5)
    assert yaml.safe_load(run.config.read_text()) == config_to_dict(config)
    assert (run.logs).is_dir() and any(run.logs.iterdir())
    assert 0.0 <= result.input_wait_fraction < 1.0


def single_pair_dataset(root):
    """One 48x48 photo crop and a blurred copy: a problem a tiny model can visibly learn in a few steps."""
    sharp = load_photo("astronaut")[100:148, 200:248]
    blurry, _ = degrade(sharp, np.random.default_rng(0), SynthConfig(4, 6, noise=0.0))
    write_image(root / "blur" / "a.png", blurry)
    write_image(root / "sharp" / "a.png", sharp)
    return root


def test_loss_goes_down(tmp_path):
    config = smoke_config(
        f"data.root={single_pair_dataset(tmp_path / 'data')}",
        "data.patch_size=48",
        "data.val_crop=48",
        "data.augment=false",
        "train.epochs=3",
        "train.steps_per_epoch=15",
        "train.learning_rate=0.0005",
        "model.width=12",
    )
    rows = quiet_train(config, tmp_path / "run").metrics
    losses = [row["loss"] for row in rows]
    assert losses[2] < losses[1] < losses[0] * 0.95
    assert rows[-1]["val_psnr"] > rows[-1]["val_psnr_blurry"] + 0.3


def test_the_mix_loss_teaches_the_gate_to_keep_a_right_deconvolution(tmp_path):
    """Where the deconvolution is the sharp photo itself, the gate should open; trained on the gated mix too
    (`train.mix_weight`), it opens faster than through the output alone, with the same steps and seed."""
    rng = np.random.default_rng(3)
    for i in range(3):
        sharp = noise_image(rng, 48, 64)
        write_image(tmp_path / "data" / "blur" / f"{i}.png", (sharp // 2 + 64).astype(np.uint8))
        write_image(tmp_path / "data" / "sharp" / f"{i}.png", sharp)
        write_image(tmp_path / "data" / "deconvolved" / f"{i}.png", sharp)  # a right deconvolution
    opened = {}
    for weight in (0.0, 1.0):
        config = smoke_config(
            f"data.root={tmp_path / 'data'}",
            "model.kernel_aware=true",
            "data.augment=false",
            "train.epochs=1",
            "train.steps_per_epoch=12",
            f"train.mix_weight={weight}",
        )
        model = quiet_train(config, tmp_path / f"run{weight}").model
        gate = keras.Model(model.input, model.get_layer("gate").output)
        image = np.asarray(Image.open(tmp_path / "data" / "blur" / "0.png"), np.float32) / 255
        deconvolved = np.asarray(Image.open(tmp_path / "data" / "sharp" / "0.png"), np.float32) / 255
        opened[weight] = float(np.mean(gate(np.concatenate([image, deconvolved], -1)[None])))
    start = 1 / (1 + np.exp(3.0))  # GATE_START
    assert opened[1.0] > opened[0.0] > start * 0.5, opened
    assert opened[1.0] > start * 2, opened


def test_the_mix_loss_needs_a_kernel_aware_network():
    with pytest.raises(ConfigError, match="train.mix_weight needs model.kernel_aware"):
        smoke_config("train.mix_weight=1")


def test_mirrored_replicas_agree(tmp_path):
    messages = []
    # 12 steps: past step 10, where the first TensorBoard scalars are written from mirrored variables.
    config = smoke_config("train.strategy=mirrored", "train.steps_per_epoch=6")
    result = quiet_train(config, tmp_path / "run", messages)
    assert result.replicas == 2 and result.step == 12
    assert any("global batch 4 = 2 per replica x 2 replica(s)" in m for m in messages)
    assert any("learning rate 0.001 for one replica -> 0.00141421 for 2" in m for m in messages)
    for variable in result.model.trainable_variables:
        copies = variable.value.values
        assert len(copies) == 2
        np.testing.assert_array_equal(copies[0].numpy(), copies[1].numpy())
    assert not np.allclose(result.model.get_layer("tail_conv").kernel.numpy(), 0.0)  # it did train


def test_a_split_cpu_with_one_device_training_is_refused(tmp_path):
    # train.cpu_replicas=2 under the default strategy split the CPU, then trained on one device without a word.
    for strategy in ("auto", "default"):
        with pytest.raises(StrategyError, match=f"--strategy {strategy} trains on one device here: set --strategy"):
            quiet_train(smoke_config("train.cpu_replicas=2", f"train.strategy={strategy}"), tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_resume_continues_without_repeating_epochs(tmp_path):
    out = tmp_path / "run"
    first = quiet_train(smoke_config("train.epochs=1"), out)
    weights = [w.copy() for w in first.model.get_weights()]
    messages = []
    again = quiet_train(smoke_config("train.epochs=1"), out, messages)  # nothing left to do: restores only
    assert again.step == 4 and again.timed_steps < 1  # the CLI then gives no input wait
    assert any(
        m.endswith("at step 4: none left of the 4 steps asked for (raise train.epochs to train on)") for m in messages
    )
    for before, after in zip(weights, again.model.get_weights(), strict=True):
        np.testing.assert_array_equal(before, after)
    longer = quiet_train(smoke_config("train.epochs=2"), out)
    assert longer.step == 8
    assert [row["epoch"] for row in read_metrics(RunFolder(out), 99)] == [1, 2]


def test_weights_fingerprint_tells_models_apart():
    a, b = build_generator(width=4, blocks=1), build_generator(width=4, blocks=1)
    assert weights_fingerprint(a) != weights_fingerprint(b)  # random heads differ
    b.set_weights(a.get_weights())
    assert weights_fingerprint(a) == weights_fingerprint(b)


def test_metrics_after_the_checkpoint_are_dropped(tmp_path):
    run = RunFolder(tmp_path)
    run.metrics.write_text("".join(json.dumps({"epoch": e}) + "\n" for e in (1, 2, 3)))
    assert [row["epoch"] for row in read_metrics(run, 2)] == [1, 2]


def test_nan_loss_stops_and_keeps_last_checkpoint(tmp_path, monkeypatch):
    calls = tf.Variable(0)

    def poisoned_l1(sharp, restored):
        calls.assign_add(1)
        loss = tf.reduce_mean(tf.abs(sharp - restored), axis=(1, 2, 3))
        # A NaN added as a constant: the gradients stay finite, so the weights before it are good.
        return loss + tf.where(calls > 3, np.nan, 0.0)

    monkeypatch.setitem(trainer.PIXEL_LOSSES, "l1", poisoned_l1)
    with pytest.raises(TrainingError, match=r"loss became nan at step 4.*ckpt-2"):
        quiet_train(smoke_config(), tmp_path / "run")
    assert tf.train.latest_checkpoint(str(tmp_path / "run" / "checkpoints")).endswith("ckpt-2")
    assert not (tmp_path / "run" / "model.keras").exists()


def test_ctrl_c_saves_a_checkpoint(tmp_path, monkeypatch):
    updates = []

    class InterruptingBar(trainer.tqdm):
        def update(self, n=1):
            super().update(n)
            updates.append(n)
            if len(updates) == 3:
                raise KeyboardInterrupt

    with monkeypatch.context() as patch:  # scoped: undoing everything would also drop the isolated DEBLUR_HOME
        patch.setattr(trainer, "progress_bar", InterruptingBar)
        with pytest.raises(TrainingInterrupted, match="interrupted at step 3"):
            quiet_train(smoke_config(), tmp_path / "run")
    assert tf.train.latest_checkpoint(str(tmp_path / "run" / "checkpoints")).endswith("ckpt-3")
    assert quiet_train(smoke_config(), tmp_path / "run").step == 8


def test_a_stop_while_setting_up_says_so_and_lets_the_run_folder_go(tmp_path, monkeypatch):
    # after the config is written, while the model is built: it had ended with exit 130 and no word
    with monkeypatch.context() as patch:
        patch.setattr(trainer.Session, "_build_model", lambda self: (_ for _ in ()).throw(KeyboardInterrupt))
        with pytest.raises(TrainingInterrupted, match="stopped while setting up, before any step: nothing was"):
            quiet_train(smoke_config("train.epochs=1"), tmp_path / "run")
    assert not (tmp_path / "run").exists()  # nothing kept: its config alone had been left
    assert quiet_train(smoke_config("train.epochs=1"), tmp_path / "run").step == 4  # its lock let go


@pytest.mark.parametrize("policy", ["mixed_bfloat16", "mixed_float16"])
def test_mixed_precision_runs(tmp_path, policy):
    config = smoke_config(f"train.precision={policy}", "train.epochs=1", "train.steps_per_epoch=2")
    result = quiet_train(config, tmp_path / "run")
    assert result.precision == policy and np.isfinite(result.metrics[-1]["loss"])
    loaded = keras.saving.load_model(tmp_path / "run" / "model.keras")
    assert {layer.dtype_policy.name for layer in loaded.layers if layer.weights} == {"float32"}


def test_float16_uses_loss_scaling():
    config = smoke_config()
    assert isinstance(build_optimizer(config.train, 10, "mixed_float16"), keras.optimizers.LossScaleOptimizer)
    assert not isinstance(build_optimizer(config.train, 10, "mixed_bfloat16"), keras.optimizers.LossScaleOptimizer)


def test_cosine_schedule_warms_up_and_decays():
    config = smoke_config("train.schedule=cosine", "train.warmup_steps=5", "train.learning_rate=0.01")
    schedule = build_optimizer(config.train, 105, "float32")._learning_rate
    assert float(schedule(0)) == pytest.approx(0.0)
    assert float(schedule(5)) == pytest.approx(0.01)
    assert float(schedule(55)) == pytest.approx(0.005, rel=1e-3)
    assert float(schedule(105)) == pytest.approx(0.0, abs=1e-7)


def test_learning_rate_scaling_rules():
    assert scaled_learning_rate(1e-3, 4, "sqrt") == pytest.approx(2e-3)
    assert scaled_learning_rate(1e-3, 4, "linear") == pytest.approx(4e-3)
    assert scaled_learning_rate(1e-3, 4, "none") == pytest.approx(1e-3)
    assert scaled_learning_rate(1e-3, 1, "linear") == pytest.approx(1e-3)
    optimizer = build_optimizer(smoke_config().train, 100, "float32", 0.004)
    assert float(optimizer.learning_rate) == pytest.approx(0.004)


def test_constant_schedule_with_warmup():
    config = smoke_config("train.warmup_steps=4", "train.learning_rate=0.01")
    schedule = build_optimizer(config.train, 100, "float32")._learning_rate
    assert float(schedule(2)) == pytest.approx(0.005)
    assert float(schedule(4)) == pytest.approx(0.01) and float(schedule(90)) == pytest.approx(0.01)
    assert float(build_optimizer(smoke_config().train, 100, "float32").learning_rate) == pytest.approx(0.001)


def test_run_folder_guards(tmp_path):
    (tmp_path / "foreign").mkdir()
    (tmp_path / "foreign" / "holiday.jpg").write_bytes(b"x")
    with pytest.raises(RunFolderError, match="not a deblur run"):
        quiet_train(smoke_config(), tmp_path / "foreign")
    assert (tmp_path / "foreign" / "holiday.jpg").read_bytes() == b"x"
    quiet_train(smoke_config("train.epochs=1"), tmp_path / "run")
    with pytest.raises(RunFolderError, match="different model"):
        quiet_train(smoke_config("model.width=4"), tmp_path / "run")


def test_one_training_at_a_time_in_a_run_folder_and_a_lock_left_by_kill_9_is_no_bar(tmp_path):
    from deblur.errors import OutputBusyError
    from deblur.training.run_folder import one_training_at_a_time

    run = RunFolder(tmp_path / "run")
    with (
        one_training_at_a_time(run),
        pytest.raises(OutputBusyError, match=f"another deblur run is writing {run.root}:"),
    ):
        quiet_train(smoke_config("train.epochs=1"), run.root)  # a second terminal, a scheduler's retry
    assert [path.name for path in run.root.iterdir()] == []  # it wrote nothing, not even its config
    run.lock.touch()  # what a run killed with -9 leaves
    quiet_train(smoke_config("train.epochs=1"), run.root)
    assert run.model.is_file() and not run.lock.exists()


def test_a_cache_in_files_is_the_pairs_own_and_what_a_killed_run_left_is_no_bar(tmp_path):
    cache = tmp_path / "cache" / "pairs"  # its folder made by the run
    first, other = make_flat_dataset(tmp_path / "a", count=6), make_flat_dataset(tmp_path / "b", count=6, seed=1)
    messages = []
    quiet_train(smoke_config(f"data.root={first}", f"data.cache={cache}", "train.epochs=1"), tmp_path / "1", messages)
    (index,) = cache.parent.glob("pairs-*.index")
    named = str(index)[: -len(".index")]
    assert f"data.cache: writing, in the first pass, {named}.*" in messages
    for path in cache.parent.iterdir():  # as a run killed with -9 in its first pass leaves the cache
        path.unlink()
    Path(f"{named}_0.lockfile").write_text("Created at: 0")
    Path(f"{named}_0.data-00000-of-00001.tempstate1").write_bytes(b"\0" * 64)
    quiet_train(smoke_config(f"data.root={first}", f"data.cache={cache}", "train.epochs=1"), tmp_path / "2")
    assert sorted(path.name for path in cache.parent.iterdir()) == [f"{index.stem}.data-00000-of-00001", index.name]
    messages.clear()  # other pairs under the same prefix: tf.data would have read the first ones' cache
    quiet_train(smoke_config(f"data.root={other}", f"data.cache={cache}", "train.epochs=1"), tmp_path / "3", messages)
    assert len(list(cache.parent.glob("pairs-*.index"))) == 2
    assert not any(named in message for message in messages)


def test_a_cache_another_run_writes_is_named_and_the_run_folder_left_as_it_was(tmp_path):
    import contextlib

    from deblur.data.file_cache import claim_file_cache
    from deblur.errors import OutputBusyError

    data, cache = make_flat_dataset(tmp_path / "data", count=6), str(tmp_path / "cache" / "pairs")
    config = smoke_config(f"data.root={data}", f"data.cache={cache}", "train.epochs=1")
    pairs = data_plan.plan_data(config, 1, progress=False, log=lambda _: None, on_checked=lambda: None).train_pairs
    with contextlib.ExitStack() as other_run:
        claim_file_cache(cache, pairs, other_run)  # another run in its first pass over the same pairs
        for out in (tmp_path / "new", tmp_path / "empty"):
            (tmp_path / "empty").mkdir(exist_ok=True)
            with pytest.raises(OutputBusyError, match="another deblur run is writing the cache .*data.cache"):
                quiet_train(config, out)
        # the new folder is gone, the one that was there is as it was: its config alone had been left, and a run
        # of another model in the same --out was then refused
        assert not (tmp_path / "new").exists() and list((tmp_path / "empty").iterdir()) == []
    assert quiet_train(smoke_config("train.epochs=1", "model.width=4"), tmp_path / "new").step == 4


def test_the_run_folder_is_checked_before_the_workers_join(tmp_path, monkeypatch):
    # Making MultiWorkerMirroredStrategy waits for every worker, and the chief writes the folder's config only
    # after it: a worker that checked later could find the config half-written (CI, 2026-12-03).
    def no_strategy(*args):
        raise AssertionError("the strategy was made before the run folder was checked")

    monkeypatch.setattr(trainer, "make_strategy", no_strategy)
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / ".config.yaml.x.tmp").write_text("model:")  # the chief's config, half-written
    with pytest.raises(RunFolderError, match="not a deblur run"):
        quiet_train(smoke_config(), tmp_path / "run")


def test_bad_data_trains_nothing(tmp_path):
    data = make_flat_dataset(tmp_path / "data", count=3)
    (data / "sharp" / "001.png").unlink()
    with pytest.raises(DatasetError, match="001.png: no sharp partner"):
        quiet_train(smoke_config(f"data.root={data}"), tmp_path / "run")
    assert not (tmp_path / "run").exists()


@pytest.fixture
def breaks_after_check(tmp_path, monkeypatch):
    """A dataset of 6 pairs whose second training image is corrupted just after the pre-flight check."""
    checked = data_plan.preflight

    def check_then_break(root, patch_size, **kwargs):
        splits = checked(root, patch_size, **kwargs)
        splits.train[1].blurry.write_bytes(b"\x89PNG\r\n\x1a\n broken after the check")
        return splits

    monkeypatch.setattr(data_plan, "preflight", check_then_break)
    return make_flat_dataset(tmp_path / "data", count=6)


def test_file_broken_after_the_check_is_named(tmp_path, breaks_after_check):
    data = breaks_after_check
    with pytest.raises(
        TrainingError, match=r"(?s)failed at step 0: Invalid PNG.*\n  - .*blur/001.png: not a readable image.*none yet"
    ):
        quiet_train(smoke_config(f"data.root={data}"), tmp_path / "run")


def test_skip_bad_images_goes_on_and_counts(tmp_path, breaks_after_check):
    data = breaks_after_check
    messages = []
    result = quiet_train(smoke_config(f"data.root={data}", "data.skip_bad_images=true"), tmp_path / "run", messages)
    assert result.step == 8 and (tmp_path / "run" / "model.keras").is_file()
    assert len(result.skipped) == 1 and "blur/001.png" in result.skipped[0]
    assert any("skipping 1 file(s) that became unreadable" in m for m in messages)


@pytest.mark.slow
def test_perceptual_loss_with_local_weights(tmp_path):
    weights = tmp_path / "vgg16_notop.weights.h5"
    keras.applications.VGG16(include_top=False, weights=None).save_weights(weights)
    config = smoke_config(
        "train.perceptual_weight=0.01", f"train.vgg_weights={weights}", "train.epochs=1", "train.steps_per_epoch=2"
    )
    assert np.isfinite(quiet_train(config, tmp_path / "run").metrics[-1]["loss"])


def test_vgg_weights_without_the_perceptual_loss_are_refused_before_the_run_folder(tmp_path):
    from deblur.training.run import train

    weights = tmp_path / "vgg16_notop.weights.h5"  # read by the perceptual loss only: they went unused
    with pytest.raises(SettingError, match=f"train.vgg_weights {weights} is read by the perceptual loss only, and "):
        train(smoke_config(f"train.vgg_weights={weights}"), tmp_path / "run", progress=False, log=lambda _: None)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("config", [{"train": {"epochs": 1}}, "demo"])
def test_a_config_that_is_no_config_is_named_with_the_way_to_make_one(tmp_path, config):
    from deblur.training.run import train

    with pytest.raises(SettingError, match="config must be a deblur.Config, not .*deblur.load_config") as refused:
        train(config, tmp_path / "run", progress=False, log=lambda _: None)
    assert refused.value.settings == ("config",)
    assert not (tmp_path / "run").exists()


def test_no_run_folder_is_named_before_the_data_is_read():
    from deblur.training.run import train

    with pytest.raises(SettingError, match="the run folder is NoneType: give its path") as refused:
        train(smoke_config(), None, progress=False, log=lambda _: None)  # had been Path's TypeError, after the checks
    assert refused.value.settings == ("out_dir",)


def test_fine_tuning_starts_from_the_given_weights(tmp_path):
    first = quiet_train(smoke_config("train.epochs=1", "train.seed=1"), tmp_path / "first")  # other random start
    messages = []
    tuned = quiet_train(
        smoke_config("train.epochs=1", "train.steps_per_epoch=1", f"train.init={first.model_path}"),
        tmp_path / "tuned",
        messages,
    )
    assert any(f"starting from the weights of {first.model_path}" in m for m in messages)
    # One step of Adam moves each weight by about the learning rate: far closer than two random starts.
    assert largest_difference(first.model, tuned.model) < 0.01
    resumed = []  # the same command, one epoch more: the run's own weights go on, and it says so
    config = smoke_config("train.epochs=2", "train.steps_per_epoch=1", f"train.init={first.model_path}")
    quiet_train(config, tmp_path / "tuned", resumed)
    said = f"at step 1, its weights rather than train.init={first.model_path}'s (read by a run's first start only)"
    assert any(said in m for m in resumed) and not any("starting from the weights" in m for m in resumed)
    fresh = quiet_train(smoke_config("train.epochs=1", "train.steps_per_epoch=1"), tmp_path / "fresh")
    assert largest_difference(first.model, fresh.model) > 0.1


def test_fine_tuning_refuses_another_architecture(tmp_path):
    first = quiet_train(smoke_config("train.epochs=1", "train.steps_per_epoch=1"), tmp_path / "first")
    with pytest.raises(RunFolderError, match="another architecture"):
        quiet_train(smoke_config("model.width=4", f"train.init={first.model_path}"), tmp_path / "other")
    assert not (tmp_path / "other").exists()  # else the corrected command is refused as a run of another model
    (first.model_path.parent / "config.yaml").write_text("model: {width: 8\n")  # not YAML: the model file decides
    assert check_init(str(first.model_path), smoke_config()) == first.model_path
    with pytest.raises(RunFolderError, match=r"config.yaml is not valid YAML \(line 2, column 1: .*\); use another"):
        check_run_folder(first.model_path.parent, smoke_config())  # resuming it: its config is unreadable
    (first.model_path.parent / "config.yaml").write_text("- a list\n")
    with pytest.raises(RunFolderError, match=r"config.yaml is not a run's config; use another run folder"):
        check_run_folder(first.model_path.parent, smoke_config())


def test_an_init_that_is_no_model_is_refused_before_the_run_folder_is_written(tmp_path):
    from deblur.inference import ModelLoadError

    (tmp_path / "junk.keras").write_text("not a model")
    (tmp_path / "model.tflite").write_bytes(b"a flat buffer")
    with zipfile.ZipFile(tmp_path / "photos.keras", "w") as archive:  # a zip, but no Keras model's
        archive.writestr("a.png", b"")
    for init, error, says in (
        ("junk.keras", RunFolderError, "junk.keras is not a deblur model"),
        ("photos.keras", RunFolderError, "photos.keras is not a deblur model \\(not a Keras file\\)"),
        ("model.tflite", ModelLoadError, "an export for LiteRT"),
        ("missing.keras", ModelLoadError, "missing.keras not found"),
    ):
        with pytest.raises(error, match=says):
            quiet_train(smoke_config(f"train.init={tmp_path / init}"), tmp_path / "run")
        assert not (tmp_path / "run").exists()


def test_the_photo_to_try_is_one_training_never_saw(tmp_path):
    from deblur.data.pairs import discover

    one = discover(make_flat_dataset(tmp_path / "one", count=1))[0]  # validates on its one training pair
    assert trainer._held_out_photo(one.train, one.val) is None
    many = discover(make_flat_dataset(tmp_path / "many", count=10))[0]
    assert trainer._held_out_photo(many.train, many.val) == (tmp_path / "many" / "blur" / "009.png").resolve()
