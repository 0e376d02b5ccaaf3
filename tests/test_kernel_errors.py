import numpy as np
import pytest

from deblur.data.kernel_errors import cut_short, misestimate, rescaled, smeared, with_spur
from deblur.data.kernels import random_kernel


def kernel(seed=0, length=15.0):
    return random_kernel(np.random.default_rng(seed), length, length)


@pytest.mark.parametrize("error", [rescaled, cut_short, smeared, with_spur])
def test_each_error_gives_a_kernel_as_an_estimate_is_one(error):
    for seed in range(5):
        rng = np.random.default_rng(seed)
        wrong = error(kernel(seed), rng)
        assert wrong.ndim == 2 and wrong.shape[0] == wrong.shape[1] and wrong.shape[0] % 2 == 1
        assert wrong.min() >= 0 and wrong.sum() == pytest.approx(1.0, abs=1e-5)


def test_errors_change_the_kernel_as_named():
    true = kernel(3, 21.0)
    rng = np.random.default_rng(1)
    assert cut_short(true, rng).astype(bool).sum() < true.astype(bool).sum()  # a part of the path is gone
    assert (smeared(true, rng) > 0).sum() > (true > 0).sum()  # spread out
    shorter = rescaled(np.pad(true, 10), np.random.default_rng(7))
    assert shorter.shape != true.shape


def test_misestimate_is_sometimes_exact_and_mostly_not():
    true = kernel(4)
    outcomes = [misestimate(true, np.random.default_rng(seed)) for seed in range(60)]
    exact = sum(o.shape == true.shape and np.array_equal(o, true) for o in outcomes)
    assert 2 <= exact <= 20  # about 15%
