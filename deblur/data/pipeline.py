"""The aligned-patch tf.data pipeline.

Training: shuffle the file list -> decode to uint8 (in parallel) -> cache -> repeat -> the same random crop,
flips and 90-degree rotation on both images of a pair -> shuffle patches -> batch (drop_remainder, so replicas
get equal shares) -> float32 in [0, 1] -> prefetch. Each optimization can be switched off, because
`deblur timings` compares them. Images and patches stay uint8 until a whole batch is converted: the cache and
the shuffle buffer hold a quarter of the memory float32 would, and each patch op moves a quarter of the bytes.

Validation: whole images or a fixed centre crop, no augmentation, batch 1.
"""

from __future__ import annotations

from dataclasses import dataclass

import tensorflow as tf

from deblur.data.pairs import Pair, check_loader, check_shards
from deblur.errors import check_switches

AUTOTUNE = tf.data.AUTOTUNE


@dataclass(frozen=True)
class PipelineOptions:
    parallel: bool = True
    cache: str = "memory"  # memory | none | a file path prefix
    prefetch: bool = True
    augment: bool = True

    def __post_init__(self) -> None:  # augment="no" had augmented: a string is true
        check_switches(parallel=self.parallel, prefetch=self.prefetch, augment=self.augment)


def _parallel(enabled: bool) -> dict:
    # Deterministic order keeps runs reproducible; it costs little as decode times are alike.
    return {"num_parallel_calls": AUTOTUNE, "deterministic": True} if enabled else {}


def decode_image(path: tf.Tensor) -> tf.Tensor:
    """Read PNG, JPEG or BMP as HWC RGB uint8: grayscale is repeated, alpha dropped, 16-bit scaled down."""
    image = tf.io.decode_image(tf.io.read_file(path), channels=3, dtype=tf.uint8, expand_animations=False)
    image.set_shape([None, None, 3])
    return image


def _paths(pairs: list[Pair]) -> tf.data.Dataset:
    # A pair with its deconvolution reads it as three more channels of its blurry photo (the kernel-aware
    # network's input); the pairs a loop is given all have one or none (`deblur.data.pairs.check_deconvolved`).
    blurry = [str(p.blurry) for p in pairs]
    deconvolved = [str(p.deconvolved) if p.deconvolved else "" for p in pairs]
    return tf.data.Dataset.from_tensor_slices((blurry, deconvolved, [str(p.sharp) for p in pairs]))


def _decode_input(blurry: tf.Tensor, deconvolved: tf.Tensor) -> tf.Tensor:
    """The blurry photo, with its deconvolution's channels after its own when there is one: uint8 (h, w, 3 or 6)."""
    image = decode_image(blurry)
    return tf.cond(
        tf.strings.length(deconvolved) > 0,
        lambda: tf.concat([image, decode_image(deconvolved)], axis=-1),
        lambda: image,
    )


def input_channels(pairs: list[Pair]) -> int:
    """3, or 6 for pairs with their deconvolutions."""
    return 6 if pairs and pairs[0].deconvolved else 3


def decoded_pairs(pairs: list[Pair], options: PipelineOptions, *, shuffle_seed: int | None = None) -> tf.data.Dataset:
    """(blurry, sharp) uint8 images, decoded and cached as configured; one pass over `pairs`. With deconvolutions,
    "blurry" has 6 channels: the photo's, then its deconvolution's."""
    dataset = _paths(pairs)
    if shuffle_seed is not None:
        dataset = dataset.shuffle(len(pairs), seed=shuffle_seed)
    channels = input_channels(pairs)

    def decode(blurry, deconvolved, sharp):
        image = _decode_input(blurry, deconvolved)
        image.set_shape([None, None, channels])
        return image, decode_image(sharp)

    dataset = dataset.map(decode, **_parallel(options.parallel))
    if options.cache == "memory":
        dataset = dataset.cache()
    elif options.cache != "none":
        dataset = dataset.cache(options.cache)
    return dataset


