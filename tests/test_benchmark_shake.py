"""benchmarks/shake.py: each method timed as `deblur predict` runs it."""

import runpy
from pathlib import Path

import pytest

import deblur.inference

SCRIPT = Path(__file__).parents[1] / "benchmarks" / "shake.py"


@pytest.mark.parametrize(
    ("method", "estimates"), [("kernel", None), ("kernel:3", 3), ("kernel:1", 1), ("network", None)]
)
def test_a_plain_method_tries_as_many_estimates_as_predict(monkeypatch, method, estimates):
    asked = {}

    class Stub:
        kernel_aware = False
        settings = "stub"

        def __call__(self, blurry):
            return blurry

    def stub_open(model, **options):
        asked.update(options)
        return Stub(), None

    monkeypatch.setattr(deblur.inference, "open_deblurrer", stub_open)
    measure = runpy.run_path(str(SCRIPT))["measure"]
    result = measure(method, 64, 48, repeats=1, shake=0.05)
    assert asked["method"] == method.partition(":")[0] and asked["estimates"] == estimates  # None: predict's default
    assert result["settings"] == "stub"
