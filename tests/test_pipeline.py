import numpy as np
import pytest
import tensorflow as tf
from helpers import make_flat_dataset, write_image
from PIL import Image

from deblur.data.pairs import Pair, preflight
from deblur.data.pipeline import PipelineOptions, decoded_pairs, train_dataset, val_dataset


@pytest.fixture
def pairs(tmp_path):
    splits = preflight(make_flat_dataset(tmp_path, count=4), 16)
    return splits.train + splits.val


def test_train_dataset_names_no_pairs_and_a_batch_it_cannot_draw(pairs):
    from deblur.data.pairs import DatasetError
    from deblur.errors import SettingError

    with pytest.raises(DatasetError, match="train_dataset was given no pairs"):
        train_dataset([], patch_size=16, batch_size=2)  # had been tf.data's "buffer_size must be greater than zero"
    with pytest.raises(SettingError, match="train_dataset's batch_size must be a whole number of at least 1; got 0"):
        train_dataset(pairs, patch_size=16, batch_size=0)


@pytest.mark.parametrize(
    "given, said",
    [
        # past the last shard: tf.data's "buffer_size must be greater than zero"
        (dict(num_shards=2, shard_index=5), "shard_index must be a whole number from 0 to num_shards - 1 (1); got 5"),
        (dict(num_shards=2, shard_index=-1), "got -1"),  # had read the last pair alone
        (dict(num_shards=0), "train_dataset's num_shards must be a whole number of at least 1; got 0"),  # one
        (dict(num_shards=2.5), "got 2.5"),  # slice indices' TypeError
        (dict(seed=1.5), "train_dataset's seed must be a whole number; got 1.5"),  # "Cannot convert 1.5 to EagerTensor"
    ],
)
def test_train_dataset_names_shards_and_seeds_it_cannot_use(pairs, given, said):
    from deblur.errors import SettingError

    with pytest.raises(SettingError) as refused:
        train_dataset(pairs, patch_size=16, batch_size=2, **given)
    assert said in str(refused.value)


def test_a_pipeline_switch_that_is_not_true_or_false_is_named():
    from deblur.errors import SettingError

    with pytest.raises(SettingError, match="augment must be True or False; got augment='no'"):
        PipelineOptions(augment="no")  # had augmented: a string is true


@pytest.mark.parametrize(
    "options",
    [
        PipelineOptions(),
        PipelineOptions(parallel=False, cache="none", prefetch=False),
        PipelineOptions(cache="FILE"),
    ],
)
def test_patches_stay_aligned(pairs, tmp_path, options):
    if options.cache == "FILE":
        options = PipelineOptions(cache=str(tmp_path / "cache"))
    dataset = train_dataset(pairs, patch_size=16, batch_size=3, seed=1, options=options)
    seen = set()
    for blurry, sharp in dataset.take(12):
        assert blurry.shape == (3, 16, 16, 3) and blurry.dtype == tf.float32
        # sharp = 255 - blurry on random noise, so only identical crops and transforms satisfy this.
        np.testing.assert_allclose(sharp.numpy(), 1.0 - blurry.numpy(), atol=1e-6)
        assert blurry.numpy().min() >= 0.0 and blurry.numpy().max() <= 1.0
        seen.add(blurry.numpy()[0, 0, 0, 0])
    assert len(seen) > 6  # crops differ from batch to batch


def test_augmentation_transforms_both_images(tmp_path):
    # A gradient image: each of the 8 flips/rotations of a patch has its own top-left corner value.
    ramp = (np.add.outer(np.arange(16) * 3, np.arange(16) * 11) % 256).astype(np.uint8)
    image = np.repeat(ramp[:, :, None], 3, axis=-1)
    write_image(tmp_path / "blur" / "a.png", image)
    write_image(tmp_path / "sharp" / "a.png", 255 - image)
    pairs = [Pair(tmp_path / "blur" / "a.png", tmp_path / "sharp" / "a.png", "a.png")]
    dataset = train_dataset(pairs, patch_size=16, batch_size=1, seed=3)
    corners = set()
    for blurry, sharp in dataset.take(40):
        np.testing.assert_allclose(sharp.numpy(), 1.0 - blurry.numpy(), atol=1e-6)
        corners.add(round(float(blurry[0, 0, 0, 0]) * 255))
    assert len(corners) >= 3


def test_cache_holds_uint8(pairs):
    dataset = decoded_pairs(pairs, PipelineOptions(cache="memory"))
    assert all(spec.dtype == tf.uint8 for spec in dataset.element_spec)


