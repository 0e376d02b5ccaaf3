"""A training process killed with SIGKILL resumes from its last checkpoint when the same command runs again."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import keras
import pytest
import tensorflow as tf
from typer.testing import CliRunner

import deblur.model  # noqa: F401  registers the layers for loading
from deblur.cli import app


@pytest.mark.slow
def test_sigkill_then_rerun_loses_nothing(tmp_path):
    out = tmp_path / "run"
    command = [
        sys.executable,
        "-m",
        "deblur",
        "train",
        "--config",
        "smoke",
        "--out",
        str(out),
    ]  # the log says it resumes
    command += [
        "--precision",
        "float32",
        "--epochs",
        "3",
        "--steps-per-epoch",
        "30",
        "--set",
        "train.checkpoint_every=5",
    ]
    # TensorFlow's autograph writes each converted function's source to a temporary file it removes as Python
    # exits, which a killed process never does: kept in tmp_path, not left in /tmp by every run of this test.
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    killed = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    # The manager writes ckpt-N.index, then the `checkpoint` pointer file: a kill between the two leaves nothing
    # to resume from, so wait until the pointer names a checkpoint.
    while not _checkpoint_recorded(out / "checkpoints"):
        assert killed.poll() is None, "the run ended before its first checkpoint"
        assert time.monotonic() < deadline
        time.sleep(0.02)
    killed.send_signal(signal.SIGKILL)
    killed.wait()
    assert killed.returncode == -signal.SIGKILL
    assert not (out / "model.keras").exists()

    # the same command again, in this process: a start of Python and TensorFlow less
    resumed = CliRunner().invoke(app, command[3:])
    assert resumed.exit_code == 0, resumed.output
    assert "resuming from" in resumed.output
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [row["epoch"] for row in rows] == [1, 2, 3]
    assert rows[-1]["step"] == 90
    keras.saving.load_model(out / "model.keras", safe_mode=True)
    assert not [p.name for p in out.iterdir() if p.name.startswith(".")]  # no temporary file left behind


def _checkpoint_recorded(folder: Path) -> bool:
    """True once the manager's pointer file names a checkpoint whose index is on disk (what resuming reads)."""
    return folder.is_dir() and tf.train.latest_checkpoint(str(folder)) is not None
