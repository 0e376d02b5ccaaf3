"""Turning TensorFlow's multi-line errors into one line a user can act on."""

from __future__ import annotations

import tensorflow as tf

_NOISE = ("File ", "Detected at node", "[[", "Cf. ")


def error_reason(err: tf.errors.OpError, limit: int = 200) -> str:
    """The informative line of a TensorFlow error: its first line is often just "Graph execution error:",
    followed by a traceback of where the graph was built."""
    lines = [line.strip() for line in (err.message or str(err)).splitlines() if line.strip()]
    for line in lines:
        if "unhealthy" in line or "aborted" in line:  # a lost worker: the line that says so
            return line[:limit]
    meaningful = [line for line in lines if not line.endswith(":") and not line.startswith(_NOISE)]
    return (meaningful or lines or [""])[0][:limit]
