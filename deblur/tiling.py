"""How an image is cut for the model, and put back: tiles on the network's grid with blended overlaps, and the
mirrored/turned copies of an ensemble. NumPy only, so the CLI reads these defaults without loading TensorFlow.
Images are HWC RGB float32 in [0, 1], as everywhere in deblur."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from deblur.errors import SettingError, is_whole_number

DEFAULT_TILE = 1024  # the largest tile side
DEFAULT_OVERLAP = 64  # wide enough that tiles agree where they are blended (see tests/test_inference.py)
# Pixels per model call. Run as a compiled graph (`predict_on_batch`), the full-size generator needs about 0.7 GB
# per megapixel in bfloat16 and 1.5 GB in float32 on a CPU (called op by op it needed 5 GB): a megapixel a call
# takes a 1280x720 photo whole and keeps a 24-megapixel one under 4 GB in all (benchmarks/predict_speed.py).
CALL_PIXELS = 1024 * 1024
# The generator downsamples twice by 2: a tile that starts off this grid samples other pixels than the whole
# image does and disagrees with its neighbours (36 dB against 57 dB measured), so tiles start and end on it.
GRID = 4
SMALL_SIDE = 128  # px: smaller images are mirrored out to it before the model (`mirrored_out`)


# The eight ways to mirror and turn an image by quarter turns, as (transpose, flip rows, flip columns), in the order
# an ensemble of 1, 2, 4 or 8 takes them. The model was trained on patches flipped and turned the same way, so
# each copy is as good a guess as the image itself; their average keeps what they agree on. On the shipped model
# and 11 real GOPRO pairs: +0.27 dB alone, +0.36 with 4 copies, +0.41 with 8 (its model card has each pair).
TURNS = [(False, False, False), (False, False, True), (False, True, False), (False, True, True)]
TURNS += [(True, *flips) for _, *flips in TURNS]
ENSEMBLES = (1, 2, 4, 8)


def check_ensemble(ensemble: int) -> None:
    if not is_whole_number(ensemble) or ensemble not in ENSEMBLES:  # 2.0 had passed, to end on a slice's TypeError
        choices = ", ".join(map(str, ENSEMBLES))
        raise SettingError(f"ensemble must be one of {choices}: {ensemble!r}", settings=("ensemble",))


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


def mirrored_out(batch: np.ndarray) -> tuple[np.ndarray, tuple[slice, ...]]:
    """A batch of images under SMALL_SIDE mirrored out to it, and the index of the images in the result.

    Instance normalization's statistics over the few pixels of a small photo's quarter-resolution maps put colour
    blotches on a 20x20 photo (mean change 0.032, against 0.010 mirrored out to 64 px and 0.007 on a 200 px photo).
    128 px does better than 64 (the shipped models, crops of the 11 real GOPRO dev frames, 2-core Zen 5): flat grey
    photos of 48 and 64 px had come out of the network with dark and light bars (mean change 0.10 and 0.09, now
    0.003), sharp crops of 20 to 96 px change less (64 px: 0.0115 against 0.0140), and blurry crops of 24, 48 and 96
    px by the default gain 0.72, 0.67 and 0.32 dB more (256 px gave about the same as 128).
    """
    height, width = batch.shape[1:3]
    pad_h, pad_w = max(0, SMALL_SIDE - height), max(0, SMALL_SIDE - width)
    top, left = pad_h // 2, pad_w // 2
    if pad_h or pad_w:
        batch = np.pad(batch, ((0, 0), (top, pad_h - top), (left, pad_w - left), (0, 0)), mode="symmetric")
    return batch, (slice(None), slice(top, top + height), slice(left, left + width))


# A model on an NHWC batch, as its runtime runs it: NHWC RGB out (the kernel-aware network's gate as a fourth channel).
BatchRun = Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class Tiling:
    """How an image goes through a model: whole when it has at most `call_pixels`, else in overlapping tiles of at
    most `tile` px a side whose seams are blended; and averaged over an ensemble's mirrored/turned copies."""

    tile: int = DEFAULT_TILE
    overlap: int = DEFAULT_OVERLAP
    call_pixels: int = CALL_PIXELS  # an image this size or smaller goes through whole

    def __post_init__(self) -> None:
        for name in ("tile", "overlap"):  # "512" had been a TypeError in the comparison, 512.0 taken
            if not is_whole_number(value := getattr(self, name)):
                raise SettingError(f"{name} must be a whole number of pixels: {value!r}", settings=(name,))
        if self.tile < 8 * GRID or self.tile % GRID:
            raise SettingError(
                f"tile must be a multiple of {GRID} and at least {8 * GRID}: {self.tile}", settings=("tile",)
            )
        if not 0 <= self.overlap < self.tile // 2:
            raise SettingError(
                f"overlap must be at least 0 and less than half of the tile ({self.tile}): {self.overlap}",
                settings=("overlap", "tile"),
            )

    def tiles(self, height: int, width: int) -> list[tuple[int, int, int, int]]:
        """(top, left, tile height, tile width) of every tile; one tile when the image fits the budget.

        The tiles form the smallest grid whose tiles are at most `tile` a side and share at least `overlap`
        pixels, each shrunk to what that grid needs: less overlap to compute twice than fixed-size tiles.
        """
        if height * width <= self.call_pixels:
            return [(0, 0, height, width)]
        tile_h, tops = grid(round_up(height), self.tile, self.overlap)
        tile_w, lefts = grid(round_up(width), self.tile, self.overlap)
        return [(top, left, tile_h, tile_w) for top in tops for left in lefts]

    def calls(self, height: int, width: int, copies: int) -> int:
        """How many model calls an image of this size takes, over all `copies` of the ensemble."""
        return sum(len(self.tiles(*turned_shape((height, width), copy))) for copy in TURNS[:copies])

    def ensembled(
        self, image: np.ndarray, copies: int, run: BatchRun, on_tiles: Callable[[int], None] | None = None
    ) -> np.ndarray:
        """The model's result on `image` (any channels in and out), averaged over `copies` mirrored and turned
        copies."""
        if copies == 1:
            return self.restored(image, run, on_tiles)
        total = None
        for copy in TURNS[:copies]:
            restored = unturn(self.restored(np.ascontiguousarray(turn(image, copy)), run, on_tiles), copy)
            if total is None:
                total = restored.astype(np.float32)  # a copy: the sum goes into it
            else:
                total += restored
        total /= copies
        return total

    def restored(self, image: np.ndarray, run: BatchRun, on_tiles: Callable[[int], None] | None = None) -> np.ndarray:
        """The model's result on one image, whole or tile by tile (`on_tiles` told of each call's tiles)."""
        height, width = image.shape[:2]
        tiles = self.tiles(height, width)
        if len(tiles) == 1:
            padded, inside = mirrored_out(image[None])
            result = np.asarray(run(padded))[inside][0]
            if on_tiles:
                on_tiles(1)
            return result
        tile_h, tile_w = tiles[0][2], tiles[0][3]
        weight = np.outer(ramp(tile_h, self.overlap), ramp(tile_w, self.overlap))[:, :, None]
        total = None  # as many channels as the model gives (the kernel-aware network's gate beside its output)
        weights = np.zeros((height, width, 1), dtype=np.float32)
        per_call = max(1, self.call_pixels // (tile_h * tile_w))
        for first in range(0, len(tiles), per_call):
            chunk = tiles[first : first + per_call]
            batch = np.stack([mirror_to(image[t : t + tile_h, x : x + tile_w], tile_h, tile_w) for t, x, _, _ in chunk])
            restored = np.asarray(run(batch))
            if total is None:
                total = np.zeros((height, width, restored.shape[-1]), np.float32)
            for (top, left, _, _), piece in zip(chunk, restored, strict=True):
                # Edge tiles reach past the image by up to GRID - 1 mirrored pixels: keep only the image part.
                h, w = min(tile_h, height - top), min(tile_w, width - left)
                total[top : top + h, left : left + w] += piece[:h, :w] * weight[:h, :w]
                weights[top : top + h, left : left + w] += weight[:h, :w]
            if on_tiles:
                on_tiles(len(chunk))
        total /= weights  # in place: at 24 megapixels each float image is 288 MB
        return total
