"""`deblur train` under `KERAS_BACKEND=jax` (`deblur.training.jax`), run as a GPU machine would: in a process where
TensorFlow cannot be imported. Killed with SIGKILL it resumes; its model.keras loads in TensorFlow and gives
the output it gives under JAX; two XLA CPU devices train it data-parallel."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time

import keras
import numpy as np
import pytest
from helpers import quiet_train, smoke_config
from typer.testing import CliRunner

import deblur.model  # noqa: F401  registers the layers for loading
from deblur.cli import app
from deblur.training.errors import RunFolderError
from deblur.training.jax.checkpoints import load_checkpoint, save_checkpoint, saved_steps
from deblur.training.run_folder import RunFolder, checkpoint_backend, refuse_other_backend

needs_jax = pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="JAX is not installed")

# The fixed image both backends run the trained model on.
TEST_IMAGE = "np.random.default_rng(1).random((1, 45, 61, 3), dtype=np.float32)"

# `deblur` with TensorFlow made unimportable, as on a GPU machine that has only JAX; or ("run-model") a trained
# model run under JAX on the fixed image, for the comparison with TensorFlow.
WITHOUT_TENSORFLOW = f"""
import importlib.abc, sys

class NoTensorFlow(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] == "tensorflow":
            raise ImportError("TensorFlow is not installed here (the test hides it)")

sys.meta_path.insert(0, NoTensorFlow())
if sys.argv[1] == "run-model":
    import keras, numpy as np
    import deblur.model
    model = keras.saving.load_model(sys.argv[2], safe_mode=True, compile=False)
    np.save(sys.argv[3], keras.ops.convert_to_numpy(model({TEST_IMAGE})))
else:
    from deblur.cli import run
    sys.argv = ["deblur", *sys.argv[1:]]
    run()
