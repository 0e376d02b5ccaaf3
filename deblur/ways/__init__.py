"""The ways of deblurring a photo, each a room of its own behind one small interface (`Way`), and the registry
that `--method` chooses from. Adding a way is one new module here and its class in `WAYS`'s line.

Each way takes an HWC RGB float32 photo in [0, 1] and gives one back. What is common to them all (the model's
runtime, its tiles and ensemble copies, the strength of the result) stays in `deblur.inference.Deblurrer`, which
asks its way and hands it the model to run, if the way runs one.
"""

from __future__ import annotations

from deblur.errors import SettingError, check_choice
from deblur.ways.base import ModelRun, Way
from deblur.ways.kernel import KernelPath
from deblur.ways.kernel_aware import KernelAware
from deblur.ways.network import Network

__all__ = [
    "DEFAULT_METHOD",
    "METHODS",
    "METHOD_HELP",
    "ModelRun",
    "WAYS",
    "Way",
    "check_ensemble_for",
    "check_method",
    "way_of",
]

WAYS: dict[str, Way] = {way.name: way for way in (KernelAware(), Network(), KernelPath())}
METHODS: tuple[str, ...] = tuple(WAYS)
# The default: the kernel-aware network, given the photo and the kernel path's deconvolution of it, decides pixel by
# pixel how much of the deconvolution to keep (deblur/weights/kernel_aware/MODEL_CARD.md).
DEFAULT_METHOD = "kernel-aware"
METHOD_HELP = (
    "How to deblur: kernel-aware (the default: the camera shake's kernel estimated and inverted, and the kernel-aware "
    "network given both the photo and that deconvolution, keeping it where it is right; clips go to the network); "
    "network (the model alone); kernel (the deconvolution alone: it rings on light blur and moving subjects). A "
    "--model that is not kernel-aware runs as the network."
)
# Ways there were, and why they are gone: asked for, each is refused naming the default.
RETIRED = {
    "auto": "a choice per photo between the network and the kernel path, retired: no real photo set showed it winning "
    "over the default (Lai et al.'s synthetic 100 +3.35 dB against +3.54, GOPRO's 11 +0.59 against +0.60; on Lai's "
    "100 real photos it left one worse than its input, the default none)"
}


def check_method(method: str) -> None:
    """Refuse a method that is not a way (SettingError naming the choices, and the default for a retired one)."""
    if isinstance(method, str) and method in RETIRED:
        raise SettingError(
            f"method {method} is {RETIRED[method]}; use the default, {DEFAULT_METHOD} (or network or kernel)",
            settings=("method",),
        )
    check_choice("method", method, WAYS)


def way_of(method: str) -> Way:
    check_method(method)
    return WAYS[method]


def check_ensemble_for(way: Way, ensemble: int) -> None:
    """Refuse an ensemble for a way that runs no network: it went unused without a word, a progress bar counted its
    copies as model calls, and the server's time per megapixel was divided by them."""
    if ensemble != 1 and way.model_channels is None:
        raise SettingError(
            f"the ensemble averages the network's outputs over mirrored copies, and the {way.name} way runs no "
            "network: leave the ensemble out, or choose another method",
            settings=("ensemble", "method"),
        )
