"""Synthetic blurry photos: kernel blur (uniform) and motion blur (the photo moved along a camera path)."""

import numpy as np
import pytest

from deblur.config import ConfigError, SynthConfig
from deblur.data.degrade import degrade
from deblur.data.kernels import apply_blur, random_kernel
from deblur.data.motion import camera_path, motion_blur


def detail(image: np.ndarray) -> float:
    return float(np.abs(np.diff(image.astype(float), axis=1)).mean())


@pytest.fixture
def sharp():
    return np.random.default_rng(5).integers(0, 256, (64, 80, 3), dtype=np.uint8)


@pytest.mark.parametrize(
    "synth",
    [
        SynthConfig(5, 9, 0.01),
        SynthConfig(5, 9, 0.01, linear_light=True),
        SynthConfig(5, 9, 0.01, blur="motion", linear_light=True, max_rotation=2.0, max_zoom=0.02),
        SynthConfig(5, 9, 0.01, path="mixed", min_frames=7, max_frames=13),
        SynthConfig(5, 9, 0.01, linear_light=True, varying=1.0),
    ],
    ids=["kernel", "kernel-linear", "motion", "kernel-gopro-frames", "kernel-varying"],
)
def test_reproducible_and_blurs(sharp, synth):
    a, kernel_a = degrade(sharp, np.random.default_rng(7), synth)
    b, kernel_b = degrade(sharp, np.random.default_rng(7), synth)
    assert a.dtype == np.uint8 and a.shape == sharp.shape
    np.testing.assert_array_equal(a, b)
    assert (kernel_a is None) == (synth.blur == "motion" or synth.varying == 1.0)
    if kernel_a is not None:
        np.testing.assert_array_equal(kernel_a, kernel_b)
    # Blur removes high frequencies: neighbouring pixels become much more alike.
    assert detail(a) < 0.6 * detail(sharp)


def test_kernel_blur_is_the_convolution_then_rounding(sharp):
    blurry, kernel = degrade(sharp, np.random.default_rng(3), SynthConfig(5, 9, noise=0.0))
    expected = np.clip(np.round(apply_blur(sharp.astype(np.float32) / 255.0, kernel) * 255), 0, 255)
    np.testing.assert_array_equal(blurry, expected)


def test_pure_translation_motion_equals_its_kernel():
    # With neither roll nor zoom, every pixel moves alike: averaging shifted copies is a convolution. A path of
    # whole-pixel steps to the right makes a box kernel, so the result is a moving average along each row.
    image = np.random.default_rng(0).random((20, 40, 3)).astype(np.float32)
    frames = [(0.0, 1.0, complex(dx, 0), 0j) for dx in (-2, -1, 0, 1, 2)]
    blurred = motion_blur(image, frames, linear=False)
    box = np.zeros((5, 5), dtype=np.float32)
    box[2, :] = 0.2
    np.testing.assert_allclose(blurred[:, 3:-3], apply_blur(image, box)[:, 3:-3], atol=1e-5)


def test_motion_path_is_centred_on_its_middle_frame():
    frames = camera_path(np.random.default_rng(1), 21.0, 3.0, 0.05, (100, 150))
    angles = np.array([f[0] for f in frames])
    shifts = np.array([f[2] for f in frames])
    assert len(frames) >= 21 / 0.75  # frames close enough together to look continuous
    assert abs(angles[0] + angles[-1]) < 1e-9 and np.ptp(angles) <= np.radians(3.0) + 1e-9
    middle = len(frames) // 2
    assert min(abs(shifts[middle]), abs(shifts[middle - 1])) < 1.0  # the sharp photo is the middle frame
    assert 15 < max(np.ptp(shifts.real), np.ptp(shifts.imag)) <= 21.0 + 1e-6


def test_roll_blurs_the_far_side_more_than_the_centre():
    # A roll about the middle of the left edge moves the right side most: blur that varies across the photo.
    image = np.random.default_rng(2).random((60, 200, 3)).astype(np.float32)
    frames = [(np.radians(a), 1.0, 0j, complex(0, 30)) for a in np.linspace(-3, 3, 41)]
    blurred = motion_blur(image, frames, linear=False)
    left, right = blurred[:, 5:40], blurred[:, 160:195]
    assert detail(right) < 0.7 * detail(left)


