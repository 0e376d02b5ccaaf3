"""`deblur predict --engine ray`: many photos and clips deblurred by worker processes of a distributed engine, on
this machine or a cluster.

Ray Data was chosen over Apache Beam's RunInference (both tried beside TensorFlow 2.21 and numpy 2, 2-core AMD EPYC
Zen 4): Ray installs without changing any of deblur's dependencies, where apache-beam 2.77 moves protobuf down a
major version (7 to 6); and a worker killed mid-run is restarted and its task run again by Ray, where Beam's local
multi-process runner hung for good. The engine is an extra: `ENGINE_INSTALL`.

This module is light: it says how to install and choose an engine (the choices are `deblur.settings.ENGINES`, beside
the settings that name one); `deblur.scale.run` does the work.
"""

from __future__ import annotations

import os

from deblur.settings import WORKER_CPUS

ENGINE_INSTALL = "pip install 'deblur-keras[ray]'"
ENGINE_HELP = (
    "Run on a distributed engine's worker processes (ray: a local Ray, or the cluster at --address); "
    f"needs {ENGINE_INSTALL}. Without it, this process deblurs the inputs one after another."
)
FAILED_LIST = "deblur-failed.csv"  # the dead-letter list, beside the outputs: file, reason


def default_workers(worker_cpus: int = WORKER_CPUS) -> int:
    """One worker per `worker_cpus` of this machine's CPUs (on a cluster, say how many)."""
    return max(1, (os.cpu_count() or 1) // worker_cpus)