"""


def jax_command(*args: str) -> list[str]:
    return [sys.executable, "-c", WITHOUT_TENSORFLOW, *args]


JAX_ENV = {**os.environ, "KERAS_BACKEND": "jax"}


def smoke_train(out, *extra: str) -> list[str]:
    # not --quiet: the set-up lines say which strategy ran
    command = ["train", "--config", "smoke", "--out", str(out), "--precision", "float32", *extra]
    return jax_command(*command)


@needs_jax
@pytest.mark.slow
def test_sigkill_then_rerun_resumes_and_tensorflow_loads_the_model(tmp_path):
    out = tmp_path / "run"
    command = smoke_train(out, "--epochs", "3", "--steps-per-epoch", "30", "--set", "train.checkpoint_every=5")
    killed = subprocess.Popen(command, env=JAX_ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not saved_steps(out / "checkpoints"):  # written atomically: one listed is whole
        assert killed.poll() is None, "the run ended before its first checkpoint: " + killed.stderr.read()[-2000:]
        assert time.monotonic() < deadline
        time.sleep(0.02)
    killed.send_signal(signal.SIGKILL)
    killed.wait()
    assert not (out / "model.keras").exists()
    stopped_at = saved_steps(out / "checkpoints")[-1]
    assert stopped_at < 90

    resumed = subprocess.run(command, env=JAX_ENV, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "strategy: JAX" in resumed.stdout
    assert f"resuming from {out / 'checkpoints'}" in resumed.stdout
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [row["epoch"] for row in rows] == [1, 2, 3]
    assert rows[-1]["step"] == 90
    assert all(np.isfinite(row["val_psnr"]) and row["val_psnr_blurry"] > 0 for row in rows)
    assert saved_steps(out / "checkpoints")[-1] == 90
    assert not [p.name for p in out.rglob(".*")]  # no temporary file left behind

    # The same model, run under JAX (without TensorFlow) and here under TensorFlow, gives the same output.
    under_jax = tmp_path / "jax.npy"
    ran = subprocess.run(
        jax_command("run-model", str(out / "model.keras"), str(under_jax)), env=JAX_ENV, capture_output=True, text=True
    )
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert keras.backend.backend() == "tensorflow"
    model = keras.saving.load_model(out / "model.keras", safe_mode=True, compile=False)
    difference = np.mean((keras.ops.convert_to_numpy(model(eval(TEST_IMAGE))) - np.load(under_jax)) ** 2)
    assert 10 * np.log10(1 / max(difference, 1e-20)) >= 60


@needs_jax
@pytest.mark.slow
def test_two_xla_cpu_devices_train_data_parallel(tmp_path):
    out = tmp_path / "run"
    done = subprocess.run(
        smoke_train(out, "--epochs", "1", "--set", "train.cpu_replicas=2"), env=JAX_ENV, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "keras.distribution.DataParallel: 2 x cpu" in done.stdout
    assert "global batch 4 = 2 per replica x 2 replica(s)" in done.stdout
    assert (out / "model.keras").is_file()


@needs_jax
def test_the_jax_loop_says_a_batch_its_cpu_memory_cannot_hold_before_the_first_step(tmp_path):
    # had been said by TensorFlow's loop alone; JAX's keeps about 3.5 times its activations (deblur.training.memory)
    small_machine = (
        "import sys\n"
        "import deblur.training.memory as memory\n"
        "memory.physical_memory = lambda: 2**10  # a kilobyte: no step fits\n"
        "from deblur.cli import run\n"
        "sys.argv = ['deblur', *sys.argv[1:]]\n"
        "run()\n"
    )
    args = ["train", "--config", "smoke", "--out", str(tmp_path / "run"), "--epochs", "1", "--set",
            "train.steps_per_epoch=1"]  # fmt: skip
    done = subprocess.run([sys.executable, "-c", small_machine, *args], env=JAX_ENV, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    said = [line for line in lines if line.startswith("warning: a training step of")]
    assert len(said) == 1 and "this machine has 1 KiB: it will likely be killed for memory" in said[0], done.stdout
    assert "strategy: JAX" in done.stdout and lines.index(said[0]) < next(
        i for i, line in enumerate(lines) if line.startswith("epoch")
    )


@needs_jax
def test_under_jax_the_tensorflow_only_settings_and_an_unused_split_are_refused_by_name(tmp_path):
    done = subprocess.run(
        smoke_train(tmp_path / "run", "--strategy", "multi-worker"), env=JAX_ENV, capture_output=True, text=True
    )
    assert done.returncode != 0
    assert "multi-worker is TensorFlow's" in done.stdout + done.stderr
    cache = tmp_path / "cache" / "pairs"  # tf.data's: it went unused without a word
    done = subprocess.run(
        smoke_train(tmp_path / "run", "--set", f"data.cache={cache}"), env=JAX_ENV, capture_output=True, text=True
    )
    assert done.returncode == 1
    assert f"error: data.cache {cache} is tf.data's cache in files" in done.stderr
    assert done.stderr.rstrip().endswith("here (KERAS_BACKEND)")  # as it is set, not as a flag
    assert not (tmp_path / "run").exists() and not cache.parent.exists()
    for keys in (["data.parallel=false"], ["data.parallel=false", "data.prefetch=false"]):  # as unused
        sets = [arg for key in keys for arg in ("--set", key)]
        done = subprocess.run(smoke_train(tmp_path / "run", *sets), env=JAX_ENV, capture_output=True, text=True)
        assert done.returncode == 1
        named = " and ".join(key.removesuffix("=false") for key in keys)
        assert f"error: {named} false: tf.data's parallel map and prefetch are the TensorFlow loop's" in done.stderr
        assert not (tmp_path / "run").exists()
    done = subprocess.run(
        smoke_train(tmp_path / "run", "--set", "train.profile_batch=2"), env=JAX_ENV, capture_output=True, text=True
    )
    assert done.returncode == 1 and "error: train.profile_batch traces a step with TensorFlow's profiler" in done.stderr
    assert not (tmp_path / "run").exists()
    split = ("--strategy", "default", "--set", "train.cpu_replicas=2")  # one device trained: the split went unused
    done = subprocess.run(smoke_train(tmp_path / "run", *split), env=JAX_ENV, capture_output=True, text=True)
    assert done.returncode == 1 and "--strategy default trains on one: set --strategy auto or mirrored" in done.stderr
    assert not (tmp_path / "run").exists()


@needs_jax
def test_under_jax_too_a_second_training_into_a_run_folder_is_refused(tmp_path):
    from deblur.training.run_folder import one_training_at_a_time

    run = RunFolder(tmp_path / "run")
    with one_training_at_a_time(run):  # another process training there
        done = subprocess.run(smoke_train(run.root, "--epochs", "1"), env=JAX_ENV, capture_output=True, text=True)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"another deblur run is writing {run.root}: wait for it to end" in done.stderr
    assert [path.name for path in run.root.iterdir()] == []


def test_a_run_resumes_only_on_the_backend_that_wrote_its_checkpoints(tmp_path):
    jax_run = RunFolder(tmp_path / "jax")
    save_checkpoint(jax_run.checkpoints, 2, {"trainable": [np.ones(3)], "non_trainable": [], "optimizer": []}, 3)
    assert checkpoint_backend(jax_run) == "jax"
    refuse_other_backend(jax_run, "jax")
    with pytest.raises(RunFolderError, match="KERAS_BACKEND=jax"):
        refuse_other_backend(jax_run, "tensorflow")

    tf_run = tmp_path / "tf"
    quiet_train(smoke_config("train.epochs=1"), tf_run)
    assert checkpoint_backend(RunFolder(tf_run)) == "tensorflow"
    with pytest.raises(RunFolderError, match="KERAS_BACKEND=tensorflow"):
        refuse_other_backend(RunFolder(tf_run), "jax")

    # TensorFlow's loop refuses the JAX run rather than starting again over it.
    (jax_run.root / "config.yaml").write_text((tf_run / "config.yaml").read_text())
    with pytest.raises(RunFolderError, match="KERAS_BACKEND=jax"):
        quiet_train(smoke_config("train.epochs=1"), jax_run.root)
    assert not (jax_run.root / "model.keras").exists()


def test_checkpoints_keep_the_newest_and_refuse_another_model(tmp_path):
    folder = tmp_path / "checkpoints"
    state = {"trainable": [np.arange(4.0), np.ones((2, 2))], "non_trainable": [np.zeros(1)], "optimizer": [np.int64(7)]}
    for step in (2, 4, 6, 8):
        save_checkpoint(folder, step, state, keep=3)
    assert saved_steps(folder) == [4, 6, 8]
    step, loaded = load_checkpoint(folder / "step-00000008.npz", {"trainable": 2, "non_trainable": 1, "optimizer": 1})
    assert step == 8
    np.testing.assert_array_equal(loaded["trainable"][1], np.ones((2, 2)))
    with pytest.raises(RunFolderError, match="trainable state differs"):
        load_checkpoint(folder / "step-00000008.npz", {"trainable": 3, "non_trainable": 1, "optimizer": 1})
    with pytest.raises(RunFolderError, match="trainable state differs"):
        load_checkpoint(folder / "step-00000008.npz", {"trainable": 1, "non_trainable": 1, "optimizer": 1})
    (folder / "step-00000010.npz").write_bytes(b"cut short")
    with pytest.raises(RunFolderError, match="cannot be read"):
        load_checkpoint(folder / "step-00000010.npz", {"trainable": 2, "non_trainable": 1, "optimizer": 1})


@needs_jax
@pytest.mark.slow
def test_pairs_made_on_the_device_train_the_kernel_aware_network(tmp_path):
    from test_synth import make_photos

    from deblur.config import SynthConfig
    from deblur.data.synth import synthesize_pairs

    recipe = SynthConfig(min_length=3, max_length=7, pairs_per_photo=1, deconvolve=True)
    pairs = synthesize_pairs(
        make_photos(tmp_path / "photos"),
        tmp_path / "pairs",
        recipe,
        val_fraction=0.4,
        progress=False,
        log=lambda _: None,
    ).out
    out = tmp_path / "run"
    extra = [
        "--data",
        str(pairs),
        "--epochs",
        "1",
        "--set",
        "data.device_pairs=true",
        "--set",
        "model.kernel_aware=true",
    ]
    extra += ["--set", "data.synth.max_length=7", "--set", "data.patch_size=48"]
    done = subprocess.run(smoke_train(out, *extra), env=JAX_ENV, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (out / "model.keras").is_file()
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert rows[-1]["step"] == 4 and np.isfinite(rows[-1]["val_psnr"])
    # Under TensorFlow, this process's backend, the same settings are refused.
    refused = CliRunner().invoke(app, ["train", "--config", "smoke", "--out", str(tmp_path / "tf"), *extra])
    assert refused.exit_code != 0 and "data.device_pairs makes pairs in the JAX loop" in refused.output
