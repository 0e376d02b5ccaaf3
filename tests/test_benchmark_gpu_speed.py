"""benchmarks/gpu_speed.py: its prediction and clip parts run on this CPU as they will on a lent GPU, whose minutes
are too few to find a broken script there (its prediction part had ended on the Deblurrer's tiles, which had moved
to its tiling, unseen until a CPU run of the script)."""

import json
import runpy
from pathlib import Path
from types import SimpleNamespace

import pytest

pytest.importorskip("jax")

SCRIPT = Path(__file__).parents[1] / "benchmarks" / "gpu_speed.py"


def test_predict_and_clip_speed_run_through_the_jax_runner_and_give_json():
    script = runpy.run_path(str(SCRIPT))
    rows = script["predict_speed"]([(72, 128)], 1)
    assert [(row["precision"], row["size"], row["tiles"]) for row in rows] == [
        ("float32", "128x72", 1),
        ("bfloat16", "128x72", 1),
    ]
    assert all(row["seconds"] > 0 and row["runtime"].startswith("JAX") for row in rows)
    clip = script["clip_speed"](72, 128, 2, 1, SimpleNamespace(gflops=100.0))
    assert clip["size"] == "128x72" and clip["frames_per_call"] == 2 and clip["frames_per_second"] > 0
    json.dumps([rows, clip])  # what the report holds is written as JSON
