"""Shared fixtures. The CPU is split into two logical devices before TensorFlow starts, so the mirrored
(multi-replica) training path runs here without GPUs."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

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

# JAX's compiled programs, kept on disk for the session, so that each `deblur` process under JAX after the first
# loads them instead of compiling them again: on a 2-core Zen 3 a one-step JAX training took 21 s cold and 8 s after,
# most of it Keras' weight initializers, one XLA program for each weight's shape. Set before any test module runs
# (they copy os.environ for their processes), kept to the session so that no run reads another's.
# Named for the session's process: a killed session's cache (no pytest_unconfigure ran) goes at the next session.
_JAX_PREFIX = "deblur-tests-jax-cache-"


def _gone(pid: str) -> bool:
    try:
        os.kill(int(pid), 0)  # no signal: only whether the process is there
    except ProcessLookupError:
        return True
    except (OSError, ValueError):  # another user's process, or not a pid
        return False
    return False


for _left in Path(tempfile.gettempdir()).glob(f"{_JAX_PREFIX}*"):
    if _gone(_left.name.removeprefix(_JAX_PREFIX).partition("-")[0]):
        shutil.rmtree(_left, ignore_errors=True)
_JAX_CACHE = tempfile.mkdtemp(prefix=f"{_JAX_PREFIX}{os.getpid()}-")
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", _JAX_CACHE)
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "0")


def pytest_unconfigure(config):
    shutil.rmtree(_JAX_CACHE, ignore_errors=True)


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


@pytest.fixture
def unwritable_folder(tmp_path):
    """A folder that cannot be written in: one without write permission, or /sys where that is ignored (as root),
    or the test is skipped where neither refuses."""
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    candidates = [locked, Path("/sys")]
    try:
        for folder in candidates:
            try:
                os.rmdir(tempfile.mkdtemp(dir=folder))
            except OSError:
                yield folder
                return
        pytest.skip("no folder refuses writes here (root, and no /sys)")
    finally:
        locked.chmod(0o755)
