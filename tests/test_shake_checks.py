"""The camera-shake estimate's settings, checked before it starts (`deblur.shake.checks`)."""

from __future__ import annotations

from dataclasses import fields

import numpy as np
import pytest

from deblur.errors import SettingError
from deblur.shake.checks import AS_WHOLES, RULES
from deblur.shake.estimate import EstimateSettings, estimate_kernel


def _photo() -> np.ndarray:
    return np.random.default_rng(0).random((40, 48, 3), np.float32)


def test_every_field_of_the_settings_is_checked():
    # a field added to EstimateSettings without a rule would take any value again
    assert {field.name for field in fields(EstimateSettings)} == set(RULES) | set(AS_WHOLES)
    assert not set(RULES) & set(AS_WHOLES)


@pytest.mark.parametrize(
    "field, value, said",
    [
        # an even support had returned an even kernel, where every caller takes an odd one centred
        ("support", 44, "support must be an odd whole number, at least 3; got 44"),
        ("support", 1, "got 1"),
        # had ended on TypeError "'float' object cannot be interpreted as an integer" or a str's TypeError
        ("iterations", 0.5, "iterations must be a whole number, at least 1; got 0.5"),
        ("cg_steps", "20", "cg_steps must be a whole number, at least 1; got '20'"),
        ("refit_rounds", -1, "refit_rounds must be a whole number, at least 0; got -1"),
        # had ended on "cannot convert float NaN to integer" / "cannot convert float infinity to integer"
        ("reach", float("nan"), "reach must be a whole number, at least 0; got nan"),
        ("widest", float("inf"), "widest must be a number above 0 and at most 1; got inf"),
        ("edges", float("nan"), "edges must be a finite number, at least 0; got nan"),
        # had ended on NumPy's "zero-size array to reduction operation maximum which has no identity"
        ("kernel_weight", float("nan"), "kernel_weight must be a finite number, at least 0; got nan"),
        ("sparsity", float("inf"), "sparsity must be a finite number, at least 0; got inf"),
        # had returned a kernel without a word
        ("kernel_weight", -1, "got -1"),
        ("working_side", 0, "working_side must be a whole number, at least 1; got 0"),
        ("edge_decay", 0, "edge_decay must be a number above 0 and at most 1; got 0"),
        ("grow_at", None, "grow_at must be a number, at least 0 (inf: never again); got None"),
        ("refine_side", 0.5, "refine_side must be a whole number, at least 1; got 0.5"),
        ("refit_kept", 0.5, "refit_kept must be a finite number, at least 1; got 0.5"),
        ("pick_margin", float("nan"), "pick_margin must be a finite number; got nan"),
        # had ended on "Value after * must be an iterable, not int"
        ("candidates", 5, "candidates must be a tuple of L0 weights (or () for none); got 5"),
    ],
)
def test_a_field_the_estimate_cannot_use_is_refused_by_name(field, value, said):
    with pytest.raises(SettingError) as refused:
        estimate_kernel(_photo(), EstimateSettings(**{field: value}))
    assert said in str(refused.value)
    assert str(refused.value).startswith("the estimate's settings: ") or field == "candidates"


def test_every_wrong_field_is_named_at_once():
    with pytest.raises(SettingError) as refused:
        estimate_kernel(_photo(), EstimateSettings(support=44, iterations=0, edge_decay=2))
    said = str(refused.value)
    assert "support must be" in said and "iterations must be" in said and "edge_decay must be" in said


def test_values_with_a_meaning_and_numpys_numbers_are_taken():
    # 0 turns a step off where the field's comment says so; inf never searches a wider support again
    settings = EstimateSettings(
        edges=0, sparsity=0, reach=0, final_iterations=0, refine_iterations=0, refit_rounds=0, grow_at=np.inf
    )
    assert estimate_kernel(_photo(), settings).kernel.shape[0] % 2 == 1
    numpys = EstimateSettings(support=np.int64(15), iterations=np.int32(2), kernel_weight=np.float32(8), widest=1)
    assert estimate_kernel(_photo(), numpys).kernel.shape[0] % 2 == 1
