"""The JAX loop's input: Keras' `PyDataset` of pairs (`deblur.data.sequence`), read ahead on threads, and the
validation images as NumPy arrays. No TensorFlow: a GPU machine may not have it.

Pillow decodes with the GIL released, so threads read ahead in parallel. Batch `i` of epoch `e` depends only on
(seed, e, i), so a resumed run reads the batches a run that never stopped would have read.
"""

from __future__ import annotations

import copy
import os
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import numpy as np

from deblur.config import SynthConfig
from deblur.data.device_pairs import HostDraws, draw
from deblur.data.pairs import Pair
from deblur.data.sequence import PairSequence, load_input, load_rgb

T = TypeVar("T")

# Threads reading ahead: one per core, at most 16 (a GPU machine's cores make pairs faster than one thread can).
WORKERS = max(1, min(16, os.cpu_count() or 1))


def training_batches(
    pairs: list[Pair],
    *,
    patch_size: int,
    batch_size: int,
    steps_per_epoch: int,
    first_step: int,
    last_step: int,
    seed: int,
    augment: bool,
    workers: int = WORKERS,
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(blurry, sharp) batches for steps `first_step` to `last_step` - 1, `2 * workers` of them read ahead.

    An unreadable file raises its error (OSError) from the batch that needed it, once that batch is reached.
    """
    sequence = PairSequence(pairs, patch_size, batch_size, steps_per_epoch, seed=seed, augment=augment)

    def read(step: int) -> tuple[np.ndarray, np.ndarray]:
        reader, _, index = at_step(sequence, step, steps_per_epoch)
        return reader[index]

    yield from read_ahead(read, first_step, last_step, workers)


def device_draws(
    pairs: list[Pair],
    synth: SynthConfig,
    *,
    patch_size: int,
    batch_size: int,
    steps_per_epoch: int,
    first_step: int,
    last_step: int,
    seed: int,
    augment: bool,
    workers: int = WORKERS,
) -> Iterator[HostDraws]:
    """For `data.device_pairs`: what the host draws for each batch (`deblur.data.device_pairs.draw`): the sharp
    photos' patches, as `training_batches` crops them, and each pair's kernels and noise, read ahead on threads.
    Batch `i` of epoch `e` depends only on (seed, e, i)."""
    sequence = PairSequence(pairs, patch_size, batch_size, steps_per_epoch, seed=seed, augment=augment)

    def read(step: int) -> HostDraws:
        reader, epoch, index = at_step(sequence, step, steps_per_epoch)
        return draw(reader.sharp_patches(index), np.random.default_rng([seed, epoch, index, 1]), synth)

    yield from read_ahead(read, first_step, last_step, workers)


def at_step(sequence: PairSequence, step: int, steps_per_epoch: int) -> tuple[PairSequence, int, int]:
    """(a reader of `sequence` set to the step's epoch, the epoch, the batch's index in it). The sequence draws
    from (seed, epoch, index) alone: a copy per step sets the epoch without state shared between threads."""
    epoch, index = divmod(step, steps_per_epoch)
    reader = copy.copy(sequence)
    reader.epoch = epoch
    return reader, epoch, index


def read_ahead(read: Callable[[int], T], first_step: int, last_step: int, workers: int) -> Iterator[T]:
    """`read(step)` for each step in order, up to 2 * workers steps read ahead on threads."""
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="deblur-batches") as pool:
        ahead: deque = deque()
        step = first_step
        try:
            while step < last_step or ahead:
                while step < last_step and len(ahead) < 2 * workers:
                    ahead.append(pool.submit(read, step))
                    step += 1
                yield ahead.popleft().result()
        finally:
            for future in ahead:
                future.cancel()


def centre_crop(image: np.ndarray, size: int | None) -> np.ndarray:
    if size is None:
        return image
    height, width = min(image.shape[0], size), min(image.shape[1], size)
    top, left = (image.shape[0] - height) // 2, (image.shape[1] - width) // 2
    return image[top : top + height, left : left + width]


def validation_images(pairs: list[Pair], crop: int | None) -> list[tuple[np.ndarray, np.ndarray]]:
    """(blurry, sharp) float32 batches of one image each, as the TensorFlow loop's `val_dataset` gives them:
    whole images, or centre crops of `crop` pixels, all held in memory (data.val_limit bounds a large set)."""
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        loaded = pool.map(lambda pair: (load_input(pair), load_rgb(pair.sharp)), pairs)
        return [
            tuple(np.asarray(centre_crop(image, crop), dtype=np.float32)[None] / 255.0 for image in pair)
            for pair in loaded
        ]
