"""Whether a training step's batch fits this machine's memory, said before the first step: a batch far too large
for a CPU's memory had been killed by the system with no word from deblur.

The estimate is the generator's activations, kept for the backward pass: every layer's output for one patch, at 4
bytes an element, times the factor of the backend and the policy's compute type, times the global batch. It is meant
as a lower bound (the process itself, the data, the perceptual loss's VGG and the optimizer come on top): a warning
says a step that will not fit in the machine's memory, or in what is left free as training starts (a run beside
other large programs had been killed with no word). Measured on CPUs only; a GPU's memory is its own, and each
backend names its exhaustion.
"""

from __future__ import annotations

import keras
import numpy as np

from deblur.hardware import free_memory, physical_memory

# Peak memory per patch over (layer outputs x 4 bytes), measured as the growth of the training process's peak RSS
# between two batch sizes (2-core AMD EPYC Zen 5, family 26 model 2). TensorFlow's loop, float32: 0.99 for demo's
# model (width 32, 6 blocks, 96 px: 31.6 MB a patch, batch 8 to 64), 0.90 for gopro's (width 64, 9 blocks, 128 px:
# 123.8 MB, batch 8 to 32); mixed_bfloat16: 0.73 (23.5 MB, batch 8 to 128) and 0.68 (93.5 MB). JAX's loop keeps
# more: demo's model, batch 8 to 64, float32 2.47 (78.9 MB a patch) and mixed_bfloat16 2.63 (84.0 MB); gopro's at
# its 256 px, mixed_bfloat16 1.54 (836 MB, batch 4 to 8 and 8 to 12). Each below all of its measures, so that the
# bound stays one.
FACTORS = {"tensorflow": {"float32": 0.85, "mixed": 0.6}, "jax": {"float32": 1.4, "mixed": 1.4}}
FITS_SHARE = 0.8  # of the machine's memory, where the batch suggested is to fit: the rest for the process and data


def activation_bytes(
    model: keras.Model, patch_size: int, compute_dtype: str = "float32", backend: str = "tensorflow"
) -> int:
    """Lower bound on the memory one patch's activations take in a training step of `model` computing in
    `compute_dtype` (float32, or bfloat16 and float16 under a mixed policy) in `backend`'s loop."""
    outputs = [layer.output for layer in model.layers[1:]]
    channels = model.inputs[0].shape[-1]
    specs = keras.Model(model.inputs, outputs).compute_output_spec(
        keras.KerasTensor((1, patch_size, patch_size, channels))
    )
    elements = sum(int(np.prod(spec.shape[1:])) for spec in specs)
    return int(FACTORS[backend]["float32" if compute_dtype == "float32" else "mixed"] * 4 * elements)


def batch_too_large(
    model: keras.Model,
    patch_size: int,
    global_batch: int,
    compute_dtype: str = "float32",
    memory: int | None = None,
    backend: str = "tensorflow",
    free: int | None = None,
) -> str | None:
    """A warning where the step of `global_batch` patches cannot fit in `memory` bytes (default: this machine's,
    `deblur.hardware.physical_memory`), or in the `free` bytes other programs leave it now (default:
    `deblur.hardware.free_memory`); None where it may fit or neither is known."""
    memory = physical_memory() if memory is None else memory
    free = free_memory() if free is None else free
    if not memory and not free:
        return None
    per_patch = activation_bytes(model, patch_size, compute_dtype, backend)
    needed = per_patch * global_batch
    has = (
        f"a training step of {global_batch} patches of {patch_size} px needs at least {_size(needed)} for the "
        "generator's activations alone, and this machine has"
    )
    if memory and needed > memory:
        return f"{has} {_size(memory)}: it will likely be killed for memory; {_advice(memory, per_patch)}"
    if free and needed > free:
        of = f" (of its {_size(memory)})" if memory else ""
        return (
            f"{has} {_size(free)} free now{of}: it will likely be killed for memory unless other programs let go; "
            f"{_advice(free, per_patch)}"
        )
    return None


def _advice(memory: int, per_patch: int) -> str:
    fits = int(FITS_SHARE * memory // per_patch)
    most = f"at most about {fits} patches a step may fit" if fits else "lower data.patch_size"
    return f"{most} (data.batch_size is per replica)"


def _size(count: int) -> str:
    for unit, name in ((2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB")):
        if count >= unit:
            return f"{count / unit:.0f} {name}"
    return f"{count} bytes"
