"""Real camera shake judged by eye: Lai et al.'s 100 real shaken photos (and GOPRO's 11 dev pairs) through the
network, the kernel path and the kernel-aware network (the default), contact sheets to look at, labels kept in
benchmarks/lai_real_labels.csv (and benchmarks/gopro_dev_labels.csv), and how the default fares.

    # each photo through the network, the kernel path and the default
    python benchmarks/shake_labels.py run ../shared/data/camera_shake_dev/real --out /tmp/lai_real [--every 4]

    # contact sheets, 10 photos a sheet: blurry | network | kernel path | default (| sharp, given --sharp), the same
    # crop of each at full resolution
    python benchmarks/shake_labels.py sheet /tmp/lai_real

    # with the labels: how often the default is the better way where one is clearly better, and where it leaves a
    # photo clearly worse than its input
    python benchmarks/shake_labels.py score /tmp/lai_real benchmarks/lai_real_labels.csv

A label says which of the network and the kernel path is clearly better to the eye: `kernel`, `network`, or
`neither` (alike, or both no better than the input); `kernel-worse` marks a kernel result clearly worse than the
blurry photo (ringing, artefacts). A second label, `default`, judges the kernel-aware network's result against
those two: `best` (clearly the best of the three), `as-good` (as good as the better of the others), `behind`
(another way clearly better) or `worse` (clearly worse than the blurry photo). The photos are for measurement
only and are not in the repository (their SOURCES.md): the sheets are made where you run this.
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
DEFAULT_LABELS = ("best", "as-good", "behind", "worse")
WAYS = ("network", "kernel", "kernel-aware")  # the result folders, in the sheets' order


def run(real: Path, out: Path, every: int = 1, model: str | None = None) -> None:
    from deblur.imageio import read_photo
    from deblur.inference import open_deblurrer
    from deblur.shake.restore import restore

    network, _ = open_deblurrer(None, precision="float32", method="network", log=print)
    aware, _ = open_deblurrer(model, precision="float32", method="kernel-aware", log=print)
    photos = sorted(p for p in real.iterdir() if p.suffix.lower() in {".jpg", ".png", ".jpeg"})[::every]
    choices = {}
    for folder in WAYS:
        (out / folder).mkdir(parents=True, exist_ok=True)
    for path in photos:
        rgb = read_photo(path).rgb
        started = time.perf_counter()
        kernel = restore(rgb)
        kernel_seconds = time.perf_counter() - started
        started = time.perf_counter()
        default = aware(rgb)
        aware_seconds = time.perf_counter() - started
        for folder, image in zip(WAYS, (network(rgb), kernel, default), strict=True):
            Image.fromarray(np.round(np.clip(image, 0, 1) * 255).astype(np.uint8)).save(
                out / folder / f"{path.stem}.png"
            )
        choices[path.name] = {
            "kernel_seconds": round(kernel_seconds, 2),
            "default_seconds": round(aware_seconds, 2),
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


def sheet(folder: Path, rows: int = 10, crop: int = 240, sharp: Path | None = None) -> None:
    choices = json.loads((folder / "choices.json").read_text())
    real = Path(choices["source"])
    names = sorted(choices["photos"])
    ways = [way for way in WAYS if (folder / way).is_dir()]
    columns = 1 + len(ways) + (sharp is not None)
    (folder / "sheets").mkdir(exist_ok=True)
    for first in range(0, len(names), rows):
        chunk = names[first : first + rows]
        canvas = Image.new("RGB", (columns * (crop + 6) + 6 + 170, len(chunk) * (crop + 6) + 6), "white")
        draw = ImageDraw.Draw(canvas)
        for row, name in enumerate(chunk):
            blurry = Image.open(real / name).convert("RGB")
            size = min(crop, *blurry.size)
            top, left = busiest_crop(np.asarray(blurry.convert("L"), np.float32) / 255, size)
            box = (left, top, left + size, top + size)
            stem = Path(name).stem
            images = [blurry, *(Image.open(folder / way / f"{stem}.png") for way in ways)]
            if sharp is not None:
                images.append(Image.open(sharp / name))
            y = 6 + row * (crop + 6)
            for column, image in enumerate(images):
                canvas.paste(image.convert("RGB").crop(box), (6 + column * (crop + 6), y))
            text = f"{first + row + 1}. {stem}"
            draw.text((columns * (crop + 6) + 10, y + 4), text, fill="black")
        path = folder / "sheets" / f"sheet_{first // rows + 1:02d}.jpg"
        canvas.save(path, quality=90)
        shown = " | ".join(["blurry", *ways] + (["sharp"] if sharp is not None else []))
        print(f"wrote {path} (columns: {shown})")


def score(folder: Path, labels_file: Path) -> None:
    choices = json.loads((folder / "choices.json").read_text())["photos"]
    with labels_file.open() as file:
        rows = list(csv.DictReader(line for line in file if not line.startswith("#")))
    # only the photos this run holds (a run with --every holds some of them)
    labels = {row["photo"]: row["label"] for row in rows if row["photo"] in choices}
    defaults = {row["photo"]: row.get("default") or "" for row in rows if row["photo"] in choices}
    unknown = {label for label in labels.values() if label not in LABELS}
    unknown |= {label for label in defaults.values() if label and label not in DEFAULT_LABELS}
    if unknown:
        raise SystemExit(f"{labels_file}: unknown labels {sorted(unknown)}; use {', '.join(LABELS + DEFAULT_LABELS)}")
    counts = {label: sum(1 for value in labels.values() if value == label) for label in LABELS}
    print(f"labels: {counts}")
    judged = {name: value for name, value in defaults.items() if value}
    if judged:
        # where one of the three ways is clearly better than another: the older ways' label says so, or the default
        # is clearly better or clearly behind
        decided = [name for name in judged if labels[name] in ("kernel", "network") or judged[name] != "as-good"]
        good = sum(1 for name in decided if judged[name] in ("best", "as-good"))
        print(f"default judged on {len(judged)}: { {v: list(judged.values()).count(v) for v in DEFAULT_LABELS} }")
        print(
            f"the default is the best way (or as good) on {good} of {len(decided)} ({good / max(len(decided), 1):.0%})"
        )
        print(f"left clearly worse than the input by the default: {[n for n, v in judged.items() if v == 'worse']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    ran = commands.add_parser("run")
    ran.add_argument("real", type=Path)
    ran.add_argument("--out", type=Path, required=True)
    ran.add_argument("--every", type=int, default=1, help="every n-th photo (sorted by name)")
    ran.add_argument("--model", help="the kernel-aware model.keras (default: the shipped one)")
    sheets = commands.add_parser("sheet")
    sheets.add_argument("folder", type=Path)
    sheets.add_argument("--rows", type=int, default=10)
    sheets.add_argument("--crop", type=int, default=240)
    sheets.add_argument("--sharp", type=Path, help="a folder of the sharp photos, by the blurry photos' names")
    scored = commands.add_parser("score")
    scored.add_argument("folder", type=Path)
    scored.add_argument("labels", type=Path)
    args = parser.parse_args()
    if args.command == "run":
        run(args.real, args.out, args.every, args.model)
    elif args.command == "sheet":
        sheet(args.folder, args.rows, args.crop, args.sharp)
    else:
        score(args.folder, args.labels)


if __name__ == "__main__":
    main()