def random_patch(blurry: tf.Tensor, sharp: tf.Tensor, seed: tf.Tensor, patch_size: int, augment: bool) -> tf.Tensor:
    """One aligned random patch of a uint8 pair, the same transform on both images, stacked as uint8
    (patch, patch, 6 or 9): blurry channels first, sharp last. Still uint8, the patch costs a quarter of float32
    to move."""
    seeds = tf.random.experimental.stateless_split(seed, 4)
    shape = tf.shape(sharp)
    # One offset for both images; slicing before stacking copies two patches, not two whole images.
    corner = tf.random.stateless_uniform([2], seed=seeds[0], minval=0, maxval=tf.int32.max, dtype=tf.int32) % (
        shape[:2] - patch_size + 1
    )
    begin, size = tf.concat([corner, [0]], 0), [patch_size, patch_size, -1]
    # Stacked, every random op below applies identically to both patches.
    patch = tf.concat([tf.slice(blurry, begin, size), tf.slice(sharp, begin, size)], axis=-1)
    if augment:
        patch = tf.image.stateless_random_flip_left_right(patch, seed=seeds[1])
        patch = tf.image.stateless_random_flip_up_down(patch, seed=seeds[2])
        turns = tf.random.stateless_uniform([], seed=seeds[3], minval=0, maxval=4, dtype=tf.int32)
        patch = tf.image.rot90(patch, turns)
    return patch


def split_batch(stacked: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    """A uint8 batch of stacked patches -> (blurry, sharp) float32 in [0, 1]; the sharp patch is the last 3
    channels, the blurry one (with its deconvolution's, if any) all before."""
    batch = tf.cast(stacked, tf.float32) / 255.0
    return batch[..., :-3], batch[..., -3:]


def train_dataset(
    pairs: list[Pair],
    *,
    patch_size: int,
    batch_size: int,
    seed: int = 0,
    options: PipelineOptions = PipelineOptions(),
    num_shards: int = 1,
    shard_index: int = 0,
) -> tf.data.Dataset:
    """An endless dataset of (blurry, sharp) float32 batches of shape (batch_size, patch, patch, 3).

    With several input pipelines (multi-worker), each takes every `num_shards`-th file when there are enough
    files to go round, and otherwise all files with its own random stream.
    """
    check_loader(pairs, patch_size, batch_size, "train_dataset")
    check_shards(num_shards, shard_index, seed, "train_dataset")
    if num_shards > 1:
        if len(pairs) >= num_shards:
            pairs = pairs[shard_index::num_shards]
        seed = seed * 1000 + shard_index
    dataset = decoded_pairs(pairs, options, shuffle_seed=seed).repeat()
    crop_seeds = tf.data.Dataset.random(seed=seed).batch(2)
    dataset = tf.data.Dataset.zip((dataset, crop_seeds))
    dataset = dataset.map(
        lambda images, crop_seed: random_patch(images[0], images[1], crop_seed, patch_size, options.augment),
        **_parallel(options.parallel),
    )
    # Patches from the cache come in a fixed file order after the first pass; mixing them keeps batches varied.
    dataset = dataset.shuffle(8 * batch_size, seed=seed)
    dataset = dataset.batch(batch_size, drop_remainder=True)
    dataset = dataset.map(split_batch, **_parallel(options.parallel))
    if options.prefetch:
        dataset = dataset.prefetch(AUTOTUNE)
    return dataset


def centre_crop(image: tf.Tensor, size: int) -> tf.Tensor:
    shape = tf.shape(image)
    height, width = tf.minimum(shape[0], size), tf.minimum(shape[1], size)
    top, left = (shape[0] - height) // 2, (shape[1] - width) // 2
    return image[top : top + height, left : left + width]


def val_dataset(pairs: list[Pair], *, crop: int | None, parallel: bool = True) -> tf.data.Dataset:
    """(blurry, sharp) float32 batches of one image each: whole images, or centre crops of `crop` pixels."""

    def crop_pair(blurry, sharp):
        return centre_crop(blurry, crop), centre_crop(sharp, crop)

    def to_float(blurry, sharp):
        return tf.cast(blurry, tf.float32)[None] / 255.0, tf.cast(sharp, tf.float32)[None] / 255.0

    options = PipelineOptions(parallel=parallel, cache="none", prefetch=True, augment=False)
    dataset = decoded_pairs(pairs, options)
    if crop is not None:
        # Crops are small and reread every epoch: keep them, as uint8. Whole images are decoded each time.
        dataset = dataset.map(crop_pair, **_parallel(parallel)).cache()
    return dataset.map(to_float, **_parallel(parallel)).prefetch(AUTOTUNE)
