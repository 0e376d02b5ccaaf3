"""The default (`--method kernel-aware`) and `kernel` against the network: seconds and peak memory per photo, side by
side.

0. This CPU, and TensorFlow's 2048x2048 matmul in float32 and bfloat16 (the network's share is read against the
   bfloat16 rate).
1. For each size (default 1280x720 and 4000x3000, 12 MP): a camera-shaken photo (skimage's astronaut blurred by a
   hand-shake kernel) deblurred by each method through `open_deblurrer`, as predict runs it, each method in its own
   process so its peak memory (the process's maximum resident set, and its estimate's helper process's) is its own.
   Seconds are the best of --repeats after a warm-up call; each method's ratio to the network's is the figure the
   issues ask for.

    python benchmarks/shake.py [--sizes 1280x720,4000x3000] [--repeats 2] [--shake 0.03]
        [--methods network,kernel-aware,kernel,kernel:3]

`--shake` is the shake's length as a share of the photo's longer side. A method written `name:N` tries N
camera-shake estimates per photo (`--estimates N`); a plain name tries as many as `deblur predict` does
(`deblur.shake.tries.ESTIMATES`).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

METHODS = ("network", "kernel-aware", "kernel")


def measure(method: str, width: int, height: int, repeats: int, shake: float) -> dict:
    """In this process: seconds for one photo by `method` (`name` or `name:estimates`), and the peak memory."""
    import numpy as np
    from scipy.signal import fftconvolve

    from deblur.data.kernels import shake_trajectory, trajectory_kernel
    from deblur.inference import open_deblurrer
    from deblur.timings.photos import sample_photo

    kernel = trajectory_kernel(shake_trajectory(np.random.default_rng(0), shake * max(width, height)))
    sharp = sample_photo(width, height)
    blurry = np.stack([fftconvolve(sharp[:, :, c], kernel, mode="same") for c in range(3)], -1).astype(np.float32)
    method, _, estimates = method.partition(":")
    deblurrer, _ = open_deblurrer(
        None, method=method, estimates=int(estimates) if estimates else None, log=lambda _: None
    )
    if method == "kernel-aware" and not deblurrer.kernel_aware:
        raise SystemExit("this copy of deblur has no kernel-aware network: the default ran as the network")
    deblurrer(blurry)  # warm-up: compiling for the shape
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        deblurrer(blurry)
        best = min(best, time.perf_counter() - started)
    from deblur.shake.helper import peak_kb

    # the second estimate's helper process (`deblur.shake.helper`) holds memory of its own
    peak_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss + (peak_kb() or 0)) / 1024
    return {"seconds": best, "peak_mb": peak_mb, "settings": deblurrer.settings}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1280x720,4000x3000")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--shake", type=float, default=0.03)
    parser.add_argument("--methods", default=",".join(METHODS), help="comma separated, the network first")
    parser.add_argument("--one", nargs=3, help=argparse.SUPPRESS)  # method width height: the child's part
    args = parser.parse_args()
    if args.one:
        method, width, height = args.one
        print(json.dumps(measure(method, int(width), int(height), args.repeats, args.shake)))
        return

    from deblur.hardware import cpu_name
    from deblur.timings.flops import matmul_rate

    rates = {dtype: matmul_rate(dtype).gflops for dtype in ("float32", "bfloat16")}
    matmul = f"matmul float32 {rates['float32']:.0f}, bfloat16 {rates['bfloat16']:.0f} GFLOP/s"
    print(f"CPU: {cpu_name()}; {matmul}; shake {args.shake:g} of the longer side")
    print("| photo | method | runs as | seconds | peak memory (MB) | against the network |")
    print("| --- | --- | --- | ---: | ---: | ---: |")
    for size in args.sizes.split(","):
        width, height = (int(n) for n in size.split("x"))
        results = {}
        methods = args.methods.split(",")
        for method in methods:
            command = [
                sys.executable,
                __file__,
                "--repeats",
                str(args.repeats),
                "--shake",
                str(args.shake),
                "--one",
                method,
                str(width),
                str(height),
            ]
            done = subprocess.run(command, capture_output=True, text=True, check=True)
            results[method] = json.loads(done.stdout.strip().splitlines()[-1])
        for method in methods:
            result = results[method]
            ratio = f"{result['seconds'] / results['network']['seconds']:.2f}x" if method != "network" else ""
            print(
                f"| {width}x{height} | {method} | {result['settings']} | {result['seconds']:.2f} | "
                f"{result['peak_mb']:.0f} | {ratio} |"
            )


if __name__ == "__main__":
    main()
