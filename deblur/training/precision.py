"""Choosing the mixed-precision policy for the hardware, and saying why.

float16 needs tensor cores (NVIDIA compute capability >= 7.0) to pay off; bfloat16 needs native support (AMX or
AVX512_BF16 on x86 CPUs, or a TPU). Training the generator, bfloat16 was measured at about 2.7x float32 on a 2-core
Sapphire Rapids (AMX) and 1.6x on a 2-core AMD EPYC Zen 4 (AVX512_BF16, no AMX: its matmul peak is only 2.1x);
float16, emulated on a CPU, is over 100x slower.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import get_args

import keras

from deblur.config import Precision
from deblur.errors import SettingError
from deblur.hardware import cpu_bf16_flags, gpu_compute_capabilities, has_tpu

POLICIES = tuple(choice for choice in get_args(Precision) if choice != "auto")


@dataclass(frozen=True)
class PrecisionChoice:
    policy: str
    reason: str


def choose_precision(
    requested: str = "auto",
    *,
    gpus: list[tuple[int, int]] | None = None,
    cpu_flags: list[str] | None = None,
    tpu: bool | None = None,
    gpu_bfloat16: bool = False,
) -> PrecisionChoice:
    """The policy to train with: `requested`, or for "auto" the fastest one this hardware supports natively.

    The hardware arguments default to what this machine has; tests pass them to try other machines.
    `gpu_bfloat16` takes bfloat16 on GPUs that have it (compute capability 8.0 and newer), as the JAX loop does:
    as fast as float16 there, and with float32's range it needs no loss scaling. TensorFlow's loop keeps float16.
    """
    gpus = gpu_compute_capabilities() if gpus is None else gpus
    cpu_flags = cpu_bf16_flags() if cpu_flags is None else cpu_flags
    tpu = has_tpu() if tpu is None else tpu
    if requested not in ("auto", *POLICIES):
        raise SettingError(
            f"precision must be auto or one of {', '.join(POLICIES)}; got {requested!r}", settings=("precision",)
        )

    if requested == "auto":
        if tpu:
            return PrecisionChoice("mixed_bfloat16", "TPU: bfloat16 is native")
        if gpus:
            slowest = min(gpus)
            if gpu_bfloat16 and slowest >= (8, 0):
                return PrecisionChoice(
                    "mixed_bfloat16", f"GPU compute capability {slowest[0]}.{slowest[1]} >= 8.0: bfloat16 is native"
                )
            if slowest >= (7, 0):
                return PrecisionChoice(
                    "mixed_float16", f"GPU compute capability {slowest[0]}.{slowest[1]} >= 7.0 (tensor cores)"
                )
            return PrecisionChoice(
                "float32",
                f"mixed precision unavailable: GPU compute capability {slowest[0]}.{slowest[1]} < 7.0 has no "
                "tensor cores, so float16 would not be faster",
            )
        if cpu_flags:
            return PrecisionChoice("mixed_bfloat16", f"no GPU; the CPU has {' and '.join(cpu_flags)}")
        return PrecisionChoice(
            "float32",
            "mixed precision unavailable: no GPU, and the CPU has neither AMX_BF16 nor AVX512_BF16, "
            "on which bfloat16 would be emulated and slower",
        )

    reason = "requested"
    if requested == "mixed_float16" and not gpus:
        reason += "; warning: without a GPU float16 is emulated, over 100x slower than float32 on a CPU"
    elif requested == "mixed_bfloat16" and not (tpu or cpu_flags or any(cc >= (8, 0) for cc in gpus)):
        reason += "; warning: no native bfloat16 on this hardware, expect it to be slower than float32"
    return PrecisionChoice(requested, reason)


def set_policy(policy: str) -> None:
    keras.mixed_precision.set_global_policy(policy)
