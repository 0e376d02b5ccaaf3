"""`deblur predict` on a clip against `deblur predict` on the same frames as PNG photos, side by side in one run,
with the CPU's matmul rate measured in the same run; and the peak memory of a clip run, in its own process.

The clip is made here from a real photograph (scikit-image's astronaut, or --photo) panned across the frame,
so no video file is needed. Per size: seconds per frame and frames/s through the clip path (decoding, batching,
encoding H.264, joining) and through the photo path (PNG in, PNG out), and their ratio.

    python benchmarks/video_speed.py [--sizes 720 1080] [--frames 8] [--photo PATH] [--model pretrained|F]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image
from skimage import data as skimage_data

from deblur.hardware import cpu_name
from deblur.inference import open_deblurrer
from deblur.predict import plan_inputs, predict_files
from deblur.settings import WriteSettings
from deblur.timings.flops import matmul_rate
from deblur.timings.photos import panned_frames, write_clip

SIZES = {360: (360, 640), 720: (720, 1280), 1080: (1080, 1920)}


def clip_frames(path: Path) -> list[np.ndarray]:
    import av

    with av.open(str(path)) as container:
        return [frame.to_ndarray(format="rgb24") for frame in container.decode(video=0)]


def peak_memory_mb(clip: Path, model: str | None, out: Path) -> float:
    """Peak resident memory of `deblur predict CLIP` in a process of its own (ru_maxrss of the child)."""
    script = (
        "import resource, sys\n"
        "from deblur.cli import app\n"
        "try:\n"
        f"    app({['predict', str(clip), '--out', str(out), '-q'] + (['--model', model] if model else [])!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    return float(done.stdout.strip().splitlines()[-1])


def files(inputs: list[Path], deblurrer, out: Path, **write):
    """`predict_files`, the function `deblur predict` calls, on `inputs` planned into `out`."""
    settings = WriteSettings(str(out), **write)
    return predict_files(plan_inputs(inputs, settings), deblurrer, settings, log=print)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="*", default=[720, 1080], choices=sorted(SIZES))
    parser.add_argument("--frames", type=int, default=8)
    parser.add_argument("--photo", type=Path, help="a photo to pan across (default: scikit-image's astronaut)")
    parser.add_argument("--model", default=None)
    parser.add_argument("--no-memory", action="store_true", help="skip the peak-memory runs")
    args = parser.parse_args()
    photo = np.asarray(Image.open(args.photo).convert("RGB")) if args.photo else skimage_data.astronaut()
    rates = {dtype: matmul_rate(dtype).gflops for dtype in ("float32", "bfloat16")}
    print(f"CPU: {cpu_name()}; matmul float32 {rates['float32']:.0f}, bfloat16 {rates['bfloat16']:.0f} GFLOP/s")
    deblurrer, chosen = open_deblurrer(args.model, log=print)
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for size in args.sizes:
            height, width = SIZES[size]
            clip = tmp / f"clip{size}.mp4"
            write_clip(clip, panned_frames(photo, height, width, args.frames + 1))
            folder = tmp / f"frames{size}"
            folder.mkdir()
            for index, frame in enumerate(clip_frames(clip)):
                Image.fromarray(frame).save(folder / f"{index:04d}.png")
            # The first frame of each path traces the model's graph for this size: timed apart.
            warm = sorted(folder.iterdir())[0]
            files([warm], deblurrer, tmp / "warm", overwrite=True)
            started = time.perf_counter()
            photos = files([folder], deblurrer, tmp / f"out{size}")
            photo_seconds = (time.perf_counter() - started) / len(photos.written)
            started = time.perf_counter()
            clips = files([clip], deblurrer, tmp / f"vid{size}")
            clip_seconds = (time.perf_counter() - started) / clips.clips[0].frames
            results[size] = {"photo_s": photo_seconds, "clip_s": clip_seconds, "frames": clips.clips[0].frames}
            print(
                f"{width}x{height}: clip {clip_seconds:.2f} s a frame ({1 / clip_seconds:.2f} frames/s), photos "
                f"{photo_seconds:.2f} s a frame; clip / photos = {clip_seconds / photo_seconds:.3f} "
                f"({deblurrer.precision}, {clips.clips[0].frames} frames)"
            )
            if not args.no_memory:
                peak = peak_memory_mb(clip, args.model, tmp / f"mem{size}")
                results[size]["peak_mb"] = peak
                print(f"{width}x{height}: peak memory of deblur predict on the clip: {peak:.0f} MB")
    print(json.dumps(results))


if __name__ == "__main__":
    main()
