"""How much each `--method` gains over the blurry input on camera shake and on scene motion: the model card's
figures for the kernel path, re-measured on your machine.

    # held-out sets made from any folder of sharp photos (never the ones you measure on): camera shake blurred in
    # linear light with noise and JPEG, 255 px grayscale crops (blurred in linear light and in sRGB values), and
    # scene motion that varies across the photo (where one kernel does not explain the blur)
    python benchmarks/shake_quality.py make --photos ../shared/data/photos --out /tmp/heldout
    # and one of long shake (15 to 80 px) on whole photos up to 800 px, to choose the estimate's settings on
    python benchmarks/shake_quality.py long --photos ../shared/data/photos --out /tmp/heldout/shake_long

    # gain per set and method; a set is a folder with blur/ and sharp/ (Lai et al.'s <photo>_kernel_0K.png
    # names are matched to sharp/<photo>.png)
    python benchmarks/shake_quality.py score ../shared/data/camera_shake_dev ../shared/data/gopro_real_dev \
        /tmp/heldout/* --methods network,kernel,kernel-aware --reach 3,5,8 [--every 4 --offset 1] [--log scores.jsonl]

    # where the kernel path loses on Lai et al.'s set (its kernels/ folder holds the true kernels): each non-blind step
    # (exponent of the gradient prior : fidelity) with the true kernel and with the blind estimate
    python benchmarks/shake_quality.py split ../shared/data/camera_shake_dev --steps 1:2000,0.667:8000 \
        [--network pretrained] [--every 2] [--log split.jsonl]

    # a before/after strip for the docs: crops of the blurry photo, the network's, the kernel path's and the
    # default's results (and the sharp photo, with each result's gain, when given)
    python benchmarks/shake_quality.py strip blurry.png [--sharp sharp.png] --crop 100,80,280 --out strip.jpg

PSNR gain over the blurry input, both at their best sub-pixel shift within each `--reach` px (quarter pixels, a
15 px border beyond the reach: Levin et al.'s protocol, as `deblur evaluate --align`; a blind estimate is known
only up to a shift, and Lai et al.'s blurry photos sit up to 8 px from their sharp ones, their kernels being
stored by extent while deblur keeps a photo where its blur's mass is) and with no shift. Every method runs
through `open_deblurrer`, as `deblur predict` runs it.
`split` scores at the best shift within 8 px.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from PIL import Image

SUFFIXES = {".png", ".jpg", ".jpeg", ".webp", ".bmp"}


def make(photos: Path, out: Path, seed: int = 36) -> None:
    """Four held-out sets of 32 pairs each from `photos` (each photo in one set only)."""
    from deblur.config import SynthConfig
    from deblur.data.degrade import degrade

    rng = np.random.default_rng(seed)
    files = sorted(p for p in photos.rglob("*") if p.suffix.lower() in SUFFIXES)
    chosen = [files[i] for i in rng.choice(len(files), min(len(files), 128), replace=False)]
    recipes = ("shake_photos", "shake_small_linear", "shake_small_srgb", "scene_motion")
    for index, path in enumerate(chosen):
        recipe = recipes[index % len(recipes)]
        sharp = np.asarray(Image.open(path).convert("RGB"), np.float32) / 255
        name = f"{path.parent.name}_{path.stem}"
        quality = None
        if recipe == "scene_motion":
            # half rolled/zoomed camera paths (blur everywhere, varying), half a kernel over random regions
            if index % 8 < 4:
                config = SynthConfig(blur="motion", min_length=8, max_length=40, max_rotation=4, max_zoom=0.04)
            else:
                config = SynthConfig(path="smooth", varying=1.0, min_length=8, max_length=40)
            config.linear_light, config.noise, config.min_noise = True, 0.006, 0.001
            blurry = degrade(np.round(sharp * 255).astype(np.uint8), rng, config)[0].astype(np.float32) / 255
        else:
            if recipe != "shake_photos":
                sharp = _gray_crop(sharp, 255)
            length = rng.uniform(15, 60) if recipe == "shake_photos" else rng.uniform(13, 27)
            blurry = _shaken(sharp, rng, length, linear=recipe != "shake_small_srgb")
            if recipe == "shake_photos":  # a camera's noise, then its JPEG
                blurry = blurry + rng.normal(0, rng.uniform(0.005, 0.02), blurry.shape)
                quality = int(rng.integers(80, 96))
            else:  # the same noise in every channel: the photo stays gray
                blurry = blurry + rng.normal(0, 0.005, blurry.shape[:2] + (1,))
        _write_pair(out / recipe, name, blurry, sharp, quality)
    print(f"wrote {', '.join(str(out / r) for r in recipes)}")


def make_long(photos: Path, out: Path, count: int = 60, seed: int = 2026) -> None:
    """One held-out set of `count` whole photos (at least 400 px on the short side, scaled to at most 800 on the
    long one) shaken by this project's camera paths 15 to 80 px long: for choosing the estimate's settings away
    from the sets that measure them (the refit's length rule, the plain model card)."""
    rng = np.random.default_rng(seed)
    files = sorted(p for p in photos.rglob("*") if p.suffix.lower() in SUFFIXES)
    files = [p for p in files if min(Image.open(p).size) >= 400]
    for index in rng.choice(len(files), min(count, len(files)), replace=False):
        path = files[index]
        image = Image.open(path).convert("RGB")
        scale = min(1.0, 800 / max(image.size))
        if scale < 1:
            size = (round(image.size[0] * scale), round(image.size[1] * scale))
            image = image.resize(size, Image.Resampling.LANCZOS)
        sharp = np.asarray(image, np.float32) / 255
        blurry = _shaken(sharp, rng, rng.uniform(15, 80), linear=True)
        blurry = blurry + rng.normal(0, rng.uniform(0.005, 0.015), blurry.shape)
        _write_pair(out, f"{path.parent.name}_{path.stem}", blurry, sharp, int(rng.integers(85, 96)))
    print(f"wrote {out}")


def _shaken(sharp: np.ndarray, rng: np.random.Generator, length: float, linear: bool) -> np.ndarray:
    """`sharp` blurred by a random camera path `length` px long, in linear light (GOPRO's gamma) or in sRGB values."""
    from deblur.data.kernels import GAMMA, apply_blur, shake_trajectory, trajectory_kernel

    path = shake_trajectory(rng, length)
    middle = complex((path.real.min() + path.real.max()) / 2, (path.imag.min() + path.imag.max()) / 2)
    kernel = trajectory_kernel(path, middle)  # anchored at its extent's middle, as recorded kernels are
    gamma = GAMMA if linear else 1.0
    return np.power(np.clip(apply_blur(np.power(sharp, gamma), kernel), 0, 1), 1 / gamma)


def _write_pair(out: Path, name: str, blurry: np.ndarray, sharp: np.ndarray, quality: int | None) -> None:
    """out/blur/<name> (JPEG at `quality`, or PNG when None) and out/sharp/<name>.png."""
    for folder, image, options in (("blur", blurry, quality), ("sharp", sharp, None)):
        (out / folder).mkdir(parents=True, exist_ok=True)
        pixels = Image.fromarray(np.clip(np.round(image * 255), 0, 255).astype(np.uint8))
        suffix = ".jpg" if options else ".png"
        pixels.save(out / folder / (name + suffix), **({"quality": options} if options else {}))


def _gray_crop(photo: np.ndarray, side: int) -> np.ndarray:
    """The middle `side` x `side` of the photo scaled so its short side is `side`, in gray (as RGB)."""
    height, width = photo.shape[:2]
    scale = side / min(height, width)
    size = (max(side, round(width * scale)), max(side, round(height * scale)))
    image = Image.fromarray(np.round(photo * 255).astype(np.uint8)).resize(size, Image.Resampling.LANCZOS)
    gray = np.asarray(image.convert("L"), np.float32) / 255
    top, left = (gray.shape[0] - side) // 2, (gray.shape[1] - side) // 2
    return np.repeat(gray[top : top + side, left : left + side, None], 3, axis=2)


def pairs(root: Path) -> list[tuple[str, Path, Path]]:
    """(name, blurry, sharp) for every image in root/blur with a partner in root/sharp."""
    sharp = {p.stem: p for p in (root / "sharp").iterdir() if p.suffix.lower() in SUFFIXES}
    found = []
    for blurry in sorted((root / "blur").iterdir()):
        partner = sharp.get(blurry.stem) or sharp.get(blurry.stem.split("_kernel_")[0])
        if blurry.suffix.lower() in SUFFIXES and partner:
            found.append((blurry.stem, blurry, partner))
    return found


def _read(path: Path) -> np.ndarray:
    return np.asarray(Image.open(path).convert("RGB"), np.float32) / 255


def _border(sharp: np.ndarray) -> int:
    """The px left out at each edge when scoring: 40, or 20 on photos under 400 px."""
    return 40 if min(sharp.shape[:2]) >= 400 else 20


def aligned_psnr(sharp: np.ndarray, image: np.ndarray, border: int, reach: int) -> float:
    """PSNR at the best whole-pixel shift of `image` within `reach` px, `border` px left out."""
    height, width = sharp.shape[:2]
    inner = sharp[border : height - border, border : width - border]
    best = 0.0
    for dy in range(-reach, reach + 1):
        for dx in range(-reach, reach + 1):
            shifted = image[border + dy : height - border + dy, border + dx : width - border + dx]
            best = max(best, 10 * np.log10(1 / max(float(np.mean((shifted - inner) ** 2)), 1e-10)))
    return best


def gains(sharp: np.ndarray, blurry: dict, restored: np.ndarray, reaches: list[float]) -> dict:
    """Gain over the blurry photo at each one's best sub-pixel shift within each of `reaches` px (Levin et al.'s
    protocol, `deblur evaluate --align`), and with no shift on the first reach's window; the result's PSNR, SSIM
    and shift at the first reach too. `blurry`: `blurry_scores` of the blurry photo."""
    from deblur.evaluation.align import aligned_scores

    row = {"gain_no_shift": _unshifted(sharp, restored, reaches[0]) - blurry["unshifted"]}
    for index, reach in enumerate(reaches):
        best = aligned_scores(sharp, restored, reach)
        row[f"gain@{reach:g}"] = best.psnr - blurry[reach]
        if index == 0:
            row |= {"psnr": best.psnr, "ssim": best.ssim, "shift": best.shift, "blurry_psnr": blurry[reach]}
    return row


def blurry_scores(sharp: np.ndarray, blurry: np.ndarray, reaches: list[float]) -> dict:
    """What `gains` measures every method against: the blurry photo's PSNR at its best shift in each reach, and
    with none."""
    from deblur.evaluation.align import aligned_scores

    scores = {reach: aligned_scores(sharp, blurry, reach).psnr for reach in reaches}
    return scores | {"unshifted": _unshifted(sharp, blurry, reaches[0])}


def _unshifted(sharp: np.ndarray, image: np.ndarray, reach: float) -> float:
    from deblur.evaluation.align import BORDER
    from deblur.losses import image_psnr

    margin = int(np.ceil(reach)) + BORDER
    window = np.s_[margin:-margin, margin:-margin]
    return image_psnr(sharp[window], image[window])


def score(
    folders: list[Path],
    methods: list[str],
    every: int,
    reaches: list[float],
    log: Path | None,
    model: str | None,
    offset: int = 0,
) -> None:
    from deblur.hardware import cpu_name
    from deblur.inference import open_deblurrer

    print(f"CPU: {cpu_name()}")
    within = " | ".join(f"gain at best shift within {reach:g} px (dB)" for reach in reaches)
    print(f"| set | method | images | {within} | no shift | median | worst | below 0 |")
    print("| --- | --- | ---: |" + " ---: |" * len(reaches) + " ---: | ---: | ---: | ---: |")
    deblurrers = {m: open_deblurrer(model, method=m, log=lambda _: None)[0] for m in methods}
    done = {}
    if log and log.exists():
        done = {(r["set"], r["method"], r["image"]): r for r in map(json.loads, log.read_text().splitlines())}
    for folder in folders:
        rows: dict[str, list[dict]] = {method: [] for method in methods}
        for name, blurry_path, sharp_path in pairs(folder)[offset::every]:
            blurry, sharp = (_read(p) for p in (blurry_path, sharp_path))
            start = None
            for method, deblurrer in deblurrers.items():
                if (folder.name, method, name) in done:
                    rows[method].append(done[(folder.name, method, name)])
                    continue
                start = start or blurry_scores(sharp, blurry, reaches)
                started = time.perf_counter()
                restored = np.clip(deblurrer(blurry), 0, 1)
                seconds = time.perf_counter() - started
                row = {"set": folder.name, "method": method, "image": name, **gains(sharp, start, restored, reaches)}
                row |= {"way": deblurrer.way().name, "seconds": round(seconds, 3)}
                rows[method].append(row)
                if log:
                    with log.open("a") as file:
                        file.write(json.dumps(row) + "\n")
        for method, found in rows.items():
            first = np.array([r[f"gain@{reaches[0]:g}"] for r in found])
            means = " | ".join(f"{np.mean([r[f'gain@{reach:g}'] for r in found]):+.2f}" for reach in reaches)
            unshifted = np.mean([r["gain_no_shift"] for r in found])
            print(
                f"| {folder.name} | {method} | {len(found)} | {means} | {unshifted:+.2f} | "
                f"{np.median(first):+.2f} | {first.min():+.2f} | {np.mean(first < 0):.0%} |",
                flush=True,
            )


def split(
    root: Path, steps: list[tuple[float, float]], every: int, reach: float, log: Path | None, network: str | None
) -> None:
    """Mean PSNR per kernel of the blurry images and of each step with the true and the estimated kernel: what the
    estimate loses (true against estimated, one step) and what the step loses (one step against another, or
    against published figures for the true kernels). With `network` (a kernel-aware model.keras, or "pretrained"),
    also that network given each kernel's deconvolution by today's step."""
    from deblur.evaluation.align import aligned_scores
    from deblur.hardware import cpu_name
    from deblur.shake.deconvolve import deconvolve
    from deblur.shake.estimate import estimate_kernel

    print(f"CPU: {cpu_name()}")
    aware = None
    if network:
        from deblur.inference import open_deblurrer

        aware = open_deblurrer(network, method="kernel-aware", log=lambda _: None)[0]
        if not aware.kernel_aware:
            raise SystemExit(f"{network} is not a kernel-aware network")
    true_kernels = {}
    for path in sorted((root / "kernels").iterdir()):
        kernel = np.asarray(Image.open(path).convert("L"), np.float32)
        true_kernels[path.stem.split("_")[-1]] = kernel / kernel.sum()
    done = {}
    if log and log.exists():
        done = {row["image"]: row for row in map(json.loads, log.read_text().splitlines())}
    rows = []
    for name, blurry_path, sharp_path in pairs(root)[::every]:
        if name in done:
            rows.append(done[name])
            continue
        blurry, sharp = (_read(p) for p in (blurry_path, sharp_path))
        best = lambda image, sharp=sharp: aligned_scores(sharp, np.clip(image, 0, 1), reach).psnr  # noqa: E731
        kernels = {"true": true_kernels[name.split("_")[-1]], "estimated": estimate_kernel(blurry).kernel}
        row = {"image": name, "kernel": name.split("_")[-1], "blurry": best(blurry)}
        for source, kernel in kernels.items():
            for exponent, fidelity in steps:
                row[f"{source} {exponent:g}:{fidelity:g}"] = best(deconvolve(blurry, kernel, fidelity, exponent))
            if aware is not None:
                stacked = np.concatenate([blurry, deconvolve(blurry, kernel)], axis=2)
                row[f"{source}, kernel-aware network"] = best(aware.tiling.ensembled(stacked, 1, aware.run)[:, :, :3])
        rows.append(row)
        if log:
            with log.open("a") as file:
                file.write(json.dumps(row) + "\n")
        columns = [key for key in row if key not in ("image", "kernel")]
        print(name, {key: round(float(row[key]), 2) for key in columns}, flush=True)
    columns = [key for key in rows[0] if key not in ("image", "kernel")]
    print(f"mean PSNR at the best shift within {reach:g} px (quarter pixels)")
    print("| kernel | images | " + " | ".join(f"{c} (dB)" for c in columns) + " |")
    print("| --- | ---: |" + " ---: |" * len(columns))
    for kernel in sorted({r["kernel"] for r in rows}) + ["all"]:
        chosen = [r for r in rows if kernel in ("all", r["kernel"])]
        means = [np.mean([r[c] for r in chosen]) for c in columns]
        print(f"| {kernel} | {len(chosen)} | " + " | ".join(f"{m:.2f}" for m in means) + " |")


def strip(blurry_path: Path, sharp_path: Path | None, crop: str, out: Path) -> None:
    from PIL import ImageDraw

    from deblur.files import atomic_path
    from deblur.inference import open_deblurrer

    left, top, side = (int(n) for n in crop.split(","))
    blurry = _read(blurry_path)
    sharp = _read(sharp_path) if sharp_path else None
    panels = [("blurry", blurry)]
    for method in ("network", "kernel", "kernel-aware"):
        result = np.clip(open_deblurrer(None, method=method, log=lambda _: None)[0](blurry), 0, 1)
        label = {"network": "network", "kernel": "--method kernel", "kernel-aware": "default (kernel-aware)"}[method]
        if sharp is not None:
            border = _border(sharp)
            gain = aligned_psnr(sharp, result, border, 3) - aligned_psnr(sharp, blurry, border, 3)
            label += f" {gain:+.2f} dB"
        panels.append((label, result))
    if sharp is not None:
        panels.append(("sharp", sharp))
    gap, caption = 6, 20
    canvas = Image.new("RGB", (len(panels) * (side + gap) - gap, side + caption), "white")
    draw = ImageDraw.Draw(canvas)
    for index, (label, image) in enumerate(panels):
        piece = np.round(image[top : top + side, left : left + side] * 255).astype(np.uint8)
        canvas.paste(Image.fromarray(piece), (index * (side + gap), caption))
        draw.text((index * (side + gap) + 2, 3), label, fill="black", font_size=15)
    with atomic_path(out, suffix=out.suffix) as tmp:
        canvas.save(tmp, format="JPEG", quality=90)
    print(f"wrote {out}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    making = commands.add_parser("make", help="held-out sets from a folder of sharp photos")
    making.add_argument("--photos", type=Path, required=True)
    making.add_argument("--out", type=Path, required=True)
    making.add_argument("--seed", type=int, default=36)
    long_ = commands.add_parser("long", help="a held-out set of long shake on whole photos, for the estimate")
    long_.add_argument("--photos", type=Path, required=True)
    long_.add_argument("--out", type=Path, required=True)
    long_.add_argument("--count", type=int, default=60)
    long_.add_argument("--seed", type=int, default=2026)
    scoring = commands.add_parser("score", help="gain per set and method")
    scoring.add_argument("folders", type=Path, nargs="+")
    scoring.add_argument("--methods", default="network,kernel,kernel-aware")
    scoring.add_argument("--every", type=int, default=1, help="every n-th image of each set")
    scoring.add_argument(
        "--offset", type=int, default=0, help="the first image taken (Lai's come in fours, a photo's four kernels)"
    )
    scoring.add_argument(
        "--reach",
        default="5",
        help="the largest shifts searched, px, comma separated: Levin et al.'s 5; Lai's kernels sit up to 8 px off",
    )
    scoring.add_argument(
        "--log", type=Path, help="per-image JSON lines, appended; images already there are not run again"
    )
    scoring.add_argument("--model", help="a model.keras for the methods that run one (default: the shipped ones)")
    splitting = commands.add_parser("split", help="true against estimated kernels, per non-blind step")
    splitting.add_argument("root", type=Path, help="a set with blur/, sharp/ and kernels/ (Lai et al.'s)")
    splitting.add_argument("--steps", default="1:2000,0.667:8000", help="exponent:fidelity, comma separated")
    splitting.add_argument("--every", type=int, default=1, help="every n-th image")
    splitting.add_argument("--reach", type=float, default=8, help="the largest shift searched, px")
    splitting.add_argument("--log", type=Path, help="per-image JSON lines; images already there are not run again")
    splitting.add_argument("--network", help="a kernel-aware model.keras (or pretrained) given each deconvolution")
    stripping = commands.add_parser("strip", help="a before/after strip of crops")
    stripping.add_argument("blurry", type=Path)
    stripping.add_argument("--sharp", type=Path)
    stripping.add_argument("--crop", default="0,0,280", help="left,top,side in px")
    stripping.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    if args.command == "make":
        make(args.photos, args.out, args.seed)
    elif args.command == "long":
        make_long(args.photos, args.out, args.count, args.seed)
    elif args.command == "score":
        reaches = [float(r) for r in args.reach.split(",")]
        score(args.folders, args.methods.split(","), args.every, reaches, args.log, args.model, args.offset)
    elif args.command == "split":
        steps = [tuple(float(n) for n in step.split(":")) for step in args.steps.split(",")]
        split(args.root, steps, args.every, args.reach, args.log, args.network)
    else:
        strip(args.blurry, args.sharp, args.crop, args.out)


if __name__ == "__main__":
    main()
