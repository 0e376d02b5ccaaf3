"""How far the kernel-aware network's gate opens on deconvolutions that are right and on those that are wrong: the
histogram in the kernel-aware card ("The gate").

    python benchmarks/kernel_aware_gate.py DATA/test [--model MODEL] [--limit N]

DATA/test: pairs with blur/, sharp/ and deconvolved/ in each folder, as `deblur data synth --config kernel-aware`
writes them (its test/ split holds photos the shipped network never trained on). A pair's deconvolution is right
where it gains more than 1 dB over the blurry photo against the sharp one, wrong where it loses more than 1 dB;
the rest are "about even". The gate is the share of the deconvolution the network keeps, pixel by pixel, before
its residual is added (`deblur.model.build_generator`): a right deconvolution should be kept nearly whole.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

BINS = np.linspace(0, 1, 11)
KINDS = ("right (gains > 1 dB)", "about even", "wrong (loses > 1 dB)")


def kind_of(decibels: float) -> str:
    return KINDS[0] if decibels > 1 else KINDS[2] if decibels < -1 else KINDS[1]


def gate_of(probe, blurry: np.ndarray, deconvolved: np.ndarray) -> np.ndarray:
    """The gate (HxW in [0, 1]) of `probe` (`gate_probe`) on one photo and its deconvolution."""
    from deblur.tiling import mirrored_out

    padded, inside = mirrored_out(np.concatenate([blurry, deconvolved], axis=2)[None])
    height, width = padded.shape[1:3]
    return np.asarray(probe.predict_on_batch(padded))[:, :height, :width][inside][0, :, :, 0]


def gate_probe(model):
    """The kernel-aware model cut at its gate, the input's size padded to the generator's grid."""
    import keras

    return keras.Model(model.input, model.get_layer("gate").output)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path, help="folders of pairs with blur/, sharp/ and deconvolved/")
    parser.add_argument("--model", default="pretrained", help="a kernel-aware model.keras (default: the shipped one)")
    parser.add_argument("--limit", type=int, help="the first N pairs only")
    args = parser.parse_args()

    from deblur.hardware import cpu_name
    from deblur.imageio import read_photo
    from deblur.inference import open_deblurrer
    from deblur.losses import image_psnr

    deblurrer = open_deblurrer(None if args.model == "pretrained" else args.model, log=lambda _: None)[0]
    if not deblurrer.kernel_aware:
        raise SystemExit(f"{args.model} is not a kernel-aware network")
    pairs = sorted((f, p.name) for f in args.data.iterdir() if (f / "deconvolved").is_dir()
                   for p in (f / "deconvolved").iterdir())  # fmt: skip
    if not pairs:
        raise SystemExit(f"{args.data}: no folder with blur/, sharp/ and deconvolved/")
    probe = gate_probe(deblurrer.model)
    counts = {kind: np.zeros(len(BINS) - 1) for kind in KINDS}
    means: dict[str, list[float]] = {kind: [] for kind in KINDS}
    for folder, name in pairs[: args.limit]:
        blurry, sharp, deconvolved = (read_photo(folder / part / name).rgb for part in ("blur", "sharp", "deconvolved"))
        kind = kind_of(image_psnr(sharp, deconvolved) - image_psnr(sharp, blurry))
        gate = gate_of(probe, blurry, deconvolved)
        counts[kind] += np.histogram(gate, BINS)[0]
        means[kind].append(float(gate.mean()))
    print(f"CPU: {cpu_name()}; {args.data}, {sum(map(len, means.values()))} pairs")
    edges = " | ".join(f"{low:.1f}-{high:.1f}" for low, high in zip(BINS, BINS[1:], strict=False))
    print(f"| deconvolution | pairs | mean gate | {edges} |")
    print("| --- | ---: | ---: |" + " ---: |" * (len(BINS) - 1))
    for kind in KINDS:
        if means[kind]:
            shares = counts[kind] / counts[kind].sum()
            cells = " | ".join(f"{100 * s:.0f}%" for s in shares)
            print(f"| {kind} | {len(means[kind])} | {np.mean(means[kind]):.2f} | {cells} |")


if __name__ == "__main__":
    main()
