import pytest

from deblur.training.precision import choose_precision


@pytest.mark.parametrize(
    "hardware, policy, why",
    [
        ({"gpus": [(8, 6)], "cpu_flags": [], "tpu": False}, "mixed_float16", "8.6 >= 7.0"),
        ({"gpus": [(7, 0), (8, 0)], "cpu_flags": [], "tpu": False}, "mixed_float16", "7.0"),
        ({"gpus": [(6, 1)], "cpu_flags": ["avx512_bf16"], "tpu": False}, "float32", "mixed precision unavailable"),
        ({"gpus": [], "cpu_flags": ["amx_bf16"], "tpu": False}, "mixed_bfloat16", "amx_bf16"),
        ({"gpus": [], "cpu_flags": [], "tpu": False}, "float32", "neither AMX_BF16 nor AVX512_BF16"),
        ({"gpus": [], "cpu_flags": [], "tpu": True}, "mixed_bfloat16", "TPU"),
        # The JAX loop: bfloat16 on GPUs that have it, float16 (with loss scaling) on older tensor-core GPUs.
        ({"gpus": [(9, 0)], "cpu_flags": [], "tpu": False, "gpu_bfloat16": True}, "mixed_bfloat16", "9.0 >= 8.0"),
        ({"gpus": [(7, 5)], "cpu_flags": [], "tpu": False, "gpu_bfloat16": True}, "mixed_float16", "7.5 >= 7.0"),
    ],
)
def test_auto_choice(hardware, policy, why):
    choice = choose_precision("auto", **hardware)
    assert choice.policy == policy and why in choice.reason


def test_explicit_choice_warns_when_slow():
    choice = choose_precision("mixed_float16", gpus=[], cpu_flags=["amx_bf16"], tpu=False)
    assert choice.policy == "mixed_float16" and "100x slower" in choice.reason
    choice = choose_precision("mixed_bfloat16", gpus=[], cpu_flags=[], tpu=False)
    assert "slower" in choice.reason
    assert choose_precision("float32", gpus=[], cpu_flags=[], tpu=False).reason == "requested"


def test_unknown_precision():
    with pytest.raises(ValueError, match="precision must be"):
        choose_precision("int8", gpus=[], cpu_flags=[], tpu=False)
