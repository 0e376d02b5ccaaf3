"""Camera shake by a blur kernel: estimate it from the blurry photo, then invert it.

Hand-held shake blurs the whole photo with one path the camera took, a kernel. `estimate_kernel` finds it from
the blurry photo alone (blind), coarse to fine on a downscaled grayscale copy; `deconvolve` inverts it at full
size with a sparse-gradient prior; `restore` does both. Pure numpy and scipy: no model, no files. Images are HWC
RGB float32 in [0, 1], as everywhere in deblur.
"""

from typing import Literal, get_args

from deblur.errors import SettingError

# The choice is the default: it sends photos blurred all over by a shake it can estimate to the kernel path and the
# rest to the network, so it gains where the network barely changes a shaken photo (Lai's 100: +3.74 dB against
# +0.06) and keeps GOPRO's pairs and sharp photos on the network (deblur/weights/MODEL_CARD.md). Clips go to the
# network under it (`Deblurrer.for_clips`).
Method = Literal["network", "kernel", "auto"]
DEFAULT_METHOD: Method = "auto"
METHOD_HELP = (
    "How to deblur: auto (the default: the camera-shake kernel path where no region of the photo is sharp and the "
    "estimate looks like a shake path, else the network; clips go to the network); network (always the model); "
    "kernel (always estimate the camera shake, one blur for the whole photo, and invert it: on sharp photos or "
    "moving subjects it makes them worse). Tiles and --ensemble are the network's."
)
METHODS: tuple[str, ...] = get_args(Method)
# The two ways an image can go (auto picks one per image), as predict names them.
WAYS = {"network": "by the network", "kernel": "by the camera-shake kernel path"}


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
