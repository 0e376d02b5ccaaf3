import numpy as np
import pytest
from skimage.metrics import peak_signal_noise_ratio, structural_similarity

from deblur.losses import build_vgg_features, charbonnier_loss, l1_loss, psnr, ssim


@pytest.fixture
def images():
    rng = np.random.default_rng(0)
    reference = rng.random((2, 40, 48, 3)).astype("float32")
    noisy = np.clip(reference + rng.normal(0, 0.05, reference.shape), 0, 1).astype("float32")
    return reference, noisy


def test_psnr_matches_skimage(images):
    reference, noisy = images
    ours = np.asarray(psnr(reference, noisy))
    for i in range(2):
        assert ours[i] == pytest.approx(peak_signal_noise_ratio(reference[i], noisy[i], data_range=1.0), abs=1e-3)


def test_psnr_identical_is_capped():
    x = np.full((1, 8, 8, 3), 0.5, "float32")
    assert float(psnr(x, x)[0]) == pytest.approx(100.0)


def test_ssim_matches_skimage(images):
    reference, noisy = images
    ours = np.asarray(ssim(reference, noisy))
    for i in range(2):
        expected = structural_similarity(
            reference[i],
            noisy[i],
            gaussian_weights=True,
            sigma=1.5,
            use_sample_covariance=False,
            data_range=1.0,
            channel_axis=-1,
        )
        assert ours[i] == pytest.approx(expected, abs=1e-4)


def test_ssim_of_identical_images_is_one(images):
    reference, _ = images
    np.testing.assert_allclose(ssim(reference, reference), 1.0, atol=1e-5)


def test_pixel_losses(images):
    reference, noisy = images
    l1 = np.asarray(l1_loss(reference, noisy))
    assert l1.shape == (2,)
    np.testing.assert_allclose(l1, np.abs(reference - noisy).mean(axis=(1, 2, 3)), rtol=1e-5)
    charbonnier = np.asarray(charbonnier_loss(reference, noisy))
    assert np.all(charbonnier >= l1) and np.all(charbonnier < l1 + 1e-3)


def test_missing_vgg_weights_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="VGG16 weights file .*missing.h5 not found"):
        build_vgg_features(tmp_path / "missing.h5")


def test_the_step_loss_adds_the_mix_by_its_weight():
    from deblur.losses import l1_loss, step_loss

    rng = np.random.default_rng(0)
    sharp, output, mix = (rng.random((2, 8, 8, 3), dtype=np.float32) for _ in range(3))
    plain = step_loss(l1_loss)(sharp, output)
    both = step_loss(l1_loss, mix_weight=0.5)(sharp, (output, mix))
    np.testing.assert_allclose(plain, l1_loss(sharp, output), atol=1e-7)
    np.testing.assert_allclose(both, l1_loss(sharp, output) + 0.5 * l1_loss(sharp, mix), atol=1e-7)
