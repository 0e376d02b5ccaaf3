"""The engine's overhead: `deblur predict` on one process against `deblur predict --engine ray --workers N` on this
machine, in one run, over the same photos, each command run as a user runs it (its own process, model load and,
for the engine, a local Ray started and stopped).

0. This CPU, and TensorFlow's 2048x2048 matmul rates.
1. For each command, over --few and --many photos of --size: wall seconds. Photos/s is the whole run's; the
   steady rate is (many - few) / (its seconds for many - for few), which leaves out start-up (Ray, model loads),
   and its share of the bfloat16 matmul rate (the model's forward FLOPs a photo, times photos/s).
2. Peak memory (resident) of the plain process, of each engine worker, and of Ray's own processes together.

    python benchmarks/scale.py [--workers 2] [--size 1280x720] [--few 4] [--many 16] [--runtime auto]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from deblur.hardware import cpu_name
from deblur.inference import load_deblurrer
from deblur.paths import choose_model
from deblur.timings.flops import forward_flops_per_pixel, matmul_rate
from deblur.timings.photos import write_photos


def resident_peaks(root: int, stop: threading.Event, peaks: dict[str, float]) -> None:
    """Sample every process's resident memory until `stop`; keep each kind's peak in MB (the plain process, each
    deblur worker, and the sum of Ray's others)."""
    while not stop.is_set():
        ray_total = 0.0
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                title = (entry / "cmdline").read_bytes().split(b"\0")[0].decode(errors="replace")
                status = (entry / "status").read_text()
            except OSError:
                continue
            rss = next((int(line.split()[1]) / 1024 for line in status.splitlines() if line.startswith("VmRSS")), 0)
            if int(entry.name) == root:
                peaks["command"] = max(peaks.get("command", 0.0), rss)
            elif title.startswith("ray::MapWorker(Map(DeblurWorker))"):
                peaks[f"worker {entry.name}"] = max(peaks.get(f"worker {entry.name}", 0.0), rss)
            elif title.startswith("ray::") or "ray/core/src" in title or "/ray/" in title or "raylet" in title:
                ray_total += rss
        peaks["ray"] = max(peaks.get("ray", 0.0), ray_total)
        time.sleep(0.25)


def timed(command: list[str]) -> tuple[float, dict[str, float], str]:
    started = time.perf_counter()
    run = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    stop, peaks = threading.Event(), {}
    sampler = threading.Thread(target=resident_peaks, args=(run.pid, stop, peaks), daemon=True)
    sampler.start()
    output, _ = run.communicate()
    seconds = time.perf_counter() - started
    stop.set()
    sampler.join()
    if run.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{output[-2000:]}")
    return seconds, peaks, output


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--size", default="1280x720")
    parser.add_argument("--few", type=int, default=4)
    parser.add_argument("--many", type=int, default=16)
    parser.add_argument("--runtime", default="auto")
    args = parser.parse_args()
    width, height = (int(n) for n in args.size.split("x"))

    rates = {dtype: matmul_rate(dtype).gflops for dtype in ("float32", "bfloat16")}
    print(f"CPU: {cpu_name()}; matmul float32 {rates['float32']:.0f}, bfloat16 {rates['bfloat16']:.0f} GFLOP/s")
    deblur = [sys.executable, "-m", "deblur", "predict", "--runtime", args.runtime, "-q"]
    commands = {
        "plain deblur predict": [],
        f"--engine ray --workers {args.workers}": ["--engine", "ray", "--workers", str(args.workers)],
    }
    print(f"\n{args.few} and {args.many} photos of {width}x{height}, runtime {args.runtime}")
    flops = forward_flops_per_pixel(load_deblurrer(choose_model(None).path, log=lambda _: None).model) * width * height
    print("| command | photos | seconds | photos/s | steady photos/s (share of bf16 rate) | peak memory (MB) |")
    print("| --- | ---: | ---: | ---: | ---: | --- |")
    with tempfile.TemporaryDirectory(prefix="deblur-scale-") as folder:
        for label, extra in commands.items():
            seconds = {}
            for count in (args.few, args.many):
                photos = Path(folder) / f"in-{count}"
                if not photos.exists():
                    write_photos(photos, height, width, count)
                out = Path(folder) / f"out-{len(seconds)}-{label[:5]}"
                seconds[count], peaks, _ = timed([*deblur, str(photos), "--out", str(out), *extra])
                steady = ""
                if count == args.many:
                    rate = (args.many - args.few) / (seconds[args.many] - seconds[args.few])
                    steady = f"{rate:.3f} ({rate * flops / 1e9 / rates['bfloat16']:.0%})"
                workers = [mb for name, mb in peaks.items() if name.startswith("worker")]
                memory = f"command {peaks.get('command', 0):.0f}"
                if workers:
                    memory += f", each worker up to {max(workers):.0f}, Ray's own {peaks.get('ray', 0):.0f}"
                rate = count / seconds[count]
                print(f"| {label} | {count} | {seconds[count]:.1f} | {rate:.3f} | {steady} | {memory} |")
                sys.stdout.flush()


if __name__ == "__main__":
    main()
