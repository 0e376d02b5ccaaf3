"""TensorFlow's native start-up lines stay off the terminal; anything else written to descriptor 2 gets through."""

import io
import os
import subprocess
import sys
import textwrap

import pytest

from deblur.console import LineProgress, is_noise, progress_bar

NOISE_LINES = [
    "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR",
    "I0000 00:00:1795320925.030877    8043 port.cc:153] oneDNN custom operations are on. You may see slightly",
    "I0000 00:00:1795320925.035063    8043 cudart_stub.cc:31] Could not find cuda drivers on your machine, GPU",
    "E0000 00:00:1795320927.950479    8043 cuda_platform.cc:52] failed call to cuInit: INTERNAL: CUDA error",
    "E0000 00:00:1795320469.204167    6831 util.cc:131] oneDNN supports DT_UINT8 only on platforms with AVX-512.",
    # a LiteRT export's (exact, from `deblur export --format litert`)
    "E0000 00:00:1796534755.152287   21564 node_def_util.cc:682] NodeDef mentions attribute Truncate which is not in "
    "the op definition: Op<name=Identity; signature=input:T -> output:T; attr=T:type> This may be expected if your "
    "graph generating binary is newer  than this binary. Unknown attributes will be ignored. NodeDef: {{node unnamed}}",
]
GENUINE = "E0000 00:00:1795320469.204167    6831 bfc_allocator.cc:1] OOM when allocating tensor with shape[4,256]"


@pytest.mark.parametrize("line", NOISE_LINES)
def test_start_up_lines_are_noise(line):
    assert is_noise(line)


def test_errors_are_not_noise():
    assert not is_noise(GENUINE)
    assert not is_noise("Traceback (most recent call last):")


def test_filter_drops_noise_and_keeps_the_rest_written_natively():
    program = textwrap.dedent(
        f"""
        import os, sys
        from deblur.console import hide_native_noise
        hide_native_noise()
        os.write(2, {NOISE_LINES[1]!r}.encode() + b"\\n" + {GENUINE!r}.encode() + b"\\n")
        print("from python", file=sys.stderr)
        """
    )
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines() == ["from python", GENUINE] or result.stderr.splitlines() == [
        GENUINE,
        "from python",
    ]


def test_tensorflows_retracing_warning_is_dropped_and_its_other_warnings_kept():
    # printed once a folder's photos had met the model at six sizes, with a paragraph of advice on loops
    program = textwrap.dedent(
        """
        import logging
        from deblur.console import hide_native_noise
        hide_native_noise()
        log = logging.getLogger("tensorflow")
        log.warning("5 out of the last 6 calls to <function f> triggered tf.function retracing. Tracing is ...")
        log.warning("a warning that means something")
        """
    )
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines() == ["a warning that means something"]


@pytest.mark.slow
def test_a_command_prints_no_start_up_noise(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}  # as a user has it: unset
    command = [sys.executable, "-m", "deblur", "train", "--config", "smoke", "--out", str(tmp_path / "run"), "-q"]
    result = subprocess.run(
        [*command, "--epochs", "1", "--steps-per-epoch", "1"], capture_output=True, text=True, env=env, timeout=300
    )
    assert result.returncode == 0, result.stderr
    assert "done: 1 steps" in result.stdout and "model.keras" in result.stdout
    assert [line for line in result.stderr.splitlines() if is_noise(line)] == []
    assert "absl::InitializeLog" not in result.stderr and "cuInit" not in result.stderr


def test_a_bar_that_is_not_on_a_terminal_writes_a_few_plain_lines(monkeypatch):
    """Under nohup or in CI, tqdm would write every update: a log of carriage returns."""
    monkeypatch.setattr(LineProgress, "min_gap", 0.0)
    log = io.StringIO()
    bar = progress_bar(total=1000, desc="steps", unit="step", file=log, mininterval=0)
    assert isinstance(bar, LineProgress)
    for _ in range(1000):
        bar.update(1)
        bar.set_postfix(loss="0.1")
    bar.close()
    lines = log.getvalue().splitlines()
    assert "\r" not in log.getvalue()
    assert 5 <= len(lines) <= 12  # one every 10%, and the last
    assert lines[-1].startswith("steps: 100%") and "1000/1000" in lines[-1]


def test_a_bar_on_a_terminal_is_tqdms_own():
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    bar = progress_bar(total=3, file=Terminal())
    assert type(bar).__name__ == "tqdm"
    bar.close()
