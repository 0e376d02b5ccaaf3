"""Where deblur keeps things: the user data folder (demo dataset) and training runs."""

from __future__ import annotations

import os
import time
from pathlib import Path

RUNS_DIR = Path("runs")


def data_home() -> Path:
    """`$DEBLUR_HOME`, else `$XDG_CACHE_HOME/deblur`, else `~/.cache/deblur`."""
    if os.environ.get("DEBLUR_HOME"):
        return Path(os.environ["DEBLUR_HOME"])
    cache = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(cache) / "deblur"


def new_run_dir(runs: Path = RUNS_DIR) -> Path:
    """A fresh folder name under `runs/`, named by the local time; not created here."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    candidate = runs / stamp
    n = 1
    while candidate.exists():
        n += 1
        candidate = runs / f"{stamp}-{n}"
    return candidate


def latest_model(runs: Path = RUNS_DIR) -> Path | None:
    """The newest `runs/*/model.keras`, by modification time, or None."""
    models = [p for p in runs.glob("*/model.keras") if p.is_file()]
    return max(models, key=lambda p: p.stat().st_mtime) if models else None
