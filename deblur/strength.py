"""Restoration strength: how much of the model's change to keep, `blurry + strength * (restored - blurry)`.

0 gives the input back, 1 the model's output, above 1 pushes further in the same direction. Measured on real
GOPRO blur with the shipped model (mean PSNR gain over the blurry input, docs/predict.md): on the 11 dev pairs 50%
+0.38 dB, 75% +0.44, 100% +0.41, 150% +0.08; on real pairs measured elsewhere 50% +0.58, 100% +0.78, 150% +0.54.
NumPy only: the CLI and the server read the range from here, and the page applies the same formula in the browser.
"""

from __future__ import annotations

import numpy as np

from deblur.errors import SettingError, is_real_number

DEFAULT_STRENGTH = 1.0
MAX_STRENGTH = 1.5


def check_strength(strength: float) -> None:
    if not is_real_number(strength):  # "1" had been a TypeError in the check
        raise SettingError(
            f"strength must be a number from 0 to {MAX_STRENGTH:g}: {strength!r}", settings=("strength",)
        )
    if not 0.0 <= strength <= MAX_STRENGTH:
        raise SettingError(f"strength must be from 0 to {MAX_STRENGTH:g}: {strength:g}", settings=("strength",))


def blend(blurry: np.ndarray, restored: np.ndarray, strength: float) -> np.ndarray:
    """`blurry + strength * (restored - blurry)`, in [0, 1]; `restored` itself (not a copy) at strength 1."""
    check_strength(strength)
    if strength == 1.0:
        return restored
    restored = np.asarray(restored, dtype=np.float32)
    if not restored.flags.writeable:
        restored = restored.copy()
    restored -= blurry  # in place: a 24-megapixel float image is 288 MB
    restored *= strength
    restored += blurry
    return np.clip(restored, 0.0, 1.0, out=restored)