def test_varying_blur_leaves_some_regions_sharper():
    # A strong blur over some regions and at most a mild one elsewhere: the photo's detail differs from region to
    # region far more than under one kernel.
    sharp = np.random.default_rng(4).integers(0, 256, (256, 256, 3), dtype=np.uint8)
    spreads = {}
    for varying in (0.0, 1.0):
        ratios = []
        for seed in range(6):
            blurry, _ = degrade(sharp, np.random.default_rng(seed), SynthConfig(15, 20, noise=0.0, varying=varying))
            tiles = [
                detail(blurry[y : y + 64, x : x + 64]) / detail(sharp[y : y + 64, x : x + 64])
                for y in range(0, 256, 64)
                for x in range(0, 256, 64)
            ]
            ratios.append(max(tiles) - min(tiles))
        spreads[varying] = np.mean(ratios)
    assert spreads[1.0] > 3 * spreads[0.0]


def test_recipes_without_the_new_keys_keep_their_pairs(sharp):
    # path and frames draw random numbers only when used: the shipped recipe's seed makes the same pairs as before.
    blurry, kernel = degrade(sharp, np.random.default_rng(3), SynthConfig(5, 9, noise=0.0))
    expected = random_kernel(np.random.default_rng(3), 5, 9)
    np.testing.assert_array_equal(kernel, expected)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"min_frames": 7}, "needs data.synth.max_frames"),
        ({"min_frames": 1, "max_frames": 8}, "at least 2"),
        ({"min_frames": 9, "max_frames": 8}, "at most data.synth.max_frames"),
        ({"min_frames": 7, "max_frames": 8, "blur": "motion"}, "need data.synth.blur=kernel"),
        ({"path": "smooth", "blur": "motion"}, "path needs data.synth.blur=kernel"),
        ({"path": "zigzag"}, "data.synth.path"),
        ({"varying": 1.5}, "data.synth.varying"),
        ({"varying": 0.5, "blur": "motion"}, "varying needs data.synth.blur=kernel"),
        ({"estimated_share": 0.2}, "estimated_share needs data.synth.deconvolve"),  # it went unused
    ],
)
def test_bad_frames_and_paths_name_the_key(settings, message):
    with pytest.raises(ConfigError, match=message):
        SynthConfig(**settings)


def test_roll_and_zoom_need_motion_blur():
    with pytest.raises(ConfigError, match="blur=motion"):
        SynthConfig(max_rotation=1.0)
    with pytest.raises(ConfigError, match="data.synth.blur"):
        SynthConfig(blur="gaussian")


def test_min_noise_draws_a_level_per_photo():
    # The noise is what remains after the blur and rounding: its spread differs photo to photo, within the range.
    flat = np.full((64, 64, 3), 128, dtype=np.uint8)
    synth = SynthConfig(1, 1, noise=0.05, min_noise=0.0)
    levels = [(degrade(flat, np.random.default_rng(seed), synth)[0] / 255.0).std() for seed in range(8)]
    assert max(levels) < 0.055 and max(levels) > 2 * min(levels)


def test_without_min_noise_the_level_is_fixed_and_no_draw_is_added(sharp):
    # min_noise None: the recipes made before it keep their exact pairs for a given seed.
    fixed = degrade(sharp, np.random.default_rng(3), SynthConfig(5, 9, noise=0.02))
    same = degrade(sharp, np.random.default_rng(3), SynthConfig(5, 9, noise=0.02, min_noise=None))
    ranged = degrade(sharp, np.random.default_rng(3), SynthConfig(5, 9, noise=0.02, min_noise=0.02))
    np.testing.assert_array_equal(fixed[0], same[0])
    assert not np.array_equal(fixed[0], ranged[0])  # the extra draw moves the noise, at the same level


@pytest.mark.parametrize("min_noise", [-0.01, 0.03])
def test_min_noise_outside_zero_to_noise_names_the_key(min_noise):
    with pytest.raises(ConfigError, match="data.synth.min_noise"):
        SynthConfig(noise=0.02, min_noise=min_noise)


def test_a_pair_left_sharp_differs_from_its_photo_only_by_noise():
    from deblur.data.degrade import degrade_pair

    sharp = (np.random.default_rng(0).random((64, 80, 3)) * 255).astype(np.uint8)
    target, blurry, kernel = degrade_pair(
        sharp, np.random.default_rng(1), SynthConfig(5, 9, noise=0.0, sharp_share=1.0)
    )
    assert kernel.shape == (1, 1)
    np.testing.assert_array_equal(target, sharp)
    np.testing.assert_array_equal(blurry, sharp)


