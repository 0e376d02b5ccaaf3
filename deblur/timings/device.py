"""What the timings ran on, recorded with them: figures mean little without the hardware and versions."""

from __future__ import annotations

import os
import platform
from pathlib import Path

import keras
import tensorflow as tf

from deblur.training.precision import cpu_bf16_flags


def cpu_name(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
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


def gpu_descriptions() -> list[str]:
    described = []
    for gpu in tf.config.list_physical_devices("GPU"):
        details = tf.config.experimental.get_device_details(gpu)
        capability = details.get("compute_capability")
        suffix = f" (compute capability {capability[0]}.{capability[1]})" if capability else ""
        described.append(details.get("device_name", gpu.name) + suffix)
    return described


def describe_device() -> dict:
    return {
        "cpu": cpu_name(),
        "cpu_cores": os.cpu_count(),
        "cpu_bfloat16": cpu_bf16_flags(),
        "gpus": gpu_descriptions(),
        "tensorflow": tf.__version__,
        "keras": keras.__version__,
        "python": platform.python_version(),
    }


def short_device(device: dict) -> str:
    """One line for a chart title: 'AMD EPYC, 2 cores, no GPU'."""
    gpus = device["gpus"]
    gpu_text = f"{len(gpus)} x {gpus[0]}" if gpus else "no GPU"
    return f"{device['cpu']}, {device['cpu_cores']} cores, {gpu_text}"
