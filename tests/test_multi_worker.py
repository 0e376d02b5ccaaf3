"""Two real worker processes on 127.0.0.1 under MultiWorkerMirroredStrategy, with the smoke config."""

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest


def free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


@pytest.mark.slow
def test_two_workers_train_in_step(tmp_path):
    workers = [f"127.0.0.1:{port}" for port in free_ports(2)]
    out = tmp_path / "run"
    processes = []
    for index in range(2):
        env = {
            **os.environ,
            "TF_CONFIG": json.dumps({"cluster": {"worker": workers}, "task": {"type": "worker", "index": index}}),
            "TMPDIR": str(tmp_path),  # where the non-chief worker keeps its temporary checkpoints
        }
        command = [sys.executable, "-m", "deblur", "train", "--config", "smoke", "--strategy", "multi-worker"]
        command += ["--precision", "float32", "--out", str(out)]  # not --quiet: the epoch lines are compared
        processes.append(
            subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        )
    logs = [process.communicate(timeout=300)[0] for process in processes]
    # Both workers' tails on failure: when one crashes the other only reports that its peer stopped.
    tails = "\n".join(f"--- worker-{index} ---\n{log[-3000:]}" for index, log in enumerate(logs))
    assert [process.returncode for process in processes] == [0, 0], tails
    assert "2 worker(s), 2 replica(s) in all; this is worker-0 (chief)" in logs[0]
    assert "global batch 4 = 2 per replica x 2 replica(s)" in logs[1]
    # The same loss and validation scores on both workers each epoch: they train one model, in step.
    epochs = [re.findall(r"epoch \d+: loss [\d.]+, val PSNR [\d.]+", log) for log in logs]
    assert len(epochs[0]) == 2 and epochs[0] == epochs[1]
    fingerprints = [re.findall(r"final weights fingerprint: (\w+)", log) for log in logs]
    assert len(fingerprints[0]) == 1 and fingerprints[0] == fingerprints[1]  # identical weights at the end
    assert (out / "model.keras").is_file() and "saved" not in logs[1]  # only the chief writes
    assert not list(Path(tmp_path).glob("deblur-worker-1-*"))  # the worker's temporary checkpoints are gone
