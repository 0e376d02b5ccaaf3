import re

import numpy as np
import pytest
import tensorflow as tf
from helpers import make_flat_dataset
from PIL import Image

from deblur.data.pairs import preflight
from deblur.data.pipeline import decode_image
from deblur.data.sequence import PairSequence, load_rgb
from deblur.photo16 import encode_png16


def test_batches_aligned_and_reproducible(tmp_path):
    splits = preflight(make_flat_dataset(tmp_path, count=5), 16)
    sequence = PairSequence(splits.train, patch_size=16, batch_size=3, steps=4, seed=2)
    assert len(sequence) == 4
    blurry, sharp = sequence[1]
    assert blurry.shape == (3, 16, 16, 3) and blurry.dtype == np.float32
    np.testing.assert_allclose(sharp, 1.0 - blurry, atol=1e-6)
    np.testing.assert_array_equal(blurry, PairSequence(splits.train, 16, 3, 4, seed=2)[1][0])
    assert not np.array_equal(blurry, sequence[2][0])
    sequence.on_epoch_end()
    assert not np.array_equal(blurry, sequence[1][0])  # a new epoch draws new patches


def test_no_pairs_or_a_size_it_cannot_draw_is_named(tmp_path):
    from deblur.data.pairs import DatasetError
    from deblur.errors import SettingError

    with pytest.raises(DatasetError, match="PairSequence was given no pairs: deblur.preflight"):
        PairSequence([], 16, 2, steps=1)  # had been a ZeroDivisionError at its first batch
    with pytest.raises(SettingError, match="PairSequence takes a list of Pair, as deblur.preflight.*got generator"):
        PairSequence((pair for pair in []), 16, 2, steps=1)  # had been called no pairs
    with pytest.raises(SettingError, match=r"takes a list of Pair, .*; got tuple \('a.png', 'b.png'\)"):
        PairSequence([("a.png", "b.png")], 16, 2, steps=1)  # had been an AttributeError at its first batch
    pairs = preflight(make_flat_dataset(tmp_path, count=2), 16).train
    with pytest.raises(SettingError, match="PairSequence's patch_size must be a whole number of at least 8; got '16'"):
        PairSequence(pairs, "16", 2, steps=1)
    # at its first batch or length: 2.5 steps a TypeError, -1 "__len__() should return >= 0", a seed of 0.5 "seed
    # must be integer"; 0 steps an epoch of none, and augment="no" augmented
    for options, said in [
        ({"steps": 2.5}, "PairSequence's steps must be a whole number of at least 1; got 2.5"),
        ({"steps": 0}, "PairSequence's steps must be a whole number of at least 1; got 0"),
        ({"steps": 1, "seed": 0.5}, "PairSequence's seed must be a whole number of at least 0; got 0.5"),
        ({"steps": 1, "seed": -1}, "PairSequence's seed must be a whole number of at least 0; got -1"),
        ({"steps": 1, "augment": "no"}, "augment must be True or False; got augment='no'"),
    ]:
        with pytest.raises(SettingError, match=re.escape(said)):
            PairSequence(pairs, 16, 2, **options)


@pytest.mark.parametrize("mode", ["L", "RGBA", "I;16", "RGB;16"])
def test_pillow_decodes_each_kind_of_png_as_the_tf_data_pipeline_does(tmp_path, mode):
    # evaluate and the JAX loop read with Pillow, TensorFlow's loop with tf.data: 16-bit grayscale had read white
    rng = np.random.default_rng(0)
    path = tmp_path / "a.png"
    if mode == "RGB;16":
        path.write_bytes(encode_png16(rng.integers(0, 65536, (20, 24, 3)).astype(np.uint16)))
    else:
        bands = {"L": (), "RGBA": (4,), "I;16": ()}[mode]
        top = 65536 if mode == "I;16" else 256
        Image.fromarray(rng.integers(0, top, (20, 24, *bands)).astype(np.uint16 if top > 256 else np.uint8)).save(path)
    np.testing.assert_array_equal(load_rgb(path), decode_image(tf.constant(str(path))).numpy())
