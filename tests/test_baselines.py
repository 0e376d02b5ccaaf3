import numpy as np
from skimage.metrics import peak_signal_noise_ratio

from deblur.data.demo import load_photo
from deblur.data.kernels import apply_blur
from deblur.evaluation.baselines import richardson_lucy, unsharp_mask, wiener


def _blurred():
    sharp = load_photo("camera")[100:228, 100:228].astype(np.float32) / 255.0
    kernel = np.zeros((9, 9), np.float32)
    kernel[4, 1:9] = 1.0  # one-sided: a kernel used upside down would show
    kernel[1:4, 8] = 1.0
    kernel /= kernel.sum()
    return sharp, apply_blur(sharp, kernel).astype(np.float32), kernel


def test_deconvolution_with_the_true_kernel_beats_the_blurry_input():
    sharp, blurry, kernel = _blurred()
    before = peak_signal_noise_ratio(sharp, blurry, data_range=1.0)
    for restore in (richardson_lucy, wiener):
        restored = restore(blurry, kernel)
        assert restored.shape == blurry.shape and restored.dtype == np.float32
        assert restored.min() >= 0.0 and restored.max() <= 1.0
        right = peak_signal_noise_ratio(sharp, restored, data_range=1.0)
        wrong = peak_signal_noise_ratio(sharp, restore(blurry, kernel[::-1, ::-1]), data_range=1.0)
        assert right > before + 2.0, restore.__name__
        assert right > wrong + 2.0, restore.__name__  # the kernel is used the way the blur was made


def test_unsharp_mask_needs_no_kernel():
    sharp, blurry, _ = _blurred()
    restored = unsharp_mask(blurry)
    assert restored.shape == blurry.shape and restored.dtype == np.float32
    assert np.isfinite(restored).all() and restored.min() >= 0.0 and restored.max() <= 1.0

    def detail(image):  # mean absolute Laplacian: edges and texture
        return np.abs(
            4 * image[1:-1, 1:-1] - image[:-2, 1:-1] - image[2:, 1:-1] - image[1:-1, :-2] - image[1:-1, 2:]
        ).mean()

    assert detail(restored) > 1.5 * detail(blurry)
