"""Picking among camera-shake estimates with no sharp photo: the sharpest deconvolution, by a margin, none too long;
and `--estimates`, which asks for them."""

from dataclasses import replace

import numpy as np
import pytest
from scipy import ndimage
from test_shake import psnr, shaken

from deblur.errors import SettingError
from deblur.shake import helper
from deblur.shake.deconvolve import deconvolve
from deblur.shake.estimate import KEPT, EstimateSettings, _broken, _extent, estimate_kernel, tried
from deblur.shake.pick import chosen, normalised_sparsity, sharpest
from deblur.shake.tries import ESTIMATES, MORE_WEIGHTS, MOST_ESTIMATES, check_estimates


def box(length: int, size: int = 31) -> np.ndarray:
    """A horizontal shake `length` px long, centred in a `size` px square."""
    kernel = np.zeros((size, size), np.float32)
    kernel[size // 2, size // 2 - length // 2 : size // 2 - length // 2 + length] = 1 / length
    return kernel


def pick(photo: np.ndarray, kernels: list[np.ndarray], margin: float) -> int:
    """`sharpest`, each kernel's length and pieces measured as the estimate measures them."""
    return sharpest(photo, kernels, [_extent(k) for k in kernels], margin, [_broken(k) for k in kernels])


def test_normalised_sparsity_falls_as_a_photo_sharpens_and_ignores_its_contrast():
    sharp = shaken(15)[0][:, :, 0]
    blurred = ndimage.uniform_filter(sharp, 9)
    assert normalised_sparsity(sharp) < 0.9 * normalised_sparsity(blurred)
    assert normalised_sparsity(0.5 * sharp) == pytest.approx(normalised_sparsity(sharp), rel=1e-5)
    assert np.isfinite(normalised_sparsity(np.zeros((32, 32), np.float32)))


def test_the_estimate_whose_deconvolution_is_sharpest_is_kept_only_past_the_margin():
    sharp, blurry, right = shaken(15)
    photo = blurry[:, :, 0]
    wrong = np.ascontiguousarray(right.T)  # as long, the wrong way
    assert pick(photo, [wrong, right], margin=0.03) == 1
    assert pick(photo, [right, wrong], margin=0.03) == 0
    assert pick(photo, [wrong, right], margin=0.99) == 0  # not past the margin: the first stays
    assert psnr(sharp, deconvolve(blurry, right)) > psnr(sharp, deconvolve(blurry, wrong)) + 3


def test_a_kernel_in_pieces_is_told_from_a_whole_path_and_held_against_its_estimate():
    path = box(9)
    hook = path.copy()
    hook[16, 17] = 1 / 9  # a diagonal step: still one piece, 8-connected
    apart = box(9)
    apart[15, 20:22] = 0  # the stroke broken in the middle
    apart[15, 25] = 1 / 9  # and a piece beyond it
    faint = path.copy()
    faint[5, 5] = 0.1 * path.max() / KEPT  # under the faint part: not a piece
    assert not _broken(path) and not _broken(hook) and not _broken(faint)
    assert _broken(apart)
    lengths, margin = [9, 9], 0.03
    scores = [1.0, 1.0 - margin / 2]  # the second sharper, but not past the margin
    assert chosen(scores, lengths, margin, [False, False]) == 0
    assert chosen(scores, lengths, margin, [True, False]) == 1  # a broken first no longer holds its place
    assert chosen([1.0, 1.0 - 2 * margin], lengths, margin, [False, True]) == 0  # nor does a broken second win
    assert chosen(scores, lengths, margin, [True, True]) == 0  # both broken: as if neither
    assert chosen([1.0, 1.0 - 2 * margin], lengths, margin, [True, True]) == 1


def test_a_candidate_over_four_times_the_first_estimates_length_is_not_considered():
    _, blurry, _ = shaken(15)
    photo = blurry[:, :, 0]
    first, long = box(3, 51), box(29, 51)  # 29 px > 4 x max(3, 3)
    scores = [normalised_sparsity(deconvolve(photo[:, :, None], k)[20:-20, 20:-20, 0]) for k in (first, long)]
    assert scores[1] < scores[0]  # the long one would win if it were considered
    assert pick(photo, [first, long], margin=0.0) == 0
    assert pick(photo, [box(8, 51), long], margin=0.0) == 1  # 29 <= 4 x 8: it is


def test_with_candidates_the_estimate_is_one_of_the_single_estimates_and_none_without(monkeypatch):
    from deblur.shake import estimate as module

    _, blurry, _ = shaken(15)
    monkeypatch.setattr(helper, "_take", lambda: None)  # on threads here: a helper process would not see the patch
    weights = []
    single = module._fitted
    monkeypatch.setattr(module, "_fitted", lambda photo, s: weights.append(s.smoothness) or single(photo, s))
    one = estimate_kernel(blurry, tried(1))
    assert weights == [EstimateSettings().smoothness]
    weights.clear()
    three = estimate_kernel(blurry, tried(3))
    assert sorted(weights) == sorted([EstimateSettings().smoothness, *MORE_WEIGHTS])
    photo = blurry @ module.LUMA
    singles = [one.kernel] + [single(photo, EstimateSettings(smoothness=w))[0].kernel for w in MORE_WEIGHTS]
    assert any(kernel.shape == three.kernel.shape and np.array_equal(kernel, three.kernel) for kernel in singles)
    # each scored on its own: the choice `sharpest` makes of the single estimates
    assert np.array_equal(singles[pick(photo, singles, EstimateSettings().pick_margin)], three.kernel)


def test_each_estimate_is_scored_at_the_scale_its_kernel_was_last_fitted_at(monkeypatch):
    from deblur.shake import estimate as module

    _, blurry, _ = shaken(15)  # 256 px, estimated at 96 px and refined up to 128, the pick scored there too
    monkeypatch.setattr(helper, "_take", lambda: None)  # on threads here: a helper process would not see the patch
    seen = []
    score = module.deconvolved_sparsity
    monkeypatch.setattr(module, "deconvolved_sparsity", lambda photo, k: seen.append(photo.shape) or score(photo, k))
    estimate_kernel(blurry, replace(tried(2), working_side=96, refine_side=128))
    assert seen == [(128, 128)] * 2


@pytest.mark.parametrize("estimates", [0, MOST_ESTIMATES + 1, 1.5, True, "3"])
def test_a_number_of_estimates_out_of_range_is_refused_naming_the_setting(estimates):
    with pytest.raises(SettingError, match=f"estimates must be 1 to {MOST_ESTIMATES}") as caught:
        check_estimates(estimates)
    assert caught.value.settings == ("estimates",)


def test_tried_adds_the_other_weights_in_turn():
    assert [tried(n).candidates for n in range(1, MOST_ESTIMATES + 1)] == [
        MORE_WEIGHTS[: n - 1] for n in range(1, MOST_ESTIMATES + 1)
    ]
    assert tried(1) == EstimateSettings()


def test_predict_tries_the_estimates_asked_for_and_refuses_too_many(tmp_path):
    from helpers import save_model
    from PIL import Image
    from typer.testing import CliRunner

    from deblur.cli import app

    sharp, blurry, _ = shaken(15)
    Image.fromarray((blurry * 255).round().astype(np.uint8)).save(tmp_path / "shaken.png")
    args = ["predict", str(tmp_path / "shaken.png"), "--model", str(save_model(tmp_path / "run")), "--method", "kernel"]
    result = CliRunner().invoke(app, [*args, "--estimates", "3", "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert "the sharpest of 3 shake estimates" in result.output
    written = np.asarray(Image.open(tmp_path / "out" / "shaken.png"), np.float32) / 255
    assert psnr(sharp, written) > psnr(sharp, blurry) + 3
    result = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "default")])
    assert result.exit_code == 0 and f"the sharpest of {ESTIMATES} shake estimates" in result.output
    result = CliRunner().invoke(app, [*args, "--estimates", str(MOST_ESTIMATES + 1), "--out", str(tmp_path / "bad")])
    assert result.exit_code == 2 and "--estimates" in result.output
    assert not (tmp_path / "bad").exists()


def test_serve_opens_its_deblurrer_with_the_estimates_asked_for(monkeypatch):
    from typer.testing import CliRunner

    import deblur.inference
    from deblur.cli import app

    opened = []

    def refuse(*args, **options):
        opened.append(args[0] if args else options)  # serve hands it DeblurSettings
        raise SystemExit(3)  # stop before the server serves

    monkeypatch.setattr(deblur.inference, "open_deblurrer", refuse)
    result = CliRunner().invoke(app, ["serve", "--method", "kernel", "--estimates", "3", "--port", "0"])
    assert result.exit_code == 3 and opened[0].estimates == 3 and opened[0].method == "kernel"
    result = CliRunner().invoke(app, ["serve", "--estimates", "0"])
    assert result.exit_code == 2 and "--estimates" in result.output
    monkeypatch.undo()  # the real one: the network is refused estimates before the model is chosen
    monkeypatch.setattr(deblur.inference, "choose_model", refuse)
    result = CliRunner().invoke(app, ["serve", "--method", "network", "--estimates", "2", "--port", "0"])
    assert result.exit_code == 1 and "the network estimates no camera shake" in result.output
