"""What this machine is: its CPU's name and native bfloat16 support, its GPUs and TPUs.

The ground floor for hardware facts: training chooses its precision from them, inference its number format, and
the timings and benchmarks record them beside every figure (figures mean little without the hardware). Reading
/proc/cpuinfo needs nothing; the device queries ask Keras' backend (TensorFlow, or JAX where Keras runs on JAX:
a GPU machine may have no TensorFlow at all), importing it only when called.
"""

from __future__ import annotations

import os
import platform
from pathlib import Path

from deblur.errors import SettingError

BF16_CPU_FLAGS = ("amx_bf16", "avx512_bf16")
CPUINFO = Path("/proc/cpuinfo")
# A container's memory limit, cgroup v2's and v1's: the machine's memory is not what the process may use
CGROUP_LIMITS = (Path("/sys/fs/cgroup/memory.max"), Path("/sys/fs/cgroup/memory/memory.limit_in_bytes"))
# ... beside what it uses of that limit, the same two ways
CGROUP_USES = (
    (CGROUP_LIMITS[0], Path("/sys/fs/cgroup/memory.current")),
    (CGROUP_LIMITS[1], Path("/sys/fs/cgroup/memory/memory.usage_in_bytes")),
)
MEMINFO = Path("/proc/meminfo")


def cpu_bf16_flags(cpuinfo: Path = CPUINFO) -> list[str]:
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


def physical_memory(limits: tuple[Path, ...] = CGROUP_LIMITS) -> int | None:
    """The bytes of memory this process may use: the machine's, or its container's limit where lower; None where
    it cannot tell (a system without sysconf's page count)."""
    try:
        known = [os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")]
    except (AttributeError, ValueError, OSError):  # Windows and macOS builds without them
        known = []
    for path in limits:
        try:
            text = path.read_text().strip()
        except OSError:
            continue
        if text.isdigit():  # "max": no limit
            known.append(int(text))
    return min(known) if known else None


def free_memory(meminfo: Path = MEMINFO, cgroups: tuple[tuple[Path, Path], ...] = CGROUP_USES) -> int | None:
    """The bytes this process could still take now: Linux's MemAvailable (free memory and the caches the system
    would drop), or its container's limit less what the container uses where lower; None where it cannot tell."""
    known = []
    try:
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                known.append(int(line.split()[1]) * 1024)  # in kB
                break
    except (OSError, ValueError, IndexError):
        pass
    for limit, usage in cgroups:
        try:
            limit_text, used_text = limit.read_text().strip(), usage.read_text().strip()
        except OSError:
            continue
        if limit_text.isdigit() and used_text.isdigit():  # "max": no limit
            known.append(max(0, int(limit_text) - int(used_text)))
    return min(known) if known else None


def cpu_name(cpuinfo: Path = CPUINFO) -> str:
    """The CPU's model name with its family and model numbers: VMs often report a bare "AMD EPYC", and the family
    tells a Zen 4 (25) from a Zen 5 (26), whose speeds differ by 2x."""
    try:
        fields: dict[str, str] = {}
        for line in cpuinfo.read_text().splitlines():
            key, _, value = line.partition(":")
            fields.setdefault(key.strip(), value.strip())
    except OSError:
        fields = {}
    name = fields.get("model name") or platform.processor() or platform.machine()
    if "cpu family" in fields and "model" in fields:
        return f"{name} (family {fields['cpu family']}, model {fields['model']})"
    return name


KERAS_BACKENDS = ("tensorflow", "jax", "torch", "numpy", "openvino")  # what Keras 3 takes as KERAS_BACKEND


def check_keras_backend_variable() -> None:
    """Refuse a KERAS_BACKEND that names none of Keras' backends (`KERAS_BACKEND=Jax`, `tensorfow`), before Keras
    is imported: Keras' own refusal is a ValueError's traceback from inside its import."""
    name = os.environ.get("KERAS_BACKEND", "")
    if name and name not in KERAS_BACKENDS:  # Keras takes an empty one for none
        raise SettingError(
            f"KERAS_BACKEND={name} is none of Keras' backends: set it to tensorflow (the default), jax or torch, in "
            "lower case, or unset it",
            settings=("KERAS_BACKEND",),
        )


def keras_backend() -> str:
    """The backend Keras runs on in this process ("tensorflow", "jax" or "torch")."""
    import keras

    return keras.backend.backend()


def _jax_gpus() -> list:
    import jax

    try:
        return jax.devices("gpu")
    except RuntimeError:  # no GPU platform in this jaxlib, or no GPU
        return []


def gpu_compute_capabilities() -> list[tuple[int, int]]:
    if keras_backend() == "jax":
        # CUDA devices carry their capability as "9.0"; other GPU platforms have none.
        found = [getattr(gpu, "compute_capability", "0.0") or "0.0" for gpu in _jax_gpus()]
        return [tuple(int(part) for part in str(cc).split(".")[:2]) for cc in found]
    import tensorflow as tf

    capabilities = []
    for gpu in tf.config.list_physical_devices("GPU"):
        details = tf.config.experimental.get_device_details(gpu)
        capabilities.append(tuple(details.get("compute_capability", (0, 0))))
    return capabilities


def gpu_descriptions() -> list[str]:
    if keras_backend() == "jax":
        described = []
        for gpu in _jax_gpus():
            capability = getattr(gpu, "compute_capability", None)
            described.append(gpu.device_kind + (f" (compute capability {capability})" if capability else ""))
        return described
    import tensorflow as tf

    described = []
    for gpu in tf.config.list_physical_devices("GPU"):
        details = tf.config.experimental.get_device_details(gpu)
        capability = details.get("compute_capability")
        suffix = f" (compute capability {capability[0]}.{capability[1]})" if capability else ""
        described.append(details.get("device_name", gpu.name) + suffix)
    return described


def has_tpu() -> bool:
    if keras_backend() == "jax":
        import jax

        try:
            return bool(jax.devices("tpu"))
        except RuntimeError:
            return False
    import tensorflow as tf

    return bool(tf.config.list_logical_devices("TPU"))


def native_bfloat16_inference() -> bool:
    """Whether inference runs in bfloat16 by default: on a CPU with native support and no GPU (on a GPU the model
    runs in float32: bfloat16 inference was only measured on CPUs)."""
    return not gpu_compute_capabilities() and bool(cpu_bf16_flags())


def describe_device() -> dict:
    """The hardware and versions, recorded beside timings and benchmark figures."""
    import importlib

    import keras

    backend = keras_backend()
    return {
        "cpu": cpu_name(),
        "cpu_cores": os.cpu_count(),
        "cpu_bfloat16": cpu_bf16_flags(),
        "gpus": gpu_descriptions(),
        "backend": backend,
        backend: importlib.import_module(backend).__version__,  # "tensorflow": "2.21.0", as before JAX came
        "keras": keras.__version__,
        "python": platform.python_version(),
    }
