"""Real camera shake judged by eye: Lai et al.'s 100 real shaken photos through the network and the kernel path,
contact sheets to look at, labels kept in benchmarks/lai_real_labels.csv, and how `--method auto` fares on them.

    # each photo through the network (deblur predict's way) and the kernel path, and auto's choice for it
    python benchmarks/shake_labels.py run ../shared/data/camera_shake_dev/real --out /tmp/lai_real

    # contact sheets, 10 photos a sheet: blurry | network | kernel path, the same crop of each at full resolution
    python benchmarks/shake_labels.py sheet /tmp/lai_real

    # with the labels: how often auto picks the better way where one is clearly better, and where it leaves a photo
    # clearly worse than its input
    python benchmarks/shake_labels.py score /tmp/lai_real benchmarks/lai_real_labels.csv

A label says which result is clearly better to the eye: `kernel`, `network`, or `neither` (alike, or both no
better than the input); `kernel-worse` marks a kernel result clearly worse than the blurry photo (ringing,
artefacts). The photos are for measurement only and are not in the repository (their SOURCES.md): the sheets are
made where you run this.
"""

from __future__ import annotations

import argparse
import csv
import json
import time
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

LABELS = ("kernel", "network", "neither", "kernel-worse")


def run(real: Path, out: Path) -> None:
    from deblur.imageio import read_photo
    from deblur.inference import open_deblurrer
    from deblur.shake.choose import choose
    from deblur.shake.restore import restore

    network, _ = open_deblurrer(None, precision="float32", log=print)
    photos = sorted(p for p in real.iterdir() if p.suffix.lower() in {".jpg", ".png", ".jpeg"})
    choices = {}
    for folder in ("network", "kernel"):
        (out / folder).mkdir(parents=True, exist_ok=True)
    for path in photos:
        rgb = read_photo(path).rgb
        started = time.perf_counter()
        kernel = restore(rgb)
        kernel_seconds = time.perf_counter() - started
        chosen = choose(rgb)
        restored = network(rgb)
        for folder, image in (("network", restored), ("kernel", kernel)):
            Image.fromarray(np.round(np.clip(image, 0, 1) * 255).astype(np.uint8)).save(
                out / folder / f"{path.stem}.png"
            )
        choices[path.name] = {
            "auto": "kernel" if chosen.deblurred is not None else "network",
            "sharpness": round(chosen.sharpness, 3),
            "extent": None if chosen.estimate is None else int(chosen.estimate.extent),
            "kernel_seconds": round(kernel_seconds, 2),
        }
        print(path.name, json.dumps(choices[path.name]), flush=True)
    (out / "choices.json").write_text(json.dumps({"source": str(real), "photos": choices}, indent=1))


def busiest_crop(gray: np.ndarray, size: int) -> tuple[int, int]:
    """The top-left corner of the `size` square with the most gradient energy: where blur and ringing show."""
    gy, gx = np.gradient(gray)
    energy = np.hypot(gx, gy)
    best, corner = -1.0, (0, 0)
    step = max(8, size // 4)
    for top in range(0, max(1, gray.shape[0] - size + 1), step):
        for left in range(0, max(1, gray.shape[1] - size + 1), step):
            total = float(energy[top : top + size, left : left + size].sum())
            if total > best:
                best, corner = total, (top, left)
    return corner


def sheet(folder: Path, rows: int = 10, crop: int = 240) -> None:
    choices = json.loads((folder / "choices.json").read_text())
    real = Path(choices["source"])
    names = sorted(choices["photos"])
    (folder / "sheets").mkdir(exist_ok=True)
    for first in range(0, len(names), rows):
        chunk = names[first : first + rows]
        canvas = Image.new("RGB", (3 * crop + 4 * 6 + 170, len(chunk) * (crop + 6) + 6), "white")
        draw = ImageDraw.Draw(canvas)
        for row, name in enumerate(chunk):
            blurry = Image.open(real / name).convert("RGB")
            size = min(crop, *blurry.size)
            top, left = busiest_crop(np.asarray(blurry.convert("L"), np.float32) / 255, size)
            box = (left, top, left + size, top + size)
            stem = Path(name).stem
            images = [
                blurry,
                Image.open(folder / "network" / f"{stem}.png"),
                Image.open(folder / "kernel" / f"{stem}.png"),
            ]
            y = 6 + row * (crop + 6)
            for column, image in enumerate(images):
                canvas.paste(image.convert("RGB").crop(box), (6 + column * (crop + 6), y))
            facts = choices["photos"][name]
            text = f"{first + row + 1}. {stem}\nauto: {facts['auto']}\nsharpness {facts['sharpness']}"
            draw.text((3 * (crop + 6) + 10, y + 4), text, fill="black")
        path = folder / "sheets" / f"sheet_{first // rows + 1:02d}.jpg"
        canvas.save(path, quality=90)
        print(f"wrote {path} (columns: blurry | network | kernel path)")


def score(folder: Path, labels_file: Path) -> None:
    choices = json.loads((folder / "choices.json").read_text())["photos"]
    with labels_file.open() as file:
        labels = {
            row["photo"]: row["label"] for row in csv.DictReader(line for line in file if not line.startswith("#"))
        }
    unknown = {label for label in labels.values() if label not in LABELS}
    if unknown:
        raise SystemExit(f"{labels_file}: unknown labels {sorted(unknown)}; use {', '.join(LABELS)}")
    counts = {label: sum(1 for value in labels.values() if value == label) for label in LABELS}
    clear = {name: label for name, label in labels.items() if label in ("kernel", "network")}
    right = sum(1 for name, label in clear.items() if choices[name]["auto"] == label)
    worse = [name for name, label in labels.items() if label == "kernel-worse" and choices[name]["auto"] == "kernel"]
    print(f"labels: {counts}")
    print(f"auto picks the clearly better way on {right} of {len(clear)} ({right / max(len(clear), 1):.0%})")
    kernel_auto = sum(1 for facts in choices.values() if facts["auto"] == "kernel")
    print(f"auto took the kernel path on {kernel_auto} of {len(choices)}")
    print(f"left clearly worse than the input by auto: {len(worse)} {worse}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    ran = commands.add_parser("run")
    ran.add_argument("real", type=Path)
    ran.add_argument("--out", type=Path, required=True)
    sheets = commands.add_parser("sheet")
    sheets.add_argument("folder", type=Path)
    sheets.add_argument("--rows", type=int, default=10)
    sheets.add_argument("--crop", type=int, default=240)
    scored = commands.add_parser("score")
    scored.add_argument("folder", type=Path)
    scored.add_argument("labels", type=Path)
    args = parser.parse_args()
    if args.command == "run":
        run(args.real, args.out)
    elif args.command == "sheet":
        sheet(args.folder, args.rows, args.crop)
    else:
        score(args.folder, args.labels)


if __name__ == "__main__":
    main()
