"""Shared fixtures. The CPU is split into two logical devices before TensorFlow starts, so the mirrored
(multi-replica) training path runs here without GPUs."""

from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# Whether this run is CI's own (.ci/run sets CI=true), read before the line below sets CI for OpenVINO: tests that
# need what only CI installs (a browser) are required there and skipped, saying why, elsewhere.
IN_CI = os.environ.get("CI", "").lower() == "true"
os.environ.setdefault("DEBLUR_TESTS_IN_CI", "1" if IN_CI else "")
# OpenVINO's converter sends usage telemetry from a forked process at each conversion unless it sees a CI; in a
# test process full of threads one such fork deadlocked the whole run (test_strength, 2026-11-25).
os.environ.setdefault("CI", "true")

import keras  # noqa: E402
import pytest  # noqa: E402
import tensorflow as tf  # noqa: E402

_cpus = tf.config.list_physical_devices("CPU")
tf.config.set_logical_device_configuration(_cpus[0], [tf.config.LogicalDeviceConfiguration()] * 2)


@pytest.fixture(autouse=True)
def _isolated(tmp_path_factory, monkeypatch):
    """Each test: the demo dataset in a per-session folder, no model noted as trained last by another test (`--model
    latest`), and Keras' global policy back to float32."""
    home = tmp_path_factory.getbasetemp() / "deblur-home"
    monkeypatch.setenv("DEBLUR_HOME", str(home))
    (home / "last-model").unlink(missing_ok=True)
    monkeypatch.delenv("TF_CONFIG", raising=False)
    yield
    keras.mixed_precision.set_global_policy("float32")
