"""The model under Keras' JAX backend (`KERAS_BACKEND=jax`): on JAX's GPU when it has one, else on the CPU.

Keras compiles the forward pass with XLA once per input shape (JAX has no other way to run fast), so photos of one
size, and a clip's frames, reuse one compiled function. On a GPU, bfloat16 where the GPU has it (compute capability
8.0 and newer), and as many pixels per call as a share of the GPU's memory holds: a 3840x2160 frame goes whole.
"""

from __future__ import annotations

from deblur import hardware

# Bytes a pixel of the input takes through the forward pass, per channel of the model's first convolution (its
# `width`): the widest full-resolution activations, float32, a few alive at once (XLA fuses most of the rest).
# An estimate, kept on the safe side; a call this large never needs more than MEMORY_SHARE of the GPU.
BYTES_PER_PIXEL_PER_CHANNEL = 4 * 8
MEMORY_SHARE = 0.5
MAX_CALL_PIXELS = 4 * 3840 * 2160  # beyond a few 4K frames per call, GPUs gain nothing more


def device_label() -> str:
    """What the model runs on: "NVIDIA H200 (GPU)", or "cpu"."""
    gpus = hardware.gpu_descriptions()
    return f"{gpus[0]} (GPU)" if gpus else "cpu"


def native_bfloat16() -> bool:
    """bfloat16 by default: GPUs with it natively, or CPUs with AMX or AVX512_BF16 (as TensorFlow's runtime)."""
    gpus = hardware.gpu_compute_capabilities()
    if gpus:
        return min(gpus) >= (8, 0)
    return bool(hardware.cpu_bf16_flags())


def gpu_call_pixels(width: int) -> int | None:
    """The most pixels one model call takes on the GPU, from its memory and the model's width; None on a CPU
    (or where JAX does not say how much memory the GPU has)."""
    import jax

    device = jax.devices()[0]
    if device.platform != "gpu":
        return None
    stats = device.memory_stats() or {}
    return call_pixels_for(stats["bytes_limit"], width) if stats.get("bytes_limit") else None


def call_pixels_for(memory_bytes: int, width: int) -> int:
    """The pixels a call of a model of `width` takes within `MEMORY_SHARE` of `memory_bytes`."""
    return int(min(MAX_CALL_PIXELS, MEMORY_SHARE * memory_bytes / (BYTES_PER_PIXEL_PER_CHANNEL * max(width, 1))))
