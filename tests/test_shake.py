"""The camera-shake kernel path: the estimate finds a known shake, deconvolution inverts it, and `--method kernel`
runs it instead of the model."""

import numpy as np
import pytest
import skimage.data
from scipy.signal import fftconvolve

from deblur.data.kernels import shake_trajectory, trajectory_kernel
from deblur.shake.deconvolve import _hyper, deconvolve, shrinkage
from deblur.shake.edges import DIRECTIONS, edge_threshold, strong_edges
from deblur.shake.estimate import (
    MIN_WORKING_SIDE,
    Estimate,
    EstimateSettings,
    _at_scale,
    centre,
    estimate_kernel,
    kernel_step,
    refinement_scales,
    search_support,
    working_scale,
)
from deblur.shake.fourier import (
    gradient_otfs,
    gradients,
    gradients_adjoint,
    image_of,
    kernel_of,
    otf,
    spectrum,
    wrap_edges,
)
from deblur.shake.restore import restore
from deblur.shake.split import growing, split


def shaken(length: float, seed: int = 3, photo: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A photo (uint8, gray or RGB; the camera photo's middle 256x256 unless given) as RGB, its blurred copy by a
    hand-shake kernel of `length` px, and the kernel."""
    sharp = (skimage.data.camera()[128:384, 128:384] if photo is None else photo).astype(np.float32) / 255
    path = shake_trajectory(np.random.default_rng(seed), length)
    middle = complex((path.real.min() + path.real.max()) / 2, (path.imag.min() + path.imag.max()) / 2)
    kernel = trajectory_kernel(path, middle).astype(np.float32)
    pad = kernel.shape[0]
    channels = sharp[:, :, None] if sharp.ndim == 2 else sharp
    blurry = np.stack(
        [
            fftconvolve(np.pad(channel, pad, mode="reflect"), kernel, mode="same")[pad:-pad, pad:-pad]
            for channel in channels.transpose(2, 0, 1)
        ],
        axis=2,
    )
    blurry = blurry + np.random.default_rng(seed).normal(0, 0.002, blurry.shape)
    rgb = lambda image: np.broadcast_to(np.clip(image, 0, 1), image.shape[:2] + (3,)).astype(np.float32)  # noqa: E731
    return rgb(channels), rgb(blurry), kernel


def psnr(sharp: np.ndarray, image: np.ndarray, border: int = 16, reach: int = 4) -> float:
    """At the best shift within `reach` px: a blind estimate is only known up to a shift, as the photo is."""
    h, w = sharp.shape[:2]
    inner = sharp[border : h - border, border : w - border]
    shifted = (
        image[border + dy : h - border + dy, border + dx : w - border + dx]
        for dy in range(-reach, reach + 1)
        for dx in range(-reach, reach + 1)
    )
    return max(float(10 * np.log10(1 / np.mean((inner - other) ** 2))) for other in shifted)


def test_otf_and_kernel_of_are_inverses_and_gradients_match_their_otfs():
    rng = np.random.default_rng(0)
    kernel = rng.uniform(0, 1, (7, 7)).astype(np.float32)
    np.testing.assert_allclose(kernel_of(otf(kernel, (40, 48)), (40, 48), 7), kernel, atol=1e-5)
    image = rng.uniform(0, 1, (40, 48)).astype(np.float32)
    dx, dy = gradient_otfs(image.shape)
    gx, gy = gradients(image)
    np.testing.assert_allclose(image_of(dx * spectrum(image), image.shape), gx, atol=1e-5)
    np.testing.assert_allclose(image_of(dy * spectrum(image), image.shape), gy, atol=1e-5)
    adjoint = image_of(np.conj(dx) * spectrum(gx) + np.conj(dy) * spectrum(gy), image.shape)
    np.testing.assert_allclose(gradients_adjoint(gx, gy), adjoint, atol=1e-5)


def test_wrap_edges_keeps_the_photo_and_closes_the_loop():
    image = np.random.default_rng(1).uniform(0, 1, (30, 50)).astype(np.float32)
    wrapped = wrap_edges(image, 9)
    assert wrapped.shape[0] >= 39 and wrapped.shape[1] >= 59
    np.testing.assert_array_equal(wrapped[:30, :50], image)
    # the last added column ramps almost back to the first: no jump where the FFT wraps around
    assert np.abs(wrapped[:30, -1] - image[:, 0]).max() < np.abs(image[:, -1] - image[:, 0]).max() / 2 + 1e-6


def test_splitting_with_no_blur_and_no_prior_returns_the_photo_and_betas_grow_to_their_stop():
    photo = np.random.default_rng(0).random((24, 32)).astype(np.float32)
    point = np.zeros((3, 3), np.float32)
    point[1, 1] = 1
    kept = split(photo, point, lambda gx, gy, beta: (gx, gy), growing(1.0, 100.0, 4.0))
    np.testing.assert_allclose(kept, photo, atol=1e-5)
    flat = split(photo, point, lambda gx, gy, beta: (0 * gx, 0 * gy), [1e6])  # all edges dropped: near its mean
    assert np.ptp(flat) < 0.01 * np.ptp(photo)
    assert list(growing(1.0, 100.0, 4.0)) == [1.0, 4.0, 16.0, 64.0]


def test_splitting_takes_a_transfer_function_that_channels_share():
    rng = np.random.default_rng(2)
    photo = rng.random((40, 56)).astype(np.float32)
    kernel = rng.random((5, 5)).astype(np.float32)
    kernel /= kernel.sum()
    shrink = lambda gx, gy, beta: (gx * 0.5, gy * 0.5)  # noqa: E731
    origin = (1.7, 2.2)
    by_kernel = split(photo, kernel, shrink, [1.0, 4.0], 100.0, origin)
    by_transfer = split(photo, otf(kernel, photo.shape, origin), shrink, [1.0, 4.0], 100.0)
    np.testing.assert_array_equal(by_kernel, by_transfer)


def test_centre_moves_the_extent_to_the_middle_by_whole_pixels():
    kernel = np.zeros((15, 15), np.float32)
    kernel[2, 3:8] = 0.2  # a line from (2, 3) to (2, 7): its middle is (2, 5)
    centred = centre(kernel)
    ys, xs = np.nonzero(centred)
    assert (ys.min() + ys.max()) / 2 == 7 and (xs.min() + xs.max()) / 2 == 7
    assert sorted(centred[centred > 0]) == sorted(kernel[kernel > 0])


def test_centring_with_a_trim_ignores_a_faint_spur_that_moves_the_bounding_box():
    kernel = np.zeros((21, 21), np.float32)
    kernel[10, 6:15] = 1.0  # a line whose middle is (10, 10)
    kernel[10, 1] = 0.06  # a spur above 1/20 of the peak, 5 px to its left: 0.7% of the mass
    kernel /= kernel.sum()
    line = lambda centred: np.nonzero(centred[10] > 0.05)[0]  # noqa: E731
    assert list(line(centre(kernel, 0.01))) == list(range(6, 15))  # left where it was
    assert list(line(centre(kernel))) == list(range(8, 17))  # the box, spur and all, was centred


@pytest.mark.parametrize("factor", [1.0, 2.0])
def test_the_final_kernel_sums_to_one_where_centring_carries_a_tail_past_its_edge(factor):
    kernel = np.zeros((21, 21), np.float32)
    kernel[10, 2:13] = 1.0  # a line whose middle is (10, 7)
    kernel[10, 13:21] = 0.01  # a faint tail to the edge, 0.7% of the mass: trimmed, so the line is moved 3 px right
    kernel /= kernel.sum()
    final = _at_scale(kernel, factor)
    assert final.sum() == pytest.approx(1.0, abs=1e-5)  # had been 0.997: the deconvolution refused it
    deconvolve(np.full((40, 40, 3), 0.5, np.float32), final)  # photos of 64 to 256 px by the default had failed


def test_deconvolution_with_the_true_kernel_restores_the_photo():
    sharp, blurry, kernel = shaken(15)
    restored = deconvolve(blurry, kernel)
    assert restored.shape == blurry.shape and restored.dtype == np.float32
    assert psnr(sharp, restored) > psnr(sharp, blurry) + 4


@pytest.mark.parametrize("exponent", [2 / 3, 0.5])
@pytest.mark.parametrize("beta", [1.0, 22.6, 256.0])
def test_the_hyper_laplacian_table_holds_the_cheapest_shrunk_gradient(exponent, beta):
    values, shrunk = shrinkage(exponent, beta)
    candidates = np.linspace(0, values[-1], 20001)[None, :]
    cost = lambda w, v: w**exponent + beta / 2 * (w - v) ** 2  # noqa: E731
    picked = values[::60, None]
    cheapest = cost(candidates, picked).min(axis=1)
    assert np.all(cost(shrunk[::60], picked[:, 0]) <= cheapest + 1e-6)
    assert np.all(np.diff(shrunk) >= -1e-9)  # a larger gradient never shrinks to a smaller one
    assert shrunk[0] == 0
    beyond = np.array([-2.0, 1.7, 3.0], np.float32)  # past the table: shrunk by its last step, signs kept
    out, _ = _hyper(exponent)(beyond.copy(), beyond.copy(), beta)
    assert np.allclose(out, np.sign(beyond) * (np.abs(beyond) - (values[-1] - shrunk[-1])), atol=1e-5)


def test_deconvolution_with_a_hyper_laplacian_prior_restores_the_photo():
    sharp, blurry, kernel = shaken(15)
    restored = deconvolve(blurry, kernel, exponent=2 / 3)
    assert psnr(sharp, restored) > psnr(sharp, blurry) + 4
    with pytest.raises(ValueError, match="exponent"):
        deconvolve(blurry, kernel, exponent=1.5)


def test_the_blind_estimate_finds_the_shake_and_deblurs_by_it():
    sharp, blurry, kernel = shaken(15)
    estimate = estimate_kernel(blurry)
    assert isinstance(estimate, Estimate) and estimate.scale == 1.0
    assert estimate.kernel.sum() == pytest.approx(1, abs=1e-5) and estimate.kernel.min() >= 0
    true_extent = Estimate(kernel, kernel, 1.0, 45).extent
    assert abs(estimate.extent - true_extent) <= 8, (estimate.extent, true_extent)
    assert psnr(sharp, restore(blurry)) > psnr(sharp, blurry) + 3


def test_the_last_rounds_fit_the_kernel_to_the_photo_as_the_kernel_path_deconvolves_it(monkeypatch):
    from deblur.shake import estimate

    sharp, blurry, kernel = shaken(15)
    gray = sharp[:, :, 0]
    observed = wrap_edges(blurry[:, :, 0], kernel.shape[0])
    latent = estimate.deconvolved_latent(observed, kernel, 0.0, EstimateSettings())
    assert psnr(gray, latent[:256, :256]) > psnr(gray, blurry[:, :, 0]) + 4  # what `deconvolve` gives back
    seen = []
    latent_of = estimate.deconvolved_latent
    spy = lambda observed, *rest: seen.append(observed.shape) or latent_of(observed, *rest)  # noqa: E731
    monkeypatch.setattr(estimate, "deconvolved_latent", spy)
    found = estimate_kernel(blurry, EstimateSettings(refit_rounds=3))
    # at the largest scale (a 256 px photo is not refined: its own size), after every L0 round
    assert len(seen) == 3 and all(shape[0] >= 256 for shape in seen)
    assert psnr(sharp, deconvolve(blurry, found.kernel)) > psnr(sharp, blurry) + 6
    seen.clear()
    estimate_kernel(blurry, EstimateSettings(refit_rounds=0))
    assert not seen


def test_the_refit_deconvolves_in_its_own_few_splitting_weights(monkeypatch):
    from deblur.shake import estimate

    walked = []
    split = estimate.split

    def spy(observed, kernel, shrink, betas, *rest):
        walked.append(list(betas))
        return split(observed, kernel, shrink, walked[-1], *rest)

    monkeypatch.setattr(estimate, "split", spy)
    _, blurry, kernel = shaken(15)
    observed = wrap_edges(blurry[:, :, 0], kernel.shape[0])
    estimate.deconvolved_latent(observed, kernel, 0.0, EstimateSettings())
    estimate.deconvolved_latent(observed, kernel, 0.0, EstimateSettings(refit_betas=(1.0, 256.0, 4.0)))
    assert walked == [[1.0, 8.0, 64.0], [1.0, 4.0, 16.0, 64.0]]


def test_the_refit_keeps_fainter_kernel_values_than_the_other_rounds(monkeypatch):
    from deblur.shake import estimate

    path = np.zeros((9, 9), np.float32)
    path[4, 2:7] = [1, 0.04, 0.04, 0.04, 1]  # a shake that rests at both ends and moves fast between
    assert np.count_nonzero(estimate.clean(path)) == 2  # under 1/20 of the peak: only the two ends are left
    assert np.count_nonzero(estimate.clean(path, kept=30)) == 5
    kept = []
    clean = estimate.clean
    monkeypatch.setattr(
        estimate, "clean", lambda kernel, kept_=estimate.KEPT: kept.append(kept_) or clean(kernel, kept_)
    )
    blurry = shaken(15)[1]
    estimate_kernel(blurry, EstimateSettings(refit_rounds=2, refit_kept=40, refit_long=1))
    assert kept.count(40) == 4 and set(kept) == {estimate.KEPT, 40}  # two cleans a round, the refit's two rounds
    kept.clear()  # a kernel shorter than `refit_long` is cleaned in the refit as in every other round
    estimate_kernel(blurry, EstimateSettings(refit_rounds=2, refit_kept=40, refit_long=99))
    assert set(kept) == {estimate.KEPT}


def test_the_refit_fits_the_kernel_to_more_edges_than_the_other_rounds(monkeypatch):
    from deblur.shake import estimate

    asked = []
    threshold = estimate.edge_threshold
    monkeypatch.setattr(
        estimate, "edge_threshold", lambda gx, gy, size, per: asked.append(per) or threshold(gx, gy, size, per)
    )
    blurry = shaken(15)[1]
    estimate_kernel(blurry, EstimateSettings(refit_rounds=2, edges=15, refit_edges=40))
    assert asked[-1] == 40 and set(asked[:-1]) == {15}  # each `_iterate` sets its threshold once, the refit's last
    asked.clear()
    estimate_kernel(blurry, EstimateSettings(refit_rounds=0, edges=15, refit_edges=40))
    assert set(asked) == {15}


def test_a_large_photo_is_estimated_downscaled_and_the_kernel_scaled_back():
    _, blurry, _ = shaken(9)
    large = np.kron(blurry, np.ones((3, 3, 1), np.float32))  # 768x768: the same shake, three times as long
    settings = EstimateSettings(working_side=256)
    estimate = estimate_kernel(large, settings)
    assert estimate.scale == pytest.approx(1 / 3)
    assert estimate.kernel.shape[0] == pytest.approx(3 * estimate.working.shape[0], abs=2)
    assert estimate.kernel.shape[0] % 2 == 1


def test_the_kernel_update_finds_the_kernel_that_blurred_the_edges():
    # Without a prior (a negligible weight, no sparsity) the least squares give back the kernel exactly: the normal
    # operator, a circular convolution of which only the middle window is kept, must not wrap into that window.
    rng = np.random.default_rng(0)
    for size in (3, 7, 15):
        kernel = rng.random((size, size)).astype(np.float32)
        kernel /= kernel.sum()
        edges = tuple(rng.normal(size=(2, 64, 80)).astype(np.float32))
        blurred = tuple(spectrum(g) * otf(kernel, (64, 80)) for g in edges)
        settings = EstimateSettings(kernel_weight=1e-6, sparsity=0.0, cg_steps=400)
        found = kernel_step(edges, blurred, (64, 80), np.ones((size, size), np.float32), settings)
        np.testing.assert_allclose(found, kernel, atol=1e-4)


def test_the_edge_threshold_keeps_enough_pixels_in_every_direction_and_no_more():
    rng = np.random.default_rng(0)
    gx, gy = rng.normal(size=(2, 60, 80)).astype(np.float32)
    gx[:, :40] *= 5  # one half's edges far stronger: a plain top share would come from it alone
    threshold = edge_threshold(gx, gy, 7, 3.0)
    magnitude = gx**2 + gy**2
    direction = np.minimum((np.mod(np.arctan2(gy, gx), np.pi) * (DIRECTIONS / np.pi)).astype(int), DIRECTIONS - 1)
    kept = [int(np.sum((magnitude >= threshold) & (direction == d))) for d in range(DIRECTIONS)]
    assert min(kept) >= 21  # 3 kernel widths of 7 px in each direction
    higher = np.nextafter(np.float32(threshold), np.float32(np.inf))
    assert min(int(np.sum((magnitude >= higher) & (direction == d))) for d in range(DIRECTIONS)) < 21
    sx, sy = strong_edges(gx, gy, threshold)
    assert np.array_equal(sx != 0, magnitude >= threshold) and np.array_equal(sx[sx != 0], gx[sx != 0])
    assert np.array_equal(sy[magnitude < threshold], np.zeros(int(np.sum(magnitude < threshold)), np.float32))


def test_fitting_the_kernel_to_the_strongest_edges_finds_a_shake_that_all_edges_miss():
    # A 25 px shake on the camera photo: fitted to every edge of the latent the estimate stops at 20 px and gains
    # about 2 dB; to the strongest edges in each direction it finds the whole path
    sharp, blurry, kernel = shaken(25, seed=1)
    estimate = estimate_kernel(blurry)
    assert abs(estimate.extent - Estimate(kernel, kernel, 1.0, 45).extent) <= 2
    assert psnr(sharp, deconvolve(blurry, estimate.kernel)) > psnr(sharp, blurry) + 6
    everything = estimate_kernel(blurry, EstimateSettings(edges=0))
    assert psnr(sharp, deconvolve(blurry, everything.kernel)) < psnr(sharp, blurry) + 4


@pytest.mark.parametrize("height, width", [(8, 3000), (3000, 8), (6, 60000), (64, 20000)])
def test_a_strip_far_longer_than_wide_is_deblurred_at_its_own_size(height, width):
    """Shrunk to 384 px long, such a strip was under a pixel wide and the estimate failed (a broadcast error)."""
    strip = np.random.default_rng(0).random((height, width, 3), dtype=np.float32)
    assert min(height, width) * working_scale((height, width), 384) >= min(MIN_WORKING_SIDE, height, width)
    restored = restore(strip)
    assert restored.shape == strip.shape and np.isfinite(restored).all()


def test_the_working_scale_of_an_ordinary_photo_is_its_long_side_at_working_side():
    assert working_scale((720, 1280), 384) == 384 / 1280
    assert working_scale((200, 300), 384) == 1.0


@pytest.mark.parametrize(
    "shape, support",
    [((720, 1280), 45), ((3000, 4000), 45), ((768, 1024), 45), ((420, 560), 61), ((480, 700), 55), ((255, 255), 45)],
)
def test_the_search_covers_reach_px_of_a_small_photo_up_to_widest_of_its_working_side(shape, support):
    """45 working px are 150 px of a 1280 px frame but 66 of a 560 px photo; Levin's 255 px photos keep 45."""
    settings = EstimateSettings()
    scale = working_scale(shape, settings.working_side)
    assert search_support(shape, scale, settings) == support
    assert search_support(shape, scale, EstimateSettings(reach=0)) == settings.support
    if max(shape) == 560:  # Lai et al.'s 75 px kernel fits now
        assert support / scale >= 75 > settings.support / scale


def test_a_shake_longer_than_45_working_px_on_a_small_photo_is_found_whole():
    """An 81 px shake on a 600 px photo: searched within 45 working px (70 px there) the estimate stopped at 67 px
    and gained +0.4 dB; within 61 (95 px) it is found whole."""
    sharp, blurry, kernel = shaken(80, seed=1, photo=skimage.data.coffee())
    true_extent = Estimate(kernel, kernel, 1.0, 0).extent
    estimate = estimate_kernel(blurry)
    assert EstimateSettings().support / estimate.scale < true_extent <= estimate.support / estimate.scale
    assert abs(Estimate(estimate.kernel, estimate.kernel, 1.0, 0).extent - true_extent) <= 8
    assert psnr(sharp, deconvolve(blurry, estimate.kernel), reach=8) > psnr(sharp, blurry, reach=8) + 2


@pytest.mark.parametrize("length, support", [(12, 15), (40, 31)])
def test_an_estimate_that_fills_half_its_support_is_searched_again_in_the_widest(length, support):
    """At a 192 px working side with a 15 px support (31 px widest): a 12 px shake is found at 0.375 scale in 5 px
    and stays; a 40 px one (15 px there) fills the support and is searched again, and found whole."""
    settings = EstimateSettings(working_side=192, support=15, reach=0)
    _, blurry, kernel = shaken(length, seed=1, photo=skimage.data.camera())
    estimate = estimate_kernel(blurry, settings)
    assert estimate.scale == 0.375 and estimate.support == support
    true_extent = Estimate(kernel, kernel, 1.0, 0).extent * estimate.scale
    assert abs(estimate.extent - true_extent) <= 3, (estimate.extent, true_extent)


def test_refinement_scales_climb_by_sqrt2_to_the_top_and_none_past_it():
    assert refinement_scales(0.5, 1.0) == pytest.approx([0.5 * np.sqrt(2), 1.0])
    assert refinement_scales(0.4, 0.8) == pytest.approx([0.4 * np.sqrt(2), 0.8])
    assert refinement_scales(1.0, 1.0) == [] and refinement_scales(0.5, 0.5) == []


def test_predict_method_kernel_deblurs_without_the_model(tmp_path):
    from helpers import save_model
    from PIL import Image
    from typer.testing import CliRunner

    from deblur.cli import app
    from deblur.inference import load_deblurrer

    sharp, blurry, _ = shaken(15)
    Image.fromarray((blurry * 255).round().astype(np.uint8)).save(tmp_path / "shaken.png")
    model = save_model(tmp_path / "run")
    deblurrer = load_deblurrer(model, method="kernel")
    assert deblurrer.settings.startswith("the camera-shake kernel path, not the model")
    assert deblurrer.model is None  # not even loaded
    deblurrer.runner = lambda batch: pytest.fail("the kernel path ran the model")
    assert psnr(sharp, deblurrer(blurry)) > psnr(sharp, blurry) + 3
    args = ["predict", str(tmp_path / "shaken.png"), "--model", str(model), "-q", "--out"]
    result = CliRunner().invoke(app, [*args, str(tmp_path / "out"), "--method", "kernel"])
    assert result.exit_code == 0, result.output
    written = np.asarray(Image.open(tmp_path / "out" / "shaken.png"), np.float32) / 255
    assert psnr(sharp, written) > psnr(sharp, blurry) + 3
    result = CliRunner().invoke(app, [*args, str(tmp_path / "bad"), "--method", "wiener"])
    assert result.exit_code == 2 and "--method" in result.output
    assert not (tmp_path / "bad").exists()


def test_the_deconvolution_keeps_the_photo_where_it_was():
    # A kernel whose mass lies right of its array's centre moves the blurry photo right; deconvolved, the photo
    # must stay where the blurry one is (its edges in the middle of the smears), not jump back to the sharp one's
    # place, nor anywhere the array's centre says.
    sharp = skimage.data.camera()[100:228, 100:228].astype(np.float32) / 255
    kernel = np.zeros((21, 21), np.float32)
    kernel[10, 10:21] = 1 / 11  # a line from the centre to the right edge: mass 5 px right of the centre
    blurry = fftconvolve(np.pad(sharp, 21, mode="reflect"), kernel, mode="same")[21:-21, 21:-21]
    rgb = lambda image: np.repeat(np.clip(image, 0, 1)[:, :, None], 3, axis=2).astype(np.float32)  # noqa: E731
    restored = deconvolve(rgb(blurry), kernel)
    moved = np.roll(rgb(sharp), 5, axis=1)  # the sharp photo where the blurry one sits
    assert psnr(moved, restored, reach=0) > psnr(rgb(sharp), restored, reach=0) + 5
    assert psnr(moved, restored, reach=0) > 28


@pytest.mark.parametrize("shape", [(1, 41), (41, 1), (7, 41)])
def test_a_kernel_wider_or_taller_than_square_deconvolves_as_it_does_inside_a_square(shape):
    sharp = skimage.data.astronaut()[100:300, 50:350].astype(np.float32) / 255
    kernel = np.full(shape, 1 / (shape[0] * shape[1]), np.float32)
    side = max(shape)
    square = np.zeros((side, side), np.float32)
    top, left = (side - shape[0]) // 2, (side - shape[1]) // 2
    square[top : top + shape[0], left : left + shape[1]] = kernel
    blurry = np.stack(
        [
            fftconvolve(np.pad(channel, side, mode="reflect"), square, mode="same")[side:-side, side:-side]
            for channel in sharp.transpose(2, 0, 1)
        ],
        axis=2,
    )
    blurry = np.clip(blurry, 0, 1).astype(np.float32)
    np.testing.assert_allclose(deconvolve(blurry, kernel), deconvolve(blurry, square), atol=1e-3)


def test_the_batched_deconvolution_matches_the_numpy_one():
    from deblur.shake.batched import deconvolve_batch

    sharp, blurry, kernel = shaken(9.0)
    _, other, wide = shaken(17.0, seed=5)
    size = wide.shape[0]
    padded = np.pad(kernel, (size - kernel.shape[0]) // 2)  # one size for the batch, around the centre pixel
    batch = np.asarray(deconvolve_batch(np.stack([blurry, other]), np.stack([padded, wide])))
    # (the borders wrapped as wide as the batch's kernel: the NumPy step's pad follows its kernel's size)
    for image, k, result in ((blurry, padded, batch[0]), (other, wide, batch[1])):
        reference = deconvolve(image, k)
        assert 10 * np.log10(1 / np.mean((reference - result) ** 2)) > 50  # the same result, to float32 rounding


@pytest.mark.parametrize(
    "call, said",
    [
        # a uint8 photo had come back as float values of 0-255 from restore; a gray one an IndexError; NaN a
        # "zero-size array" from deep inside
        (lambda photo: restore((photo * 255).astype(np.uint8)), "the blurry photo: uint8 pixels"),
        (lambda photo: restore(photo[..., 0]), "(gray: repeat it on a last axis of 3)"),
        (lambda photo: restore(np.full_like(photo, np.nan)), "the blurry photo: holds NaN or infinite values"),
        (lambda photo: estimate_kernel(photo * 255), "where deblur takes values in [0, 1] (a 0-255 image: divide"),
        (lambda photo: deconvolve(photo * 255, np.ones((3, 3)) / 9), "(a 0-255 image: divide it by 255)"),
        # the kernel: 3-D had been an unpacking error, all zero an image of NaN, summing to 9 nine times too dark
        (
            lambda photo: deconvolve(photo, np.ones((3, 3, 3)) / 27),
            "the kernel: an array of shape (3, 3, 3) summing to 1",
        ),
        (lambda photo: deconvolve(photo, np.zeros((3, 3))), "summing to 0, where deblur takes a 2-D one"),
        (lambda photo: deconvolve(photo, np.ones((3, 3))), "summing to 9, where deblur takes a 2-D one"),
        # a string or ragged rows had ended on NumPy's "could not convert" or "inhomogeneous shape"
        (lambda photo: deconvolve(photo, "box"), "the kernel: str 'box', where deblur takes a 2-D array"),
        (lambda photo: deconvolve(photo, [[1.0], [0.5, 0.5]]), "the kernel: list [[1.0], [0.5, 0.5]], where"),
    ],
)
def test_the_kernel_paths_functions_refuse_arrays_that_are_no_photo_or_kernel(call, said):
    from deblur.image_array import ImageArrayError

    photo = np.random.default_rng(0).random((40, 48, 3), np.float32)
    with pytest.raises(ImageArrayError) as refused:
        call(photo)
    assert said in str(refused.value)


@pytest.mark.parametrize(
    "call, said",
    [
        # a fidelity of 0 or NaN had given an image of NaN, -1 a wrong one, "500" numpy's UFuncTypeError
        (lambda photo, k: deconvolve(photo, k, 0), "fidelity must be a positive number (default 2000); got 0"),
        (lambda photo, k: deconvolve(photo, k, -1.0), "got -1.0"),
        (lambda photo, k: deconvolve(photo, k, float("nan")), "got nan"),
        (lambda photo, k: deconvolve(photo, k, "500"), "got '500'"),
        (lambda photo, k: deconvolve(photo, k, exponent=0), "exponent must be in (0, 1], not 0"),
        # settings of another kind had ended on AttributeError: 'int' object has no attribute 'smoothness'
        (lambda photo, k: estimate_kernel(photo, 0), "the settings are int: give deblur.shake.estimate.Estimate"),
        # an L0 weight of 0 or below had never ended: the splitting grows it up to its end from there
        (lambda photo, k: estimate_kernel(photo, EstimateSettings(smoothness=0)), "must be positive numbers; got (0,)"),
        (lambda photo, k: estimate_kernel(photo, EstimateSettings(candidates=(-1,))), "got (0.002, -1)"),
        # splitting weights that never reach their end: a growth of 1 had never ended, 0.5 on ZeroDivisionError
        (lambda photo, k: estimate_kernel(photo, EstimateSettings(beta_rate=1)), "got 100000.0 and 1"),
        (lambda photo, k: estimate_kernel(photo, EstimateSettings(beta_rate=0.5)), "beta_rate a number above 1"),
        (lambda photo, k: estimate_kernel(photo, EstimateSettings(beta_max=np.inf)), "got inf and 4.0"),
        (lambda photo, k: estimate_kernel(photo, EstimateSettings(refit_betas=(1.0, 256.0, 1.0))), "growth above 1"),
        (lambda photo, k: estimate_kernel(photo, EstimateSettings(refit_betas=(0, 256, 8))), "got (0, 256, 8)"),
        (lambda photo, k: estimate_kernel(photo, EstimateSettings(refit_betas=8)), "got 8"),
    ],
)
def test_the_kernel_paths_functions_refuse_settings_that_are_not_ones(call, said):
    from deblur.errors import SettingError

    photo, kernel = np.random.default_rng(0).random((40, 48, 3), np.float32), np.ones((3, 3)) / 9
    with pytest.raises(SettingError) as refused:
        call(photo, kernel)
    assert said in str(refused.value)
    assert deconvolve(photo, kernel, np.float32(500)).shape == photo.shape  # NumPy's numbers are numbers


def test_the_kernel_paths_functions_take_a_gray_photo_and_one_channel_where_they_did():
    photo = np.random.default_rng(0).random((40, 48), np.float32)
    assert estimate_kernel(photo).kernel.ndim == 2  # HW gray, as its docstring says
    kernel = np.ones((3, 3), np.float32) / 9
    assert deconvolve(photo[..., None], kernel).shape == (40, 48, 1)  # any number of channels (`pick` gives one)
    assert deconvolve(photo[..., None], kernel.astype(np.float64) * 1.0004).shape == (40, 48, 1)
