"""How an image is cut for the model, and put back: tiles on the network's grid with blended overlaps, and the
mirrored/turned copies of an ensemble. NumPy only, so the CLI reads these defaults without loading TensorFlow.
Images are HWC RGB float32 in [0, 1], as everywhere in deblur."""

from __future__ import annotations

import numpy as np

from deblur.errors import SettingError

DEFAULT_TILE = 1024  # the largest tile side
DEFAULT_OVERLAP = 64  # wide enough that tiles agree where they are blended (see tests/test_inference.py)
# Pixels per model call. Run as a compiled graph (`predict_on_batch`), the full-size generator needs about 0.7 GB
# per megapixel in bfloat16 and 1.5 GB in float32 on a CPU (called op by op it needed 5 GB): a megapixel a call
# takes a 1280x720 photo whole and keeps a 24-megapixel one under 4 GB in all (benchmarks/predict_speed.py).
CALL_PIXELS = 1024 * 1024
# The generator downsamples twice by 2: a tile that starts off this grid samples other pixels than the whole
# image does and disagrees with its neighbours (36 dB against 57 dB measured), so tiles start and end on it.
GRID = 4


# The eight ways to mirror and turn an image by quarter turns, as (transpose, flip rows, flip columns), in the order
# an ensemble of 1, 2, 4 or 8 takes them. The model was trained on patches flipped and turned the same way, so
# each copy is as good a guess as the image itself; their average keeps what they agree on. On the shipped model
# and 11 real GOPRO pairs: +0.27 dB alone, +0.36 with 4 copies, +0.41 with 8 (its model card has each pair).
TURNS = [(False, False, False), (False, False, True), (False, True, False), (False, True, True)]
TURNS += [(True, *flips) for _, *flips in TURNS]
ENSEMBLES = (1, 2, 4, 8)


def check_ensemble(ensemble: int) -> None:
    if ensemble not in ENSEMBLES:
        choices = ", ".join(map(str, ENSEMBLES))
        raise SettingError(f"ensemble must be one of {choices}: {ensemble}", settings=("ensemble",))


def turned_shape(shape: tuple[int, int], turn: tuple[bool, bool, bool]) -> tuple[int, int]:
    return shape[::-1] if turn[0] else shape


def turn(image: np.ndarray, turn: tuple[bool, bool, bool]) -> np.ndarray:
    transpose, flip_rows, flip_columns = turn
    if transpose:
        image = image.transpose(1, 0, 2)
    return image[:: -1 if flip_rows else 1, :: -1 if flip_columns else 1]


def unturn(image: np.ndarray, turn: tuple[bool, bool, bool]) -> np.ndarray:
    transpose, flip_rows, flip_columns = turn
    image = image[:: -1 if flip_rows else 1, :: -1 if flip_columns else 1]
    return image.transpose(1, 0, 2) if transpose else image


def round_up(size: int) -> int:
    return -(-size // GRID) * GRID


def grid(size: int, tile: int, overlap: int) -> tuple[int, list[int]]:
    """Tile length and starts along one side (`size` a multiple of GRID): the fewest tiles of about `tile` or
    less that share at least `overlap` pixels, with lengths and starts on the GRID."""
    if size <= tile:
        return size, [0]
    # GRID more overlap than asked leaves room to move each start down onto the grid.
    count = -(-(size - overlap - GRID) // (tile - overlap - GRID))
    length = min(size, round_up(-(-(size + (count - 1) * (overlap + GRID)) // count)))
    starts = [round(i * (size - length) / (count - 1)) // GRID * GRID for i in range(count)]
    return length, starts


def mirror_to(tile: np.ndarray, height: int, width: int) -> np.ndarray:
    """Pad an edge tile at the bottom and right by mirroring, as the model itself pads the whole image."""
    pad_h, pad_w = height - tile.shape[0], width - tile.shape[1]
    if pad_h or pad_w:
        tile = np.pad(tile, ((0, pad_h), (0, pad_w), (0, 0)), mode="symmetric")
    return tile


def ramp(length: int, overlap: int) -> np.ndarray:
    """Blending weights along one side of a tile: rising over `overlap` pixels at each end, never zero."""
    centres = np.arange(length, dtype=np.float32) + 0.5
    ramp = np.minimum(centres, length - centres) / max(overlap, 1)
    return np.clip(ramp, 1e-3, 1.0)
