"""Flicker: does deblurring frame by frame make a still scene shimmer?

A hand-held clip of a still scene is made from a photo: every frame is the same sharp photo blurred by a camera
shake of its own (the hand moves; the scene does not), plus a little noise, 30 fps. The clip goes through
`deblur predict` like any other. Flicker is then the mean absolute difference between consecutive frames, in
8-bit levels, over the whole frame (all of it is static): for the blurry input, for the deblurred output and
for the sharp photo (0: it never changes). Output flicker above the input's would mean the model adds shimmer;
below it, the model steadies the picture. Also the PSNR of each against the sharp photo.

    python benchmarks/video_flicker.py [--photo PATH] [--frames 24] [--size 720] [--model pretrained|F]
                                       [--method network|kernel]

`--method kernel` measures the camera-shake kernel path on the same clip (an estimate per frame; `auto` sends clips
to the network, so it measures the network).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
from PIL import Image
from skimage import data as skimage_data

from deblur.data.kernels import apply_blur, random_kernel
from deblur.hardware import cpu_name
from deblur.inference import open_deblurrer
from deblur.losses import image_psnr
from deblur.predict import plan_inputs, predict_files
from deblur.settings import WriteSettings
from deblur.timings.photos import write_clip
from deblur.ways import DEFAULT_METHOD, METHODS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--photo", type=Path)
    parser.add_argument("--frames", type=int, default=24)
    parser.add_argument("--size", type=int, default=720, help="frame height; width 16:9")
    parser.add_argument("--max-length", type=float, default=15.0, help="longest shake per frame, px")
    parser.add_argument("--model", default=None)
    parser.add_argument("--method", default=DEFAULT_METHOD, choices=METHODS)
    args = parser.parse_args()
    import av

    photo = np.asarray(Image.open(args.photo).convert("RGB")) if args.photo else skimage_data.astronaut()
    height, width = args.size, args.size * 16 // 9
    scale = max(height / photo.shape[0], width / photo.shape[1])
    big = Image.fromarray(photo).resize(
        (int(np.ceil(photo.shape[1] * scale)), int(np.ceil(photo.shape[0] * scale))), Image.Resampling.BICUBIC
    )
    sharp = np.asarray(big)[:height, :width].astype(np.float32) / 255
    rng = np.random.default_rng(0)
    print(f"CPU: {cpu_name()}; {args.frames} frames of {width}x{height}, shake up to {args.max_length:g} px a frame")
    deblurrer, chosen = open_deblurrer(args.model, method=args.method, log=print)
    with tempfile.TemporaryDirectory() as tmp:
        clip = Path(tmp) / "still.mp4"
        frames = []
        for _ in range(args.frames):
            kernel = random_kernel(rng, 3.0, args.max_length)
            blurry = np.clip(apply_blur(sharp, kernel) + rng.normal(0, 0.005, sharp.shape), 0, 1)
            frames.append(np.round(blurry * 255).astype(np.uint8))
        write_clip(clip, frames)
        write = WriteSettings(str(Path(tmp) / "out"))
        report = predict_files(plan_inputs([clip], write), deblurrer, write, log=print)
        frames = {}
        for name, path in (("blurry input", clip), ("deblurred", report.written[0])):
            with av.open(str(path)) as container:
                frames[name] = [f.to_ndarray(format="rgb24").astype(np.float32) for f in container.decode(video=0)]
    for name, video in frames.items():
        flicker = np.mean([np.abs(b - a).mean() for a, b in zip(video, video[1:], strict=False)])
        fidelity = np.mean([image_psnr(sharp, frame / 255) for frame in video])
        print(f"{name}: flicker {flicker:.2f} levels between consecutive frames; {fidelity:.2f} dB against sharp")
    print("sharp photo: flicker 0.00 (it does not change)")


if __name__ == "__main__":
    main()
