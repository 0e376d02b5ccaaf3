"""The Keras `PyDataset` baseline (the successor of `keras.utils.Sequence`): Pillow decoding in Python.

It produces the same batches as the tf.data pipeline's crop semantics (a random aligned crop, random flips and
90-degree rotations, float32 in [0, 1]) and decodes every image on every step, as the article's Sequence did.
`deblur timings` measures it as the starting point.
"""

from __future__ import annotations

import keras
import numpy as np
from PIL import Image

from deblur.data.pairs import Pair, check_loader, check_sequence


def load_rgb(path) -> np.ndarray:
    """An image file as HWC RGB uint8 (grayscale repeated, alpha dropped), 16 bits cut to their high 8 as the
    tf.data pipeline's decoding (and Pillow's own, for colour) cuts them."""
    with Image.open(path) as image:
        if image.mode.startswith("I"):  # 16-bit grayscale, which Pillow's convert would clip at 255: nearly white
            high = np.clip(np.asarray(image, dtype=np.int64) >> 8, 0, 255).astype(np.uint8)
            return np.repeat(high[:, :, None], 3, axis=-1)
        return np.asarray(image.convert("RGB"))


def load_input(pair: Pair) -> np.ndarray:
    """A pair's blurry photo as HWC uint8, with its deconvolution's 3 channels after its own when the pair has one
    (the kernel-aware network's input)."""
    blurry = load_rgb(pair.blurry)
    return np.concatenate([blurry, load_rgb(pair.deconvolved)], axis=-1) if pair.deconvolved else blurry


def random_patch_numpy(
    blurry: np.ndarray, sharp: np.ndarray, rng: np.random.Generator, patch_size: int, augment: bool
) -> tuple[np.ndarray, np.ndarray]:
    top = rng.integers(0, sharp.shape[0] - patch_size + 1)
    left = rng.integers(0, sharp.shape[1] - patch_size + 1)
    window = np.s_[top : top + patch_size, left : left + patch_size]
    patch = np.concatenate([blurry[window], sharp[window]], axis=-1)
    if augment:
        if rng.random() < 0.5:
            patch = patch[:, ::-1]
        if rng.random() < 0.5:
            patch = patch[::-1]
        patch = np.rot90(patch, rng.integers(0, 4))
    patch = patch.astype(np.float32) / 255.0
    return patch[..., :-3], patch[..., -3:]  # sharp last: the blurry side may carry the deconvolution


class PairSequence(keras.utils.PyDataset):
    """Batches of aligned random patches, `steps` per epoch, reading files with Pillow each time.

    Args:
        pairs: the training pairs.
        patch_size: side of the square patches.
        batch_size: patches per batch.
        steps: batches per epoch.
        seed: makes the batches reproducible: batch `i` of epoch `e` depends only on (seed, e, i).
        augment: random flips and rotations.
        **kwargs: `workers`, `use_multiprocessing`, `max_queue_size` for `keras.utils.PyDataset`.
    """

    def __init__(
        self,
        pairs: list[Pair],
        patch_size: int,
        batch_size: int,
        steps: int,
        seed: int = 0,
        augment: bool = True,
        **kwargs,
    ):
        super().__init__(**kwargs)
        check_loader(pairs, patch_size, batch_size, "PairSequence")
        check_sequence(steps, seed, augment)
        self.pairs = pairs
        self.patch_size = patch_size
        self.batch_size = batch_size
        self.steps = steps
        self.seed = seed
        self.augment = augment
        self.epoch = 0

    def __len__(self) -> int:
        return self.steps

    def __getitem__(self, index: int) -> tuple[np.ndarray, np.ndarray]:
        rng = np.random.default_rng([self.seed, self.epoch, index])
        order = np.random.default_rng([self.seed, self.epoch]).permutation(len(self.pairs))
        blurry_batch, sharp_batch = [], []
        for k in range(self.batch_size):
            pair = self.pairs[order[(index * self.batch_size + k) % len(self.pairs)]]
            blurry, sharp = random_patch_numpy(
                load_input(pair), load_rgb(pair.sharp), rng, self.patch_size, self.augment
            )
            blurry_batch.append(blurry)
            sharp_batch.append(sharp)
        return np.stack(blurry_batch), np.stack(sharp_batch)

    def sharp_patches(self, index: int) -> np.ndarray:
        """Batch `index`'s sharp patches alone, uint8 (N, P, P, 3), cropped and turned as `__getitem__` does: the
        device makes their blurry partners (`deblur.data.device_pairs`)."""
        rng = np.random.default_rng([self.seed, self.epoch, index])
        order = np.random.default_rng([self.seed, self.epoch]).permutation(len(self.pairs))
        patches = []
        for k in range(self.batch_size):
            sharp = load_rgb(self.pairs[order[(index * self.batch_size + k) % len(self.pairs)]].sharp)
            patch = random_patch_numpy(sharp, sharp, rng, self.patch_size, self.augment)[1]
            patches.append(np.round(patch * 255).astype(np.uint8))
        return np.stack(patches)

    def on_epoch_end(self) -> None:
        self.epoch += 1
