import numpy as np
import pytest

from deblur.data.kernels import (
    anchor_time,
    apply_blur,
    blur_mask,
    frames_kernel,
    random_kernel,
    shake_trajectory,
    smooth_trajectory,
    trajectory_kernel,
)


@pytest.mark.parametrize("length", [3.0, 9.0, 21.0])
@pytest.mark.parametrize("trajectory", [shake_trajectory, smooth_trajectory])
def test_trajectory_extent(length, trajectory):
    path = trajectory(np.random.default_rng(1), length)
    assert max(np.ptp(path.real), np.ptp(path.imag)) == pytest.approx(length)


def test_smooth_path_stays_near_its_chord():
    for seed in range(10):
        path = smooth_trajectory(np.random.default_rng(seed), 20.0)
        chord = path[-1] - path[0]
        # Distance of every point from the straight line through the ends: an arc, never a wander.
        off_line = np.abs(((path - path[0]) * np.conj(chord)).imag) / abs(chord)
        assert off_line.max() < 0.2 * abs(chord)
        steps = np.abs(np.diff(path))
        assert steps.max() < 3 * steps.min()  # nearly constant speed


def test_anchor_time_is_gopro_middle_frame():
    assert anchor_time(7) == 0.5  # odd: the middle instant
    assert anchor_time(8) == pytest.approx(4 / 7)  # even: half a frame past it
    with pytest.raises(ValueError, match="at least 2"):
        anchor_time(1)


def test_anchor_sits_on_the_centre_pixel():
    path = np.linspace(0, 6, 200) + 0j  # a line to the right, the sharp image taken at its start
    kernel = trajectory_kernel(path, anchor=path[0])
    centre = kernel.shape[0] // 2
    assert kernel[centre, centre] > 0 and kernel[:, :centre].sum() == 0
    xs = np.arange(kernel.shape[1]) - centre
    assert (kernel.sum(axis=0) * xs).sum() == pytest.approx(3.0, abs=0.05)


def test_even_frame_kernels_are_offset_by_half_a_frame():
    # A straight 14 px path at constant speed: 8 frames put the sharp image (4/7 - 1/2) x 14 = 1 px past the
    # centre of the blur, 7 frames exactly on it.
    path = np.exp(0.3j) * np.linspace(-7, 7, 1000)
    for frames, offset in ((8, 1.0), (7, 0.0), (10, 14 * (5 / 9 - 0.5))):
        kernel = frames_kernel(path, frames)
        ys, xs = np.mgrid[: kernel.shape[0], : kernel.shape[1]] - kernel.shape[0] // 2
        mean = complex((kernel * xs).sum(), (kernel * ys).sum())
        assert abs(mean + offset * np.exp(0.3j)) < 0.05  # the blur lies behind the anchor, along the path


def test_random_frames_kernels_are_distributions():
    for path in ("shake", "smooth"):
        kernel = random_kernel(np.random.default_rng(2), 5, 15, frames=8, path=path)
        assert kernel.shape[0] == kernel.shape[1] and kernel.shape[0] % 2 == 1
        assert kernel.min() >= 0 and kernel.sum() == pytest.approx(1.0, abs=1e-5)


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


@pytest.mark.parametrize("shape", [(4, 4), (2, 5), (5, 2), (1, 6)])
def test_an_even_or_flat_kernel_blurs_to_the_same_size_about_its_centre_pixel(shape):
    # padded by size // 2 on both sides, an even kernel had made the image one pixel taller or wider
    image = np.zeros((20, 30, 3))
    image[10, 15] = 1.0
    kernel = np.zeros(shape)
    kernel[shape[0] // 2, shape[1] // 2] = 1.0  # a point at the centre pixel: the image comes back as it was
    np.testing.assert_allclose(apply_blur(image, kernel), image, atol=1e-9)
    box = np.full(shape, 1.0 / kernel.size)
    assert apply_blur(image, box).shape == image.shape


def test_blur_mask_is_smooth_and_varies():
    masks = [blur_mask(np.random.default_rng(seed), (200, 300)) for seed in range(8)]
    for mask in masks:
        assert mask.shape == (200, 300) and mask.min() >= 0.0 and mask.max() <= 1.0
        assert np.abs(np.diff(mask, axis=1)).max() < 0.2  # soft edges: no seam a model could learn to spot
    assert np.ptp([mask.mean() for mask in masks]) > 0.2  # the blurred share changes from photo to photo
    assert np.mean([mask.max() - mask.min() for mask in masks]) > 0.5  # and within a photo
