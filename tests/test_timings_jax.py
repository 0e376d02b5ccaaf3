"""`deblur timings` under Keras' JAX backend (`deblur.timings.jax`): its own stages, run as on a GPU machine with
TensorFlow unimportable, on two XLA CPU devices so the data-parallel stage runs too."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess

import pytest
from PIL import Image
from test_training_jax import jax_command

from deblur.timings.stages import select_stages

needs_jax = pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="JAX is not installed")


@needs_jax
@pytest.mark.slow
def test_timings_under_jax_without_tensorflow(tmp_path):
    out = tmp_path / "timings"
    env = {**os.environ, "KERAS_BACKEND": "jax", "XLA_FLAGS": "--xla_force_host_platform_device_count=2"}
    args = ["timings", "--config", "smoke", "--steps", "2", "--warmup", "1", "--patch-size", "32", "-q"]
    done = subprocess.run(jax_command(*args, "--out", str(out)), env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((out / "timings.json").read_text())
    assert report["device"]["backend"] == "jax" and report["device"]["jax"]
    stages = {stage["name"]: stage for stage in report["stages"]}
    assert list(stages) == [
        "keras-sequence",
        "read-ahead",
        "mixed-bfloat16",
        "mixed-float16",
        "multi-gpu",
        "larger-batch",
    ]
    assert stages["mixed-float16"]["skipped"] == "no GPU: float16 pays off only on tensor cores"
    for name in ("keras-sequence", "read-ahead", "multi-gpu", "larger-batch"):
        assert stages[name]["images_per_second"] > 0 and stages[name]["timed_steps"] == 2, name
    assert stages["multi-gpu"]["replicas"] == 2 and stages["larger-batch"]["settings"]["batch_factor"] == 4
    assert [loader["name"] for loader in report["pipeline"]] == ["keras-sequence", "read-ahead"]
    assert report["matmul_gflops"]["float32"] > 0
    with Image.open(out / "timings.png") as chart:
        assert chart.format == "PNG"


@needs_jax
def test_the_jax_stages_follow_the_hardware():
    from deblur.timings.jax import plan_jax_stages

    h200s = {stage.name: stage for stage in plan_jax_stages([(9, 0), (9, 0)], False, 2)}
    assert all(stage.skipped is None for stage in h200s.values())
    assert h200s["multi-gpu"].setup.policy == "mixed_bfloat16" and len(h200s["multi-gpu"].setup.devices) == 2
    assert h200s["larger-batch"].setup.batch_factor == 4 and h200s["larger-batch"].setup.devices == ("0", "1")

    turing = {stage.name: stage for stage in plan_jax_stages([(7, 5)], False, 1)}
    assert "before 8.0" in turing["mixed-bfloat16"].skipped and turing["mixed-float16"].skipped is None
    assert turing["larger-batch"].setup.policy == "mixed_float16"

    zen4 = {stage.name: stage for stage in plan_jax_stages([], True, 1)}
    assert zen4["mixed-bfloat16"].skipped is None and zen4["larger-batch"].setup.policy == "mixed_bfloat16"
    assert [stage.name for stage in select_stages(list(zen4.values()), ["read-ahead"])] == ["read-ahead"]
