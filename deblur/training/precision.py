"""Choosing the mixed-precision policy for the hardware, and saying why.

float16 needs tensor cores (NVIDIA compute capability >= 7.0) to pay off; bfloat16 needs native support (AMX or
AVX512_BF16 on x86 CPUs, or a TPU). Training the generator, bfloat16 was measured at about 2.7x float32 on a 2-core
Sapphire Rapids (AMX) and 1.6x on a 2-core AMD EPYC Zen 4 (AVX512_BF16, no AMX: its matmul peak is only 2.1x);
float16, emulated on a CPU, is over 100x slower.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import get_args

import keras
import tensorflow as tf

from deblur.config import Precision
from deblur.errors import SettingError

POLICIES = tuple(choice for choice in get_args(Precision) if choice != "auto")
BF16_CPU_FLAGS = ("amx_bf16", "avx512_bf16")


@dataclass(frozen=True)
class PrecisionChoice:
    policy: str
    reason: str


def cpu_bf16_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> list[str]:
    """The CPU's native bfloat16 features among AMX_BF16 and AVX512_BF16 (empty where it cannot tell)."""
    try:
        text = cpuinfo.read_text()
    except OSError:
        return []
    flags: set[str] = set()
    for line in text.splitlines():
        if line.startswith("flags"):
            flags.update(line.partition(":")[2].split())
            break
    return [f for f in BF16_CPU_FLAGS if f in flags]


def gpu_compute_capabilities() -> list[tuple[int, int]]:
    capabilities = []
    for gpu in tf.config.list_physical_devices("GPU"):
        details = tf.config.experimental.get_device_details(gpu)
        capabilities.append(tuple(details.get("compute_capability", (0, 0))))
    return capabilities


def has_tpu() -> bool:
    return bool(tf.config.list_logical_devices("TPU"))


def choose_precision(
    requested: str = "auto",
    *,
    gpus: list[tuple[int, int]] | None = None,
    cpu_flags: list[str] | None = None,
    tpu: bool | None = None,
) -> PrecisionChoice:
    """The policy to train with: `requested`, or for "auto" the fastest one this hardware supports natively.

    The hardware arguments default to what this machine has; tests pass them to try other machines.
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
