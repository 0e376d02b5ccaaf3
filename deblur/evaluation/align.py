"""PSNR and SSIM at the best sub-pixel shift: how a blind method is scored (`deblur evaluate --align`).

A kernel estimated from the blurry photo alone is known only up to a shift, and a data set's sharp image may sit
anywhere within the exposure (GOPRO's is its middle frame; Lai et al.'s photos were blurred by kernels stored by
their extent). Levin, Weiss, Durand and Freeman (CVPR 2009) therefore score a result at the shift that suits it
best, within 5 px in quarter-pixel steps, leaving out a 15 px border; here the same, written from that
description: the whole-pixel shifts first, then quarter pixels around the best one, each moved by bilinear
interpolation as theirs was. The shift is found for scoring only; deblur itself never moves a photo.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from deblur.losses import SSIM_WINDOW, image_psnr, ssim

REACH = 5.0  # px each way
STEP = 0.25  # px
BORDER = 15  # px left out at each edge, beyond the reach


@dataclass(frozen=True)
class Aligned:
    psnr: float
    ssim: float
    shift: tuple[float, float]  # (down, right) px the result was moved by to match the sharp image


def smallest_side(reach: float = REACH) -> int:
    """The shortest side of an image that can be scored within `reach` px: the shifts, the border and SSIM's
    window."""
    return 2 * (int(np.ceil(reach)) + BORDER) + SSIM_WINDOW + 1


def aligned_scores(sharp: np.ndarray, image: np.ndarray, reach: float = REACH, step: float = STEP) -> Aligned:
    """PSNR and SSIM of an HWC image against `sharp` at the shift within `reach` px that gives the best PSNR."""
    margin = int(np.ceil(reach)) + BORDER
    height, width = sharp.shape[:2]
    if min(height, width) < smallest_side(reach):
        raise ValueError(f"a {width}x{height} image is too small to score within {reach:g} px and a {BORDER} px border")
    inner = sharp[margin : height - margin, margin : width - margin]
    whole = int(np.floor(reach))
    scores = {
        (dy, dx): _psnr(inner, image, margin, dy, dx)
        for dy in range(-whole, whole + 1)
        for dx in range(-whole, whole + 1)
    }
    best = max(scores, key=scores.get)
    fine = np.arange(-1 + step, 1, step)
    for ty in fine:
        for tx in fine:
            dy, dx = best[0] + ty, best[1] + tx
            if (ty or tx) and abs(dy) <= reach and abs(dx) <= reach:
                scores[(dy, dx)] = _psnr(inner, image, margin, dy, dx)
    shift = max(scores, key=scores.get)
    moved = _window(image, margin, *shift)
    similarity = float(np.asarray(ssim(inner[None], moved[None]))[0])
    return Aligned(round(scores[shift], 4), round(similarity, 5), (float(shift[0]), float(shift[1])))


def _psnr(inner: np.ndarray, image: np.ndarray, margin: int, dy: float, dx: float) -> float:
    return image_psnr(inner, _window(image, margin, dy, dx))


def _window(image: np.ndarray, margin: int, dy: float, dx: float) -> np.ndarray:
    """The image's pixels that land on the scored window when the image is moved up by `dy` and left by `dx`,
    bilinearly interpolated between pixels."""
    height, width = image.shape[:2]
    rows, columns = height - 2 * margin, width - 2 * margin
    whole_y, whole_x = int(np.floor(dy)), int(np.floor(dx))
    part_y, part_x = np.float32(dy - whole_y), np.float32(dx - whole_x)
    top, left = margin + whole_y, margin + whole_x

    def at(down: int, right: int) -> np.ndarray:
        return image[top + down : top + down + rows, left + right : left + right + columns]

    if not part_y and not part_x:
        return at(0, 0)
    upper = at(0, 0) * (1 - part_x) + at(0, 1) * part_x if part_x else at(0, 0)
    if not part_y:
        return upper
    lower = at(1, 0) * (1 - part_x) + at(1, 1) * part_x if part_x else at(1, 0)
    return upper * (1 - part_y) + lower * part_y
