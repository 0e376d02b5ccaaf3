"""Where deblur keeps things: the user data folder (demo dataset), training runs, and the shipped model."""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from deblur.errors import SettingError
from deblur.files import atomic_write_text

RUNS_DIR = Path("runs")
# The files `deblur export` writes, which other runtimes run and deblur does not: savedmodel is a folder, and
# openvino's .xml has its .bin beside it.
EXPORT_SUFFIXES = {"litert": ".tflite", "onnx": ".onnx", "openvino": ".xml"}
EXPORT_RUNTIMES = {"litert": "LiteRT", "onnx": "ONNX Runtime", "openvino": "OpenVINO"}


def data_home() -> Path:
    """`$DEBLUR_HOME`, else `$XDG_CACHE_HOME/deblur`, else `~/.cache/deblur`."""
    if os.environ.get("DEBLUR_HOME"):
        return Path(os.environ["DEBLUR_HOME"])
    cache = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(cache) / "deblur"


def first_time(name: str) -> bool:
    """True the first time it is asked with `name` on this machine (for this user), then False: advice worth
    giving once, not on every run. Remembered as an empty file under the data home."""
    marker = data_home() / "said" / name
    if marker.exists():
        return False
    try:
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.touch()
    except OSError:  # a read-only home: say it every time rather than never
        pass
    return True


def new_run_dir(runs: Path = RUNS_DIR) -> Path:
    """A fresh folder name under `runs/`, named by the local time; not created here."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    candidate = runs / stamp
    n = 1
    while candidate.exists():
        n += 1
        candidate = runs / f"{stamp}-{n}"
    return candidate


def last_model_record() -> Path:
    """Where `deblur train` notes the model it wrote last: the data home's `last-model` (one absolute path)."""
    return data_home() / "last-model"


def record_last_model(path: Path) -> None:
    """Note `path` as the model trained last, so that `--model latest` finds it from any folder."""
    with contextlib.suppress(OSError):  # a read-only home: latest still finds the runs under the current folder
        atomic_write_text(last_model_record(), f"{Path(path).resolve()}\n")


def recorded_model() -> Path | None:
    """The model `deblur train` wrote last, if it is still there."""
    try:
        path = Path(last_model_record().read_text().strip())
    except (OSError, UnicodeDecodeError):
        return None
    return path if path.is_absolute() and path.is_file() else None


def latest_model(runs: Path = RUNS_DIR) -> Path | None:
    """The newest model trained, by modification time: `runs/*/model.keras` under the current folder, or the one
    `deblur train` wrote last wherever it ran (`recorded_model`); None if neither is there."""
    models = [p for p in runs.glob("*/model.keras") if p.is_file()]
    recorded = recorded_model()
    if recorded is not None:
        models.append(recorded)
    return max(models, key=lambda p: p.stat().st_mtime) if models else None


def shipped_model(kernel_aware: bool = False) -> Path | None:
    """The pretrained network inside the installed package (`deblur/weights/model.keras`), or with `kernel_aware`
    the kernel-aware one (`deblur/weights/kernel_aware/model.keras`), or None if this copy of deblur has none."""
    weights = resources.files("deblur") / "weights"
    path = Path(str(weights / "kernel_aware" / "model.keras" if kernel_aware else weights / "model.keras"))
    return path if path.is_file() else None


@dataclass(frozen=True)
class ModelChoice:
    path: Path
    description: str  # what the user is told is being used, with its path
    name: str  # the same without the folders above the run: what a server may tell anyone


def _run_name(path: Path) -> str:
    return f"{path.parent.name}/{path.name}" if path.parent.name else path.name


def choose_model(
    model: str | Path | None, runs: Path = RUNS_DIR, *, kernel_aware: bool = False, setting: str = "model"
) -> ModelChoice:
    """The model a command uses: a `model.keras` path; "latest", the newest training run; "pretrained" or None,
    the model shipped with deblur, the kernel-aware one with `kernel_aware` (with None and no shipped model, the
    newest run). `setting` is the option that named it, for errors."""
    if model is not None and not isinstance(model, str | Path):  # Path(3) had been a TypeError's traceback
        raise SettingError(
            f"the {setting} is {type(model).__name__} {model!r}: give a model.keras path, latest or pretrained",
            settings=(setting,),
        )
    if "://" in str(model):  # as a Path it would be "s3:/bucket/..." here, called missing
        raise SettingError(f"{model} is a URL: give the model file as a path on this machine", settings=(setting,))
    if model is not None and not str(model).strip():  # `--model $MODEL`, unset: it had been "." called a folder
        raise SettingError(
            f"the {setting} is an empty path: name a model.keras (or latest), or leave it out for the shipped model",
            settings=(setting,),
        )
    if model is not None and str(model) not in ("latest", "pretrained"):
        return ModelChoice(Path(model), str(model), _run_name(Path(model)))
    shipped = shipped_model(kernel_aware)
    if model is None and shipped or str(model) == "pretrained":
        if shipped is None:
            raise SettingError("this copy of deblur has no pretrained model", settings=(setting,))
        what = "kernel-aware network" if kernel_aware else "model"
        return ModelChoice(
            shipped,
            f"the pretrained {what} shipped with deblur ({shipped})",
            f"the pretrained {what} shipped with deblur",
        )
    latest = latest_model(runs)
    if latest is None:
        raise SettingError(
            f"no trained model found: none in {runs.resolve()}, and none noted by deblur train in "
            f"{last_model_record()}; train one first (deblur train), or name its file (--{setting} "
            "runs/<time>/model.keras)",
            settings=(setting,),
        )
    return ModelChoice(latest, f"{latest}, the newest training run", _run_name(latest))


def exported_format(path: Path) -> str | None:
    """The export format whose files are named as `path` is (an OpenVINO IR's .bin too); None for any other name."""
    suffix = path.suffix.lower()
    found = (fmt for fmt, kept in EXPORT_SUFFIXES.items() if kept == suffix)
    return "openvino" if suffix == ".bin" else next(found, None)
