"""How many camera-shake estimates to try per photo (`--estimates`): the choice, kept apart from the estimate's module
so that checking it imports no scipy."""

from __future__ import annotations

from deblur.errors import SettingError, is_whole_number

# The weights `--estimates` adds, in turn. The estimate sometimes collapses to a blob at the working scale (8 of the 13
# failures on Lai et al.'s 75 px kernel), and which L0 weight escapes it differs from photo to photo. `--method kernel`,
# Lai's 100 / every 5th / the 75 px kernel / GOPRO's 11, dB: the first alone +4.79 / +5.28 / +2.25 / -0.30; 0.001 alone
# +4.52 / +5.18 / +2.18 / -0.32, 0.004 alone +4.42 / +5.04 / +2.16 / -0.50; the three, picked with a margin of 1% +5.15
# / +5.60 / +2.85 / -0.36, 2% +5.12 / +5.55 / +2.81 / -0.30, 3% +5.08 / +5.55 / +2.82 / -0.30 (15 of Lai's switched, 14
# better, 1 worse; none of GOPRO's); the first two at 3% +5.00 / +5.55 / +2.63 / -0.30. Three take 2.49x `--method
# kernel`'s time at 1280x720 on 2 cores, the default 1.55x (deblur/weights/MODEL_CARD.md).
MORE_WEIGHTS = (0.001, 0.004)
MOST_ESTIMATES = 1 + len(MORE_WEIGHTS)
# Tried by default: two. On two cores they run side by side (the second in a helper process, `deblur.shake.helper`), so
# the second costs a fraction of its time (`--method kernel` 1.28x at 1280x720 and 1.08x at 12 MP on a 2-core Zen 3;
# the default about 1.16x), and it escapes some of the first's collapses: `--method kernel` +4.79 -> +5.00 on Lai's
# 100 (the 75 px kernel +2.25 -> +2.63, every 5th +5.28 -> +5.55), the default +3.96 -> +4.10 (75 px +2.07 -> +2.39);
# on GOPRO's 11 none switches, sharp photos stay or come nearer themselves (deblur/weights/MODEL_CARD.md). On one core
# they run one after the other.
ESTIMATES = 2


def check_estimates(estimates: int) -> None:
    """Refuse a number of estimates that is not 1 to `MOST_ESTIMATES` (SettingError naming the setting)."""
    # NumPy's whole numbers too: np.int64(2) had been refused as out of range ("must be 1 to 3; got np.int64(2)")
    if not is_whole_number(estimates) or not 1 <= estimates <= MOST_ESTIMATES:
        raise SettingError(f"estimates must be 1 to {MOST_ESTIMATES}; got {estimates!r}", settings=("estimates",))
