"""Choosing a tf.distribute strategy: one device, all local GPUs, or many workers (TF_CONFIG)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

import tensorflow as tf

from deblur.training.errors import StrategyError


@dataclass
class StrategyInfo:
    strategy: tf.distribute.Strategy
    name: str  # default | mirrored | multi-worker
    description: str
    is_chief: bool  # only the chief writes the model, metrics and logs
    task: str  # e.g. worker-1: names this worker's private temporary folders


def split_cpu(replicas: int) -> None:
    """Present the CPU as `replicas` logical devices, so the mirrored path can run without GPUs.

    Must run before TensorFlow initializes its devices (before any tensor is made).
    """
    cpus = tf.config.list_physical_devices("CPU")
    try:
        tf.config.set_logical_device_configuration(
            cpus[0], [tf.config.LogicalDeviceConfiguration() for _ in range(replicas)]
        )
    except RuntimeError:
        if len(tf.config.list_logical_devices("CPU")) != replicas:
            raise StrategyError(
                f"train.cpu_replicas={replicas}: TensorFlow's devices were already initialized in this process "
                "with a different split; set it before anything else runs"
            ) from None


def make_strategy(name: str = "auto", devices: list[str] | None = None) -> StrategyInfo:
    """A strategy for `name` (auto | default | mirrored | multi-worker).

    auto: mirrored when more than one GPU is visible, else default. mirrored without `devices` uses all GPUs,
    or, with none, every logical CPU device (see `split_cpu`); `devices` with another strategy is refused.
    """
    if devices and name != "mirrored":  # the others place their replicas themselves: it went unused without a word
        raise StrategyError(
            f"train.devices ({', '.join(devices)}) names the devices of train.strategy mirrored, and the strategy is "
            f"{name}: set --strategy mirrored, or leave train.devices unset"
        )
    if name == "multi-worker":
        # Before anything else: listing logical devices would start the runtime, and collective ops must be
        # configured before it starts. Physical devices can be listed without starting it.
        return _multi_worker()
    gpus = tf.config.list_physical_devices("GPU")
    if name == "auto":
        name = "mirrored" if len(gpus) > 1 else "default"
    if name == "default":
        device = "GPU" if gpus else "CPU"
        return StrategyInfo(tf.distribute.get_strategy(), "default", f"one device ({device})", True, "chief")
    if name == "mirrored":
        if devices is None:
            logical_gpus = tf.config.list_logical_devices("GPU")
            devices = [d.name for d in logical_gpus] or [d.name for d in tf.config.list_logical_devices("CPU")]
        strategy = tf.distribute.MirroredStrategy(devices=devices)
        description = f"MirroredStrategy over {strategy.num_replicas_in_sync} device(s): {', '.join(devices)}"
        return StrategyInfo(strategy, "mirrored", description, True, "chief")
    raise StrategyError(f"unknown strategy {name!r}: use auto, default, mirrored or multi-worker")


@dataclass(frozen=True)
class ClusterRole:
    is_chief: bool
    task: str
    workers: int


def cluster_role(raw: str | None) -> ClusterRole:
    """This process's place in a TF_CONFIG cluster; no TF_CONFIG means a lone chief worker."""
    try:
        tf_config = json.loads(raw) if raw else {}
    except json.JSONDecodeError as err:
        raise StrategyError(f"TF_CONFIG is not valid JSON: {err}") from None
    cluster = tf_config.get("cluster", {})
    task = tf_config.get("task", {})
    task_type, task_id = task.get("type", "worker"), int(task.get("index", 0))
    # The chief is the "chief" task if the cluster names one, else worker 0.
    is_chief = task_type == "chief" or (task_type == "worker" and task_id == 0 and "chief" not in cluster)
    workers = len(cluster.get("worker", [])) + len(cluster.get("chief", [])) or 1
    return ClusterRole(is_chief, f"{task_type}-{task_id}", workers)


def _multi_worker() -> StrategyInfo:
    raw = os.environ.get("TF_CONFIG")
    role = cluster_role(raw)
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    description = (
        f"MultiWorkerMirroredStrategy: {role.workers} worker(s), {strategy.num_replicas_in_sync} replica(s) in "
        f"all; this is {role.task}" + (" (chief)" if role.is_chief else "")
    )
    if not raw:
        description += " (TF_CONFIG not set: a single worker)"
    return StrategyInfo(strategy, "multi-worker", description, role.is_chief, role.task)
