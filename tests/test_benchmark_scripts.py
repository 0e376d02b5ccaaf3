"""Every script under benchmarks/ still imports what it uses from deblur and parses its options: a moved name had
gone unseen for ten days in one of them (benchmarks/gpu_speed.py), where the next GPU session would have met it.
Running them is left to `bash benchmarks/smoke.sh` (every one that needs no data, at its smallest; some seventeen
minutes, too long for CI)."""

import runpy
import sys
from pathlib import Path

import pytest

SCRIPTS = sorted((Path(__file__).parents[1] / "benchmarks").glob("*.py"))


def test_the_list_is_not_empty():
    assert len(SCRIPTS) > 10


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda path: path.stem)
def test_a_benchmark_imports_and_shows_its_help(monkeypatch, capsys, script):
    namespace = runpy.run_path(str(script))  # not as __main__: its imports only
    monkeypatch.setattr(sys, "argv", [str(script), "--help"])
    with pytest.raises(SystemExit) as stopped:
        namespace["main"]()
    assert stopped.value.code == 0
    assert capsys.readouterr().out.startswith("usage:")
