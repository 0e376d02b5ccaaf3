import numpy as np
import pytest

from deblur.data.synth import apply_blur, random_kernel, shake_trajectory, trajectory_kernel


@pytest.mark.parametrize("length", [3.0, 9.0, 21.0])
def test_trajectory_extent(length):
    path = shake_trajectory(np.random.default_rng(1), length)
    assert max(np.ptp(path.real), np.ptp(path.imag)) == pytest.approx(length)


def test_kernel_is_a_centred_distribution():
    for seed in range(5):
        kernel = random_kernel(np.random.default_rng(seed), 5, 15)
        assert kernel.shape[0] == kernel.shape[1] and kernel.shape[0] % 2 == 1
        assert kernel.min() >= 0 and kernel.sum() == pytest.approx(1.0, abs=1e-5)
        ys, xs = np.mgrid[: kernel.shape[0], : kernel.shape[1]]
        centre = kernel.shape[0] // 2
        # The centre of mass sits on the centre pixel: blurring does not shift the image.
        assert (kernel * xs).sum() == pytest.approx(centre, abs=1e-3)
        assert (kernel * ys).sum() == pytest.approx(centre, abs=1e-3)


def test_straight_path_gives_a_line():
    path = np.linspace(-3, 3, 200) + 0j
    kernel = trajectory_kernel(path)
    assert kernel.sum(axis=1).argmax() == kernel.shape[0] // 2
    assert np.count_nonzero(kernel.sum(axis=0)) >= 6


def test_blur_preserves_flat_images_and_size():
    image = np.full((20, 30, 3), 0.25)
    kernel = random_kernel(np.random.default_rng(0), 3, 8)
    blurred = apply_blur(image, kernel)
    assert blurred.shape == image.shape
    np.testing.assert_allclose(blurred, 0.25, atol=1e-6)
