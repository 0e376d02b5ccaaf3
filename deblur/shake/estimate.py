"""Blind estimation of a camera-shake kernel, coarse to fine, with an L0 gradient prior on the latent photo.

The method follows Xu, Zheng and Jia, "Unnatural L0 sparse representation for natural image deblurring" (CVPR
2013) and Pan et al.'s L0 half-quadratic splitting: alternate a latent photo with only strong edges kept, and the
kernel that best maps its gradients to the blurry photo's (least squares, support held, conjugate gradients).
The kernel's least squares are reweighted from the last estimate towards a sparse kernel (the reweighted L1 of
Candes, Wakin and Boyd 2008). Written here from the papers. It runs on a grayscale copy at most `working_side` px
long: fewer pixels, and a shorter kernel to find.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
from PIL import Image
from scipy import fft, ndimage

from deblur.errors import SettingError
from deblur.image_array import as_image, as_pixels
from deblur.shake import deconvolve
from deblur.shake.checks import check_settings
from deblur.shake.deconvolve import FIDELITY, soft_shrink
from deblur.shake.edges import edge_threshold, strong_edges
from deblur.shake.fourier import gradients, kernel_of, spectrum, wrap_edges
from deblur.shake.helper import side_by_side
from deblur.shake.pick import chosen, deconvolved_sparsity
from deblur.shake.split import growing, split
from deblur.shake.tries import MORE_WEIGHTS, check_estimates

LUMA = np.array([0.299, 0.587, 0.114], np.float32)
FAINT = 0.1  # of the typical kernel value: where the sparsity weight stops growing (a value at 0 gets 10x)
KEPT = 20  # a kernel value under 1/KEPT of its peak is dropped, in every round (`clean`) but a long kernel's refit
# The share of the final kernel's mass left out at each end of each axis when it is centred: a faint spur the
# estimate grew on one side moves a bounding box, and so the deblurred photo, by pixels (on Lai's 100 a third of
# the estimates sat more than 3 px off the true kernel's centre). Both rules put Lai's four true kernels where
# they are stored (within 1 px). Gain of the kernel path on Lai's 100, against the bounding box: 1% +0.26 dB (19
# photos moved, worst -0.31, best +8.1); the box of the values above 1/10 of the peak +0.24 (worst -1.56). Only
# the final kernel: centred so in every round of the estimate too, the kernel path measured +4.12 (against +4.39).
CENTRE_TRIM = 0.01
# px: the short side a photo keeps at the working scale. A 3000x8 strip shrunk to 384 px long would be under a pixel
# tall, with no room for a kernel; so long a strip is worked on at a larger scale (only photos over 12:1).
MIN_WORKING_SIDE = 32


@dataclass(frozen=True)
class EstimateSettings:
    # The long side the estimate runs at (a photo is never enlarged). Smaller leaves a long shake more room in the
    # support and averages noise away; the refinement restores the detail. Mean gain of the kernel path / `auto`
    # on Lai's 100 (`auto` from the per-image logs) and of the kernel path on development copies of the held-out
    # noisy photos, dB: 512 +4.23 / +2.91 / +0.66; 448 +4.08 / +3.29 / +1.16; 384 +4.14 / +3.50 / +1.15; 320 +4.17
    # / +3.45 / +0.99. Through predict at 384: +4.13 / +3.49 (512: +4.22 / +2.83).
    working_side: int = 384
    support: int = 45  # the largest kernel found, odd, in working px (45 at 384 is 120 px on a 1024 px photo)
    # ...raised to cover at least `reach` px of the photo itself, up to `widest` of the working long side: on a
    # photo under 640 px long, 45 working px are under 75 full px, and Lai et al.'s 75 px kernel failed on all six of
    # theirs (61 px there: +1.29 dB on that kernel, +4.12 on all 100, against +1.00 / +4.00). A photo 854 px long
    # or longer (GOPRO's frames, 12 MP ones) keeps 45, and so does one up to 287 px long (Levin et al.'s 255 px
    # photos): 61 px cost 255 px photos with 13-27 px kernels 0.5 / 0.3 dB (linear light / sRGB, 32 each).
    reach: int = 100
    widest: float = 0.16
    # An estimate that fills this share of its support or more is searched again from the start in the widest one
    # (a long shake has too little room at the coarse levels): the 16 of Lai's photos over 854 px whose estimates
    # reached half of 45 px gained +1.44 dB with 61 (all 100: +4.35, 75 px +2.06); the other 60 would have lost
    # 0.08. GOPRO's estimates fill at most 0.38 of theirs; 255 px photos have no wider support (`widest`).
    grow_at: float = 0.5
    # The L0 weight, how few edges the latent keeps, at the photo's own size; divided by the working scale, up to
    # twice: 0.002 was best on 255 px photos (estimated at full size), 0.004 on 1024 px ones estimated at half size.
    smoothness: float = 0.002
    # Latent and kernel updates at each scale: Lai's 100 / a 255 px sRGB set, dB: 5 +4.19 / +3.15, 7 +4.28 / +3.97.
    iterations: int = 7
    # Tikhonov weight of the kernel's least squares; 2 gave +0.84 against 8's +1.74 dB on 255 px photos, and
    # +2.25 against +2.06 on Lai's 1024 px ones (both without `sparsity`)
    kernel_weight: float = 8.0
    # How much harder a faint kernel value is pulled to 0 than a typical one (a reweighted L1 prior on the kernel,
    # from the last estimate): it removes the faint straight streaks long edges leave in the estimate. Mean gain on
    # Lai's 100 / the held-out 255 px / the held-out photos, dB: 0 (none) +2.14 / +1.72 / -0.20; 0.5 +2.57 / +3.45 /
    # +0.43; 1 +2.31 / +3.91 / +0.59; 2 +1.58 / +3.30 / +0.88.
    sparsity: float = 1.0
    beta_max: float = 1e5  # where the latent's half-quadratic splitting stops
    beta_rate: float = 4.0  # its growth per step (2: +3.87 against +3.83 dB on 20 Lai images, 1.3x slower)
    cg_steps: int = 20  # conjugate-gradient steps of each kernel update
    # The kernel is fitted to the latent's strongest edges only (`deblur.shake.edges`): at least this many kernel
    # widths of pixels in each of four directions, the threshold lowered by `edge_decay` each round. Lai's 100 /
    # a 255 px sRGB set, dB: none +2.31 / +2.29; 7 +2.53 / -; 10 +3.22 / -; 15 +3.46 / +2.82; 20 +2.88 / -.
    edges: float = 15.0
    edge_decay: float = 0.9
    # More rounds at the finest working scale, where the kernel's detail is decided: 0 +3.46 / +2.82, 5 +3.64 /
    # +3.10, 10 +3.90 / +3.15 (both with `edges`).
    final_iterations: int = 10
    # Then refined at larger scales in sqrt(2) steps up to this long side (never beyond the photo's), a few rounds
    # each: a kernel found at 512 px and scaled up is coarse (the true kernel, so scaled, loses 0.8 dB on 1024 px
    # photos). Lai's 100 (1024 px), estimated at 512: without +3.64, with +3.84 (5 final rounds).
    refine_side: int = 1024
    refine_iterations: int = 2
    # Last, rounds at the refinement's largest scale with the kernel fitted to the photo deconvolved as the kernel
    # path deconvolves it (`deconvolved_latent`), not to the L0 latent: that latent keeps only bold edges, enough
    # for the kernel's shape, not for its detail. `--method kernel` on Lai's 100 / every 5th of them / the 75 px
    # kernel / GOPRO's 11, dB: 0 +4.35 / +4.41 / +2.06 / -0.49, 4 +4.79 / +5.28 / +2.25 / -0.30 (1.3x the time at
    # 1280x720; a harness on every 5th: 1 +4.79, 2 +5.07). With two estimates on a Zen 4: 8 +5.10 on Lai's 100 (4:
    # +4.96), 75 px +2.70, GOPRO -0.25, at 1.2x the kernel path's time at 1280x720; not taken for the time (the card).
    # A round's deconvolution need not be the final one: walked in three splitting weights (`refit_betas`: 1, 8 and
    # 64) instead of the kernel path's six it costs about half, so 8 such rounds take about 4 whole ones' time (one
    # estimate, every 5th of Lai's: 4 whole +5.28, 8 whole +5.44 in 1.24x the estimate's time, 12 of three +5.51 in
    # 1.14x; 12 in steps of 16 +5.47, 16 in steps of 8 +5.51, 8 in steps of 8 +5.38).
    refit_rounds: int = 8
    refit_betas: tuple[float, float, float] = (1.0, 256.0, 8.0)  # the refit deconvolution's start, stop and growth
    # On a kernel at least `refit_long` working px long as the refit starts, the refit's rounds drop only values under
    # 1/`refit_kept` of its peak, not 1/`KEPT`: dropped in every round, the faint stretches of a long path (where the
    # camera moved fast) were cut away a little more each time, and the mass gathered at its bright ends. On short
    # kernels the fainter values kept were noise (12 light rounds at 1/30 on every kernel: GOPRO's 11 -0.30 -> -0.37).
    # With both, two estimates, on a Zen 5: Lai's 100 +5.00 -> +5.22 (the 55 px kernel +5.00 -> +5.71), GOPRO's 11
    # -0.30 -> -0.27; on 60 synthetic shakes of 15 to 80 px held out from Lai's +0.92 -> +0.91 (the card).
    refit_kept: float = 30.0
    refit_long: int = 36
    # The refit's kernel updates are fitted to more of the deconvolved photo's strongest edges than the L0 rounds'
    # (kernel widths a direction, as `edges`): the L0 latent keeps bold edges only, a deconvolved photo has the
    # detail a kernel's detail is read from. The first estimate alone, Lai's 100 / the 75 px kernel / 60 held-out
    # noisy shakes, dB: 15 (as `edges`) +4.95 / +2.26 / +0.69, 30 +5.25 / +2.37 / +0.65; 60 lost 0.14 to 30 on 38
    # of Lai's. GOPRO's 11, both estimates: `--method kernel` -0.25 -> -0.23, the default +1.00 -> +0.93 (the card).
    refit_edges: float = 30.0
    # Other L0 weights (`smoothness`) estimated as well, side by side, the one whose deconvolution is sharpest kept
    # where it beats the first by `pick_margin`, a kernel in pieces held against its estimate (`pick.sharpest`); none
    # by default, for the time (`deblur.shake.tries`).
    candidates: tuple[float, ...] = ()
    pick_margin: float = 0.03


def tried(estimates: int) -> EstimateSettings:
    """The default settings with `estimates` L0 weights tried (1: the default's one)."""
    check_estimates(estimates)
    return EstimateSettings(candidates=MORE_WEIGHTS[: estimates - 1])


# (observed, kernel, smoothness, settings) -> the latent photo the kernel is fitted to
Latent = Callable[[np.ndarray, np.ndarray, float, EstimateSettings], np.ndarray]


@dataclass(frozen=True)
class Estimate:
    kernel: np.ndarray  # at the photo's own scale, sums to 1, odd square, its extent centred
    working: np.ndarray  # the same at the working scale
    scale: float  # working size over the photo's size
    support: int  # the largest extent it could have had, at the working scale

    @property
    def extent(self) -> int:
        """The estimate's length at the working scale, in px: the longer side of its support's bounding box."""
        return _extent(self.working)


def resize(image: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """Bilinear resize of a 2-D float array; PIL's filter widens when shrinking, so coarse scales do not alias."""
    small = Image.fromarray(np.ascontiguousarray(image, np.float32), mode="F")
    return np.asarray(small.resize((shape[1], shape[0]), Image.BILINEAR), np.float32)


def estimate_kernel(blurry: np.ndarray, settings: EstimateSettings = EstimateSettings()) -> Estimate:
    """The camera-shake kernel of an HWC RGB (or HW gray) blurry photo: one estimate per L0 weight (`smoothness`,
    then `candidates`, side by side, the second in a helper process: `deblur.shake.helper`), the one whose
    deconvolution is sharpest kept (`pick.sharpest`; a kernel in pieces, its faint values under 1/`KEPT` of the peak
    left out, counts against it). Settings it cannot use are refused first, each named (`deblur.shake.checks`)."""
    if not isinstance(settings, EstimateSettings):  # a number had ended on AttributeError: ... 'smoothness'
        raise SettingError(
            f"the settings are {type(settings).__name__}: give deblur.shake.estimate.EstimateSettings(...), or leave "
            "them out for the default ones",
            settings=("settings",),
        )
    check_settings(settings)
    weights = (settings.smoothness, *settings.candidates)
    # a uint8 or 0-255 photo had been estimated at thresholds made for [0, 1]: a wrong kernel, without a word
    gray = np.ndim(blurry) == 2
    photo = as_pixels(blurry, "the blurry photo") if gray else as_image(blurry, "the blurry photo") @ LUMA
    if len(weights) == 1:
        return _estimate(photo, settings)

    # side by side, the second in a helper process (`deblur.shake.helper`: on threads they had waited on each other)
    jobs = [(photo, replace(settings, smoothness=weight)) for weight in weights]
    estimates, scores = zip(*side_by_side(_scored, jobs, deconvolve.THREADS), strict=True)
    lengths = [_extent(e.kernel) for e in estimates]
    return estimates[chosen(list(scores), lengths, settings.pick_margin, [_broken(e.kernel) for e in estimates])]


def _scored(photo: np.ndarray, settings: EstimateSettings) -> tuple[Estimate, float]:
    """The estimate with one set of settings, and how sharp its deconvolution is (`pick`)."""
    estimate, fitted, seen = _fitted(photo, settings)
    # at the scale the kernel was last fitted at (at most `refine_side` long), not the photo's: at 12 MP the whole
    # photo's deconvolution had been most of the second estimate's cost
    return estimate, deconvolved_sparsity(seen, fitted)


def _estimate(photo: np.ndarray, settings: EstimateSettings) -> Estimate:
    """The kernel of a gray photo with one set of settings."""
    return _fitted(photo, settings)[0]


def _fitted(photo: np.ndarray, settings: EstimateSettings) -> tuple[Estimate, np.ndarray, np.ndarray]:
    """`_estimate`, with its kernel at the scale it was last fitted at (centred as the final one is) and the gray
    photo at that scale."""
    scale = working_scale(photo.shape, settings.working_side)
    gray = downscaled(photo, scale)
    room = _odd(min(gray.shape) // 3)
    support = min(search_support(photo.shape, scale, settings), room)
    smoothness = min(settings.smoothness / scale, 2 * settings.smoothness)
    kernel, last = _coarse_to_fine(gray, support, smoothness, settings)
    wider = min(widest_support(photo.shape, scale, settings), room)
    if wider > support and _extent(kernel) >= settings.grow_at * support:
        support = wider
        kernel, last = _coarse_to_fine(gray, support, smoothness, settings)
    working = kernel
    refined, seen = scale, gray
    observed = wrap_edges(gray, support)
    for step in refinement_scales(scale, min(1.0, settings.refine_side / max(photo.shape))):
        size = _odd(round(support * step / scale))
        refined, seen = step, downscaled(photo, step)
        observed = wrap_edges(seen, size)
        kernel, _ = _iterate(observed, clean(resize(kernel, (size, size))), last, settings.refine_iterations, settings)
    kept = settings.refit_kept if _extent(kernel) >= settings.refit_long else KEPT
    kernel, _ = _iterate(
        observed, kernel, last, settings.refit_rounds, settings, deconvolved_latent, kept, settings.refit_edges
    )
    return Estimate(_at_scale(kernel, 1 / refined), working, scale, support), _at_scale(kernel, 1), seen


def _coarse_to_fine(
    gray: np.ndarray, support: int, smoothness: float, settings: EstimateSettings
) -> tuple[np.ndarray, float]:
    """The kernel of a gray photo at the working scale, found from 3 px up to `support` px; the smoothness reached."""
    kernel = np.zeros((3, 3), np.float32)
    kernel[1, 1:] = 0.5  # not a point: a point is a fixed point of the alternation (no blur explains everything)
    for size in _pyramid(support):
        level = size / support
        shape = (max(round(gray.shape[0] * level), 2 * size), max(round(gray.shape[1] * level), 2 * size))
        observed = wrap_edges(resize(gray, shape), size)
        start = clean(resize(kernel, (size, size)))
        kernel, last = _iterate(observed, start, smoothness, settings.iterations, settings)
    return _iterate(observed, kernel, last, settings.final_iterations, settings)[0], last


def search_support(shape: tuple[int, int], scale: float, settings: EstimateSettings) -> int:
    """The largest kernel the estimate first looks for in a photo of `shape` worked on at `scale`, odd, in working
    px: `support`, raised to cover `reach` px of the photo, up to `widest_support`."""
    return max(
        settings.support, min(widest_support(shape, scale, settings), _odd(int(np.ceil(settings.reach * scale))))
    )


def widest_support(shape: tuple[int, int], scale: float, settings: EstimateSettings) -> int:
    """`widest` of the working long side, odd, in working px: where an estimate that fills its support looks again."""
    return _odd(int(settings.widest * max(shape) * scale))


def working_scale(shape: tuple[int, int], working_side: int) -> float:
    """The scale the estimate works at: the long side at most `working_side`, the short one at least
    `MIN_WORKING_SIDE` (or the photo's own), never enlarged."""
    return min(1.0, max(working_side / max(shape), MIN_WORKING_SIDE / min(shape)))


def _iterate(
    observed: np.ndarray,
    kernel: np.ndarray,
    smoothness: float,
    rounds: int,
    settings: EstimateSettings,
    latent_of: Latent | None = None,
    kept: float = KEPT,
    per_direction: float | None = None,
) -> tuple[np.ndarray, float]:
    """`rounds` of a latent (`latent_of`, the L0 one unless given) and a kernel update, which drops values under
    1/`kept` of its peak and is fitted to the strongest `per_direction` (`settings.edges` unless given) kernel
    widths of the latent's gradients a direction; the kernel, and the smoothness reached."""
    latent_of = latent_of or l0_latent
    per_direction = settings.edges if per_direction is None else per_direction
    threshold = None
    observed_spectra = tuple(spectrum(g) for g in gradients(observed))  # the same for every round
    for _ in range(rounds):
        latent = latent_of(observed, kernel, smoothness, settings)
        gx, gy = gradients(latent)
        if threshold is None:  # each round starts from its own edges; per_direction 0 keeps every gradient
            threshold = edge_threshold(gx, gy, kernel.shape[0], per_direction) if per_direction else 0.0
        edges = strong_edges(gx, gy, threshold)
        kernel = clean(
            centre(clean(kernel_step(edges, observed_spectra, observed.shape, kernel, settings), kept)), kept
        )
        threshold *= settings.edge_decay
        smoothness = max(smoothness / 1.1, 1e-4)
    return kernel, smoothness


def refinement_scales(scale: float, top: float) -> list[float]:
    """The scales above `scale` the kernel is refined at: sqrt(2) steps, the last one `top`."""
    steps = []
    while scale < top * (1 - 1e-6):
        scale = min(top, scale * np.sqrt(2))
        steps.append(scale)
    return steps


def downscaled(image: np.ndarray, scale: float) -> np.ndarray:
    """A 2-D image `scale` (at most 1) times its size."""
    if scale >= 1:
        return image
    return resize(image, (max(1, round(image.shape[0] * scale)), max(1, round(image.shape[1] * scale))))


def l0_latent(observed: np.ndarray, kernel: np.ndarray, smoothness: float, settings: EstimateSettings) -> np.ndarray:
    """argmin_x |k * x - y|^2 + smoothness |grad x|_0, by half-quadratic splitting."""

    def hard(gx: np.ndarray, gy: np.ndarray, beta: float) -> tuple[np.ndarray, np.ndarray]:
        # the L0 prior's step: a gradient is kept whole or dropped (by a multiply: setting by a mask took 2.6x longer)
        power = gx * gx
        power += gy * gy
        kept = power >= smoothness / beta
        gx *= kept
        gy *= kept
        return gx, gy

    return split(observed, kernel, hard, growing(2 * smoothness, settings.beta_max, settings.beta_rate))


def deconvolved_latent(
    observed: np.ndarray, kernel: np.ndarray, smoothness: float, settings: EstimateSettings
) -> np.ndarray:
    """The gray photo deconvolved as the kernel path deconvolves (`deconvolve`'s L1 prior and fidelity), in the
    fewer splitting weights of `settings.refit_betas`; the smoothness is the L0 latent's, unused here."""
    return split(observed, kernel, soft_shrink, growing(*settings.refit_betas), FIDELITY)


def kernel_step(
    edges: tuple[np.ndarray, np.ndarray],
    observed_spectra: tuple[np.ndarray, np.ndarray],
    shape: tuple[int, int],
    previous: np.ndarray,
    settings: EstimateSettings,
) -> np.ndarray:
    """argmin_k |e * k - grad(y)|^2 + sum w k^2 over a kernel the size of `previous`, by conjugate gradients,
    where `e` are the latent's (selected) gradients and `observed_spectra` the spectra of the blurry photo's
    gradients (of `shape`); w is `kernel_weight`, raised where `previous` is faint or 0 (`sparsity`: a reweighted
    L1 prior)."""
    size = previous.shape[0]
    typical = previous[previous > 0].mean()
    weight = settings.kernel_weight * (1 + settings.sparsity * typical / (previous + FAINT * typical))
    lx, ly = (spectrum(g) for g in edges)
    bx, by = observed_spectra
    rhs = kernel_of(np.conj(lx) * bx + np.conj(ly) * by, shape, size)
    # The normal operator is a correlation with the gradients' autocorrelation, of which only the lags within the
    # kernel's reach matter: one small convolution a step instead of two FFTs of the photo (10x faster).
    lags = kernel_of(np.abs(lx) ** 2 + np.abs(ly) ** 2, shape, 2 * size - 1)
    # `signal.fftconvolve(k, lags, mode="same")` with the lags' transform taken once, not at every step
    full = fft.next_fast_len(3 * size - 2, real=True)
    lags_spectrum = fft.rfft2(lags, (full, full))
    middle = slice(size - 1, 2 * size - 1)

    def normal(k: np.ndarray) -> np.ndarray:
        return fft.irfft2(fft.rfft2(k, (full, full)) * lags_spectrum, (full, full))[middle, middle] + weight * k

    kernel = np.full((size, size), 1.0 / size**2, np.float32)
    residual = rhs - normal(kernel)
    direction = residual.copy()
    rr = float(np.sum(residual * residual))
    for _ in range(settings.cg_steps):
        if rr < 1e-10:
            break
        pushed = normal(direction)
        step = rr / float(np.sum(direction * pushed))
        kernel = kernel + step * direction
        residual = residual - step * pushed
        rr, last_rr = float(np.sum(residual * residual)), rr
        direction = residual + (rr / last_rr) * direction
    return kernel


def clean(kernel: np.ndarray, kept: float = KEPT) -> np.ndarray:
    """Non-negative, faint values and small islands dropped, summing to 1 (a point when nothing is left)."""
    kernel = np.maximum(kernel, 0)
    if kernel.sum() <= 0:
        point = np.zeros_like(kernel)
        point[kernel.shape[0] // 2, kernel.shape[1] // 2] = 1
        return point
    kernel = kernel / kernel.sum()
    kernel[kernel < kernel.max() / kept] = 0
    labels, pieces = _pieces(kernel > 0)
    if pieces > 1:
        mass = ndimage.sum(kernel, labels, index=np.arange(1, pieces + 1))
        keep = np.concatenate([[False], mass >= 0.1 * mass.max()])
        kernel = np.where(keep[labels], kernel, 0)
    return (kernel / kernel.sum()).astype(np.float32)


def centre(kernel: np.ndarray, trim: float = 0.0) -> np.ndarray:
    """Move the kernel's extent (its support's bounding box) to the middle, by whole pixels; with `trim`, the box
    that leaves out that share of the kernel's mass at each end of each axis.

    Recorded shake kernels are stored so (Lai et al.'s four: their centres of mass are 2 to 8 px off), and a photo
    deconvolved with a kernel centred so lines up with the sharp one; centring by the centre of mass shifted
    results by up to 8 px. A subpixel shift would blur the kernel.
    """
    ys, xs = _support(kernel)
    if len(ys) == 0:
        return kernel
    if trim:
        (top, bottom), (left, right) = (_trimmed_span(kernel.sum(axis=axis), trim) for axis in (1, 0))
    else:
        top, bottom, left, right = ys.min(), ys.max(), xs.min(), xs.max()
    middle = kernel.shape[0] // 2
    shift = (round(middle - (top + bottom) / 2), round(middle - (left + right) / 2))
    return ndimage.shift(kernel, shift, order=0, mode="constant")


def _trimmed_span(mass: np.ndarray, trim: float) -> tuple[int, int]:
    """The first and last index of a 1-D mass profile with `trim` of the total left out beyond each."""
    cumulative = np.cumsum(mass) / mass.sum()
    return int(np.searchsorted(cumulative, trim)), int(np.searchsorted(cumulative, 1 - trim))


def _extent(kernel: np.ndarray) -> int:
    ys, xs = _support(kernel)
    return int(max(np.ptp(ys), np.ptp(xs)) + 1)


def _support(kernel: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows and columns of the kernel's support."""
    return np.nonzero(_supported(kernel))


def _supported(kernel: np.ndarray) -> np.ndarray:
    """The kernel's support as a mask: its values above the faint part `clean` drops (1/20 of the peak)."""
    return kernel > kernel.max() / KEPT


def _broken(kernel: np.ndarray) -> bool:
    """Whether the kernel's support makes more than one piece (`pick.BROKEN`)."""
    return _pieces(_supported(kernel))[1] > 1


def _pieces(mask: np.ndarray) -> tuple[np.ndarray, int]:
    """The mask's 8-connected pieces: each pixel's label (0 outside), and how many there are."""
    return ndimage.label(mask, structure=np.ones((3, 3)))


def _at_scale(kernel: np.ndarray, factor: float) -> np.ndarray:
    """The final kernel: `factor` times the size, centred by its trimmed box (`CENTRE_TRIM`), summing to 1. A resized
    kernel is centred by its whole box first, as the trim was measured (the two whole-pixel shifts round
    differently)."""
    if factor != 1:
        size = _odd(round(kernel.shape[0] * factor))
        larger = np.maximum(resize(kernel, (size, size)), 0)
        kernel = centre(larger / larger.sum())
    centred = centre(kernel, CENTRE_TRIM)
    # The trimmed box's shift can carry a faint tail past the edge: the kernel then summed to as little as 0.99, which
    # the deconvolution refuses (one of Lai's 100 real shaken photos and about one crop in ten of 64 to 256 px had
    # failed on it by the default, naming "the kernel")
    return (centred / centred.sum()).astype(np.float32)


def _pyramid(support: int) -> list[int]:
    """Kernel sizes from 3 up to `support`, odd, in steps of sqrt(2)."""
    sizes = [support]
    while sizes[-1] > 5:
        sizes.append(max(3, _odd(round(sizes[-1] / np.sqrt(2)))))
    return sizes[::-1]


def _odd(n: int) -> int:
    return n + 1 - n % 2
