"""The camera-shake estimate's settings, checked before it starts.

Values it cannot use had hung it (a splitting weight that never grows), ended deep in NumPy or Python on a message
that named no setting ("cannot convert float NaN to integer", "'float' object cannot be interpreted as an
integer"), or returned a kernel without a word: an even `support` an even kernel, where every caller takes an odd
one centred; a negative `kernel_weight` or `edge_decay` a kernel from a least squares or an edge mask no one meant.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

from deblur.errors import SettingError, is_positive_number, is_real_number, is_whole_number

# an EstimateSettings: `deblur.shake.estimate` imports this module, so its type is not imported here (a cycle)
Settings = Any


class Rule(NamedTuple):
    holds: Callable[[object], bool]
    wording: str  # what a value must be, after "must be"


def _whole_from(least: int) -> Rule:
    return Rule(lambda value: is_whole_number(value) and value >= least, f"a whole number, at least {least}")


def _finite_from(least: float) -> Rule:
    return Rule(lambda value: is_real_number(value) and least <= value < math.inf, f"a finite number, at least {least}")


_SHARE = Rule(lambda value: is_real_number(value) and 0 < value <= 1, "a number above 0 and at most 1")

# Each field of EstimateSettings but the L0 weights and the splitting weights, which `check_settings` checks as
# wholes. 0 is allowed where the field's comment gives it a meaning (no `edges` selection, no `sparsity`, no
# refinement or refit rounds, no `reach`); a test keeps this table in step with the fields.
RULES: dict[str, Rule] = {
    "working_side": _whole_from(1),
    "support": Rule(
        lambda value: is_whole_number(value) and value >= 3 and value % 2 == 1, "an odd whole number, at least 3"
    ),
    "reach": _whole_from(0),
    "widest": _SHARE,
    "grow_at": Rule(lambda value: is_real_number(value) and value >= 0, "a number, at least 0 (inf: never again)"),
    "iterations": _whole_from(1),
    "kernel_weight": _finite_from(0),
    "sparsity": _finite_from(0),
    "cg_steps": _whole_from(1),
    "edges": _finite_from(0),
    "edge_decay": _SHARE,
    "final_iterations": _whole_from(0),
    "refine_side": _whole_from(1),
    "refine_iterations": _whole_from(0),
    "refit_rounds": _whole_from(0),
    "refit_kept": _finite_from(1),  # values under 1/refit_kept of the peak are dropped: under 1, the peak too
    "refit_long": _whole_from(0),
    "refit_edges": _finite_from(0),
    "pick_margin": Rule(lambda value: is_real_number(value) and math.isfinite(value), "a finite number"),
}
AS_WHOLES = ("smoothness", "candidates", "beta_max", "beta_rate", "refit_betas")


def check_settings(settings: Settings) -> None:
    """Refuse, as one SettingError naming each, the fields of `settings` the estimate cannot use."""
    wrong = [
        f"{name} must be {rule.wording}; got {getattr(settings, name)!r}"
        for name, rule in RULES.items()
        if not rule.holds(getattr(settings, name))
    ]
    if wrong:
        raise SettingError("the estimate's settings: " + "; ".join(wrong), settings=("settings",))
    _check_weights(settings)
    _check_splitting(settings)


def _check_weights(settings: Settings) -> None:
    candidates = settings.candidates
    if not isinstance(candidates, tuple | list):  # an int had ended on "Value after * must be an iterable"
        raise SettingError(
            f"candidates must be a tuple of L0 weights (or () for none); got {candidates!r}", settings=("settings",)
        )
    weights = (settings.smoothness, *candidates)
    if not all(is_positive_number(weight) for weight in weights):
        # the latent's splitting grows its weight from the L0 weight up to beta_max: from 0 or below, never (a hang)
        raise SettingError(
            f"the L0 weights (smoothness, candidates) must be positive numbers; got {weights!r}", settings=("settings",)
        )


def _check_splitting(settings: Settings) -> None:
    """Refuse splitting weights that never reach their end: a growth of 1 (or a start of 0) had never ended, a growth
    under 1 ended on ZeroDivisionError, and an infinite end on NumPy's "zero-size array to reduction operation"."""

    def grows(start: object, stop: object, rate: object) -> bool:
        return all(is_positive_number(value) for value in (start, stop, rate)) and rate > 1

    if not grows(1.0, settings.beta_max, settings.beta_rate):
        raise SettingError(
            "beta_max must be a finite positive number and beta_rate a number above 1 (the latent's splitting weight "
            f"grows by it up to beta_max); got {settings.beta_max!r} and {settings.beta_rate!r}",
            settings=("settings",),
        )
    refit = settings.refit_betas
    if not (isinstance(refit, tuple | list) and len(refit) == 3 and grows(*refit)):
        raise SettingError(
            f"refit_betas must be (start, stop, growth), finite positive numbers, the growth above 1; got {refit!r}",
            settings=("settings",),
        )