def test_same_seed_same_batches(pairs):
    first = [b.numpy() for b, _ in train_dataset(pairs, patch_size=16, batch_size=2, seed=5).take(3)]
    again = [b.numpy() for b, _ in train_dataset(pairs, patch_size=16, batch_size=2, seed=5).take(3)]
    np.testing.assert_array_equal(np.stack(first), np.stack(again))


def test_shards_split_the_files(pairs):
    seen = []
    for index in range(2):
        dataset = train_dataset(pairs, patch_size=48, batch_size=1, seed=0, num_shards=2, shard_index=index)
        patches = {b.numpy().tobytes() for b, _ in dataset.take(8)}
        seen.append(patches)
    # 48x64 images cropped to 48 a side: whole-image content differs between shards.
    assert len(seen[0]) <= 8 and seen[0] != seen[1]


@pytest.mark.parametrize("mode", ["L", "RGBA", "I;16"])
def test_grayscale_rgba_and_16_bit_become_rgb(tmp_path, mode):
    rng = np.random.default_rng(0)
    if mode == "I;16":
        array = (rng.integers(0, 256, (20, 24)) * 257).astype(np.uint16)
        expected = np.repeat((array // 257)[:, :, None], 3, axis=-1)
    elif mode == "L":
        array = rng.integers(0, 256, (20, 24), dtype=np.uint8)
        expected = np.repeat(array[:, :, None], 3, axis=-1)
    else:
        array = rng.integers(0, 256, (20, 24, 4), dtype=np.uint8)
        expected = array[:, :, :3]
    for sub in ("blur", "sharp"):
        (tmp_path / sub).mkdir()
        Image.fromarray(array).save(tmp_path / sub / "a.png")
    pair = Pair(tmp_path / "blur" / "a.png", tmp_path / "sharp" / "a.png", "a.png")
    blurry, sharp = next(iter(val_dataset([pair], crop=None)))
    assert blurry.shape == (1, 20, 24, 3)
    np.testing.assert_allclose(blurry[0].numpy() * 255, expected, atol=1.01)


@pytest.mark.parametrize("suffix", [".jpg", ".bmp"])
def test_jpeg_and_bmp(tmp_path, suffix):
    image = np.random.default_rng(0).integers(0, 256, (20, 24, 3), dtype=np.uint8)
    for sub in ("blur", "sharp"):
        write_image(tmp_path / sub / f"a{suffix}", image)
    pairs = preflight(tmp_path, 16).train
    blurry, _ = next(iter(val_dataset(pairs, crop=None)))
    assert blurry.shape == (1, 20, 24, 3)


def test_validation_centre_crop(pairs):
    crops = list(val_dataset(pairs, crop=32))
    assert len(crops) == len(pairs)
    for blurry, sharp in crops:
        assert blurry.shape == (1, 32, 32, 3)
        np.testing.assert_allclose(sharp.numpy(), 1.0 - blurry.numpy(), atol=1e-6)
    # Twice through gives the same crops: no augmentation in validation.
    again = list(val_dataset(pairs, crop=32))
    np.testing.assert_array_equal(crops[0][0].numpy(), again[0][0].numpy())


def test_pairs_with_deconvolutions_give_six_channel_inputs_cropped_as_one(tmp_path):
    rng = np.random.default_rng(0)
    for i in range(3):
        blurry = rng.integers(0, 256, (40, 48, 3), dtype=np.uint8)
        write_image(tmp_path / "blur" / f"{i}.png", blurry)
        write_image(tmp_path / "deconvolved" / f"{i}.png", 255 - blurry)
        write_image(tmp_path / "sharp" / f"{i}.png", blurry // 2)
    pairs = preflight(tmp_path, 16).train + preflight(tmp_path, 16).val
    for blurry, sharp in train_dataset(pairs, patch_size=16, batch_size=2, seed=1).take(6):
        assert blurry.shape == (2, 16, 16, 6) and sharp.shape == (2, 16, 16, 3)
        # the three images of each pair stay aligned through the crop, flips and turns
        np.testing.assert_allclose(blurry[..., 3:].numpy(), 1.0 - blurry[..., :3].numpy(), atol=1e-6)
        np.testing.assert_allclose(sharp.numpy(), np.floor(blurry[..., :3].numpy() * 255 / 2) / 255, atol=1e-6)
    blurry, sharp = next(iter(val_dataset(pairs, crop=None)))
    assert blurry.shape[-1] == 6 and sharp.shape[-1] == 3
