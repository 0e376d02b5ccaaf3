import numpy as np
from helpers import make_flat_dataset

from deblur.data.pairs import preflight
from deblur.data.sequence import PairSequence


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
