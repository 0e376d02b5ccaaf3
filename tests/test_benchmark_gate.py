"""benchmarks/kernel_aware_gate.py: the gate's histogram, pairs told right or wrong by their deconvolution."""

import runpy
import sys
from pathlib import Path

import numpy as np
from helpers import save_model, write_image

from deblur.model import GATE_START

SCRIPT = Path(__file__).parents[1] / "benchmarks" / "kernel_aware_gate.py"


def test_gate_histogram_by_kind_of_deconvolution(tmp_path, monkeypatch, capsys):
    rng = np.random.default_rng(0)
    sharp = rng.integers(50, 200, (40, 48, 3)).astype(np.int16)
    blurry = np.clip(sharp + rng.normal(0, 12, sharp.shape), 0, 255).astype(np.uint8)
    worse = np.clip(sharp + rng.normal(0, 50, sharp.shape), 0, 255).astype(np.uint8)
    sharp = sharp.astype(np.uint8)
    for name, deconvolved in (("right", sharp), ("right2", sharp), ("wrong", worse)):
        for part, image in (("blur", blurry), ("sharp", sharp), ("deconvolved", deconvolved)):
            write_image(tmp_path / "test" / name / part / "000.png", image)
    # An untrained kernel-aware model keeps its starting gate, sigmoid(GATE_START), everywhere.
    model = save_model(tmp_path / "run", kernel_aware=True)
    monkeypatch.setattr(sys, "argv", [str(SCRIPT), str(tmp_path / "test"), "--model", str(model)])
    runpy.run_path(str(SCRIPT), run_name="__main__")
    out = capsys.readouterr().out
    start = 1 / (1 + np.exp(-GATE_START))
    assert "3 pairs" in out
    assert f"| right (gains > 1 dB) | 2 | {start:.2f} | 100% | 0% |" in out
    assert f"| wrong (loses > 1 dB) | 1 | {start:.2f} | 100% |" in out
    assert "about even" not in out