def test_a_pair_left_soft_is_the_softened_photo_on_both_sides():
    from deblur.data.degrade import degrade_pair
    from deblur.data.demo import load_photo

    photo = load_photo("astronaut")[:96, :96]
    target, blurry, kernel = degrade_pair(photo, np.random.default_rng(1), SynthConfig(5, 9, noise=0.0, soft_share=1.0))
    assert kernel.shape == (1, 1)
    np.testing.assert_array_equal(blurry, target)  # nothing moved: the deconvolution has nothing to undo

    def detail(image):
        return np.abs(np.diff(image.astype(float), axis=1)).mean()

    assert detail(target) < 0.8 * detail(photo)  # softer than the photo it was made from, not a copy of it


def test_soft_share_is_a_share_of_all_pairs_beside_sharp_share():
    from deblur.data.degrade import degrade_pair

    photo = (np.random.default_rng(0).random((24, 24, 3)) * 255).astype(np.uint8)
    recipe = SynthConfig(5, 9, noise=0.0, sharp_share=0.3, soft_share=0.3)
    kinds = []
    for seed in range(400):
        target, _, kernel = degrade_pair(photo, np.random.default_rng(seed), recipe)
        if kernel is None or kernel.shape != (1, 1):
            kinds.append("blurred")
        else:
            kinds.append("sharp" if (target == photo).all() else "soft")
    assert abs(kinds.count("soft") / 400 - 0.3) < 0.07 and abs(kinds.count("sharp") / 400 - 0.3) < 0.07


def test_clipped_lights_make_the_sharp_photo_brighter_where_it_was_brightest():
    from deblur.data.degrade import degrade_pair

    sharp = np.full((64, 64, 3), 100, np.uint8)
    sharp[20:30, 20:30] = 235  # a light
    target, blurry, _ = degrade_pair(sharp, np.random.default_rng(2), SynthConfig(5, 9, noise=0.0, clipped_share=1.0))
    assert target[25, 25].min() == 255 and target[50, 50].max() == 100
    # the blur spreads light brighter than white: the streak around the light is brighter than the same blur
    # of the unclipped photo
    _, plain, _ = degrade_pair(sharp, np.random.default_rng(2), SynthConfig(5, 9, noise=0.0))
    assert blurry.astype(int).sum() > plain.astype(int).sum()


def test_jpeg_share_sends_the_blurry_photo_through_a_jpeg():
    from deblur.data.degrade import degrade_pair
    from deblur.data.demo import load_photo

    sharp = load_photo("astronaut")[:64, :64]
    recipe = SynthConfig(5, 9, noise=0.0, sharp_share=1.0, jpeg_share=1.0)
    _, blurry, _ = degrade_pair(sharp, np.random.default_rng(1), recipe)
    assert 0 < np.abs(blurry.astype(int) - sharp).mean() < 8  # changed a little, as a JPEG of quality 70-95 does


def test_log_length_keeps_kernels_within_the_photo_share():
    from deblur.data.degrade import LONGEST_SHARE, degrade_pair

    sharp = np.zeros((100, 120, 3), np.uint8)
    recipe = SynthConfig(2, 80, noise=0.0, log_length=True)
    sizes = [degrade_pair(sharp, np.random.default_rng(seed), recipe)[2].shape[0] for seed in range(30)]
    # the kernel's square is centred on the path's mean: it reaches the path's length and a pixel each way
    assert max(sizes) <= 2 * (LONGEST_SHARE * 120 + 1) + 1 < 80
    assert min(sizes) <= 7  # light blur too


def test_new_recipe_keys_are_checked():
    with pytest.raises(ConfigError, match="data.synth.sharp_share"):
        SynthConfig(sharp_share=1.5)
    with pytest.raises(ConfigError, match="data.synth.sharp_share \\+ data.synth.soft_share is 1.2"):
        SynthConfig(sharp_share=0.5, soft_share=0.7)
    with pytest.raises(ConfigError, match="frames_share needs data.synth.max_frames"):
        SynthConfig(frames_share=0.5)
