"""Camera shake by a blur kernel: estimate it from the blurry photo, then invert it.

Hand-held shake blurs the whole photo with one path the camera took, a kernel. `estimate_kernel` finds it from
the blurry photo alone (blind), coarse to fine on a downscaled grayscale copy; `deconvolve` inverts it at full
size with a sparse-gradient prior; `restore` does both. Pure numpy and scipy: no model, no files. Images are HWC
RGB float32 in [0, 1], as everywhere in deblur.
"""

from typing import Literal, get_args

from deblur.errors import SettingError

# The default: the kernel-aware network, given the photo and the kernel path's deconvolution of it, decides pixel by
# pixel how much of the deconvolution to keep (`deblur.model`, deblur/weights/kernel_aware/MODEL_CARD.md). It
# replaced `auto` (a choice per photo between the network and the kernel path), which kept most real shaken photos
# from the kernel path. Clips go to the network under it (`Deblurrer.for_clips`).
Method = Literal["kernel-aware", "network", "kernel", "auto"]
DEFAULT_METHOD: Method = "kernel-aware"
METHOD_HELP = (
    "How to deblur: kernel-aware (the default: the camera shake's kernel estimated and inverted, and the kernel-aware "
    "network given both the photo and that deconvolution, keeping it where it is right; clips go to the network); "
    "network (the model alone); kernel (the deconvolution alone: it rings on light blur and moving subjects); auto "
    "(the kernel path for a photo blurred all over that it can estimate, else the network: the default before "
    "kernel-aware). A --model that is not kernel-aware runs as the network."
)
METHODS: tuple[str, ...] = get_args(Method)
# The ways an image can go (auto picks one of the first two per image), as predict names them.
WAYS = {
    "network": "by the network",
    "kernel": "by the camera-shake kernel path",
    "kernel-aware": "by the kernel-aware network",
}


def maybe_shaken_hint(names: list[str], shown: int = 3) -> str:
    """What predict says, once, of the photos `auto` left to the network as sharp somewhere but not by much
    (`deblur.shake.choose.MAYBE_SHAKEN`): most such real shaken photos deblur far better by the kernel path."""
    listed = ", ".join(names[:shown]) + (f" and {len(names) - shown} more" if len(names) > shown else "")
    photos = "1 photo" if len(names) == 1 else f"{len(names)} photos"
    return (
        f"{photos} ({listed}) went to the network because part of each looks a little sharp; if one was shaken all "
        "over (hand-held, nothing moving in it), --method kernel may deblur it far more"
    )


def check_method(method: str) -> None:
    if method not in METHODS:
        raise SettingError(f"method must be one of {', '.join(METHODS)}: {method!r}", settings=("method",))
