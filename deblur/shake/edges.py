"""Which of the latent photo's edges the kernel is fitted to: the strongest, in every direction.

Cho and Lee, "Fast motion deblurring" (SIGGRAPH Asia 2009): weak gradients (texture, noise, what the latent's
smoothing leaves) are explained by any small kernel about as well as by the true one, so fitted with them the
estimate drifts towards a blob, and large shakes are never found (on Lai et al.'s 75 px kernel the estimate stayed
a few pixels wide). Only gradients above a threshold are kept, chosen so that each of four edge directions keeps
at least a number of pixels proportional to the kernel's width: every direction of the shake stays observable.
Written here from the paper.
"""

from __future__ import annotations

import numpy as np

DIRECTIONS = 4  # edge directions (0, 45, 90 and 135 degrees), each needing its share of kept pixels


def edge_threshold(gx: np.ndarray, gy: np.ndarray, size: int, per_direction: float) -> float:
    """The squared gradient magnitude above which every direction keeps at least `per_direction` x `size` pixels."""
    magnitude = gx**2 + gy**2
    angle = np.mod(np.arctan2(gy, gx), np.pi)
    direction = np.minimum((angle * (DIRECTIONS / np.pi)).astype(np.int8), DIRECTIONS - 1)
    levels = []
    for d in range(DIRECTIONS):
        values = magnitude[direction == d]
        if values.size:
            rank = values.size - min(max(1, int(per_direction * size)), values.size)  # the n-th largest, ascending
            levels.append(float(np.partition(values, rank)[rank]))
    return min(levels) if levels else 0.0


def strong_edges(gx: np.ndarray, gy: np.ndarray, threshold: float) -> tuple[np.ndarray, np.ndarray]:
    """The gradients with those weaker than `threshold` (squared magnitude) set to 0."""
    weak = gx**2 + gy**2 < threshold
    return np.where(weak, 0, gx), np.where(weak, 0, gy)
