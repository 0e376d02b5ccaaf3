"""The training run folder: its files, checkpoints and resuming from them.

OUT/
  config.yaml      the resolved config (written at the start, so a resumed run can be checked against it)
  checkpoints/     weights, optimizer, step: tf.train.CheckpointManager's files (TensorFlow's loop), or
                   step-N.npz (the JAX loop, `deblur.training.jax.checkpoints`)
  logs/            TensorBoard
  metrics.jsonl    one JSON object per finished epoch
  model.keras      the trained model, float32, loadable with safe_mode=True
  .train.lock      held by the run while it trains (`one_training_at_a_time`), removed as it ends
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import shutil
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import keras
import numpy as np
import yaml

from deblur.config import Config, config_to_dict, config_to_yaml, yaml_reason
from deblur.files import atomic_path, atomic_write_text, check_folder, one_run_at_a_time
from deblur.model import build_generator, is_kernel_aware, start_from_network
from deblur.training.errors import RunFolderError, stopped_setting_up

if TYPE_CHECKING:
    import tensorflow as tf

S = TypeVar("S")  # a loop's Session


@dataclass(frozen=True)
class RunFolder:
    root: Path

    @property
    def config(self) -> Path:
        return self.root / "config.yaml"

    @property
    def checkpoints(self) -> Path:
        return self.root / "checkpoints"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def metrics(self) -> Path:
        return self.root / "metrics.jsonl"

    @property
    def model(self) -> Path:
        return self.root / "model.keras"

    @property
    def lock(self) -> Path:
        return self.root / ".train.lock"


def one_training_at_a_time(run: RunFolder) -> contextlib.AbstractContextManager:
    """Held by the run's chief while it trains: a second `deblur train` into the same --out (in another terminal, a
    scheduler's retry) is refused before it writes anything, where the two had written one set of checkpoints,
    metrics and model at once. Inside the run folder, which the lock's file leaves usable: after a kill -9 it stays,
    and `check_run_folder` passes over it."""
    return one_run_at_a_time(run.root, run.root, "out", lock=run.lock)


def check_run_folder(root: Path, config: Config) -> RunFolder:
    """Check that `root` is empty, missing, or a run of the same model, before anything is written.

    A folder of other files is refused rather than written into, and so is a run of a different model (its
    checkpoints could not be restored).
    """
    run = RunFolder(Path(root))
    check_folder(run.root, "out")
    if config.train.init and not run.config.is_file():  # a run that resumes never reads it
        check_init(config.train.init, config)
    if run.config.is_file():
        try:
            previous = yaml.safe_load(run.config.read_text()) or {}
        except yaml.YAMLError as err:
            raise RunFolderError(
                f"{run.config} is not valid YAML ({yaml_reason(err)}); use another run folder", settings=("out",)
            ) from None
        if not isinstance(previous, dict):  # YAML, but not a config deblur wrote
            raise RunFolderError(f"{run.config} is not a run's config; use another run folder", settings=("out",))
        if previous.get("model") != config_to_dict(config)["model"]:
            raise RunFolderError(
                f"{run.root} holds a run of a different model (model settings in {run.config} differ); "
                "use another --out, or the same settings to resume"
            )
    elif run.root.is_dir() and any(path != run.lock for path in run.root.iterdir()):
        raise RunFolderError(
            f"{run.root} already holds files that are not a deblur run; choose another folder", settings=("out",)
        )
    return run


JAX_CHECKPOINT = r"step-(\d{8})\.npz"  # the JAX loop's checkpoint files


def checkpoint_backend(run: RunFolder) -> str | None:
    """Which loop wrote the run's checkpoints: "tensorflow", "jax", or None when there are none."""
    if not run.checkpoints.is_dir():
        return None
    names = [path.name for path in run.checkpoints.iterdir()]
    if "checkpoint" in names or any(name.endswith(".index") for name in names):
        return "tensorflow"
    if any(re.fullmatch(JAX_CHECKPOINT, name) for name in names):
        return "jax"
    return None


def refuse_other_backend(run: RunFolder, backend: str) -> None:
    """A run's checkpoints resume only on the backend that wrote them: say so, rather than start again over them."""
    written_by = checkpoint_backend(run)
    if written_by not in (None, backend):
        raise RunFolderError(
            f"{run.root} holds checkpoints written under KERAS_BACKEND={written_by}: resume it with "
            f"KERAS_BACKEND={written_by}, or train under {backend} in another --out",
            settings=("out",),
        )


@contextlib.contextmanager
def training_session(make: Callable[[contextlib.ExitStack], S]) -> Iterator[S]:
    """The session `make(held)` sets up, its run folder's lock kept in `held` until the run ends (either loop's).
    A stop is raised as what it is: while setting up, `stopped_setting_up`; after, `session.interrupted()` (which
    saves a checkpoint)."""
    with contextlib.ExitStack() as held:
        try:
            session = make(held)
        except KeyboardInterrupt:
            raise stopped_setting_up() from None
        try:
            yield session
        except KeyboardInterrupt:
            raise session.interrupted() from None


def claim_run_folder(run: RunFolder, config: Config, held: contextlib.ExitStack) -> None:
    """Once the data has passed, before anything else is written: the run folder locked for this run
    (`one_training_at_a_time`, kept in `held` until the run ends), then its config written. A run that ends
    before writing anything else (its set-up failed or was stopped: a busy data.cache, a model that would not
    build) leaves the folder as it found it: its config alone had been left, and a run of another model in the
    same --out was then refused."""
    if not run.root.exists():
        held.callback(_remove_if_empty, run.root)  # after the lock's own file is gone
    held.enter_context(one_training_at_a_time(run))
    if not run.config.is_file():
        held.callback(_forget_config, run)
    record_config(run, config)


def _forget_config(run: RunFolder) -> None:
    with contextlib.suppress(OSError):  # the folder taken away meanwhile: nothing to forget
        if {path.name for path in run.root.iterdir()} <= {run.config.name, run.lock.name}:
            run.config.unlink()


def _remove_if_empty(root: Path) -> None:
    with contextlib.suppress(OSError):  # not empty: the run wrote into it
        root.rmdir()


def record_config(run: RunFolder, config: Config) -> None:
    run.root.mkdir(parents=True, exist_ok=True)
    atomic_write_text(run.config, config_to_yaml(config))


def checkpoint_manager(
    checkpoint: tf.train.Checkpoint, run: RunFolder, *, is_chief: bool, task: str, keep: int
) -> tf.train.CheckpointManager:
    """The chief writes into OUT/checkpoints; other workers into a private temporary folder, as
    MultiWorkerMirroredStrategy requires every worker to save but only one copy must be kept."""
    import tensorflow as tf  # TensorFlow's checkpoints only: the JAX loop uses this module without it

    directory = run.checkpoints if is_chief else Path(tempfile.mkdtemp(prefix=f"deblur-{task}-"))
    return tf.train.CheckpointManager(checkpoint, str(directory), max_to_keep=keep)


def remove_unfinished_checkpoints(directory: Path) -> None:
    """Remove what TensorFlow left of a checkpoint it could not finish: it writes one into `<prefix>-<step>_temp/`
    and moves its files out, and one a full disk stopped kept, in that folder, the room the next run needs."""
    for unfinished in directory.glob("*_temp"):
        shutil.rmtree(unfinished, ignore_errors=True)


def init_architecture(init: str) -> dict | None:
    """The `model` section of the config.yaml beside the model `init` names (see `TrainConfig.init`), if any."""
    from deblur.paths import choose_model

    return _model_beside(choose_model(init, setting="init").path)


def _model_beside(path: Path) -> dict | None:
    """The `model` section of the config.yaml beside the model file `path`; None where that is missing or
    unreadable (the model file itself is then what is checked)."""
    try:
        model = (yaml.safe_load((path.parent / "config.yaml").read_text()) or {}).get("model")
    except (OSError, yaml.YAMLError, AttributeError):
        return None
    return model if isinstance(model, dict) else None


def resuming_line(checkpoint: str | Path, step: int, total_steps: int, init: str | None = None) -> str:
    """What training says as it resumes: that `init` (train.init) is not read, as it went unread without a word;
    with no step left to train, that, and how to go on."""
    line = f"resuming from {checkpoint} at step {step}"
    if init:
        line += f", its weights rather than train.init={init}'s (read by a run's first start only)"
    if step >= total_steps:
        line += f": none left of the {total_steps} steps asked for (raise train.epochs to train on)"
    return line


def check_init(init: str, config: Config) -> Path:
    """The model file `train.init` names, refused before the run folder is written when it is not one or is of
    another architecture: a run folder left by a mistaken one would refuse the corrected command as a run of
    another model."""
    from deblur.inference import check_model_file
    from deblur.paths import choose_model

    path = choose_model(init, setting="init").path
    check_model_file(path, "init")
    if zipfile.is_zipfile(path):  # a .keras file is a zip archive with the model's config.json at its top
        with zipfile.ZipFile(path) as archive:
            keras_file = "config.json" in archive.namelist()
    else:
        with path.open("rb") as file:
            keras_file = file.read(8).startswith(b"\x89HDF")  # a legacy .h5 file
    if not keras_file:
        raise RunFolderError(f"{path} is not a deblur model (not a Keras file)", settings=("init",))
    ours = config_to_dict(config)["model"]
    theirs = _model_beside(path)
    if theirs is not None:
        # A kernel-aware network starts from a plain one of the same size (`deblur.model.start_from_network`);
        # configs written before the key existed are plain.
        theirs = {"kernel_aware": False, **theirs}
        widened = ours["kernel_aware"] and not theirs["kernel_aware"]
        if {**theirs, "kernel_aware": ours["kernel_aware"] if widened else theirs["kernel_aware"]} != ours:
            raise RunFolderError(
                f"train.init: {path} is a model of another architecture ({theirs}) than this config's "
                f"({config_to_dict(config)['model']}); set model: to match it",
                settings=("init",),
            )
    return path


def load_initial_weights(model: keras.Model, init: str, config: Config) -> Path:
    """Set `model`'s weights from `init` (see `TrainConfig.init`); returns the file they came from."""
    path = check_init(init, config)
    import deblur.model  # noqa: F401  registers the custom layers for loading

    try:
        source = keras.saving.load_model(path, safe_mode=True, compile=False)
    except Exception as err:  # Keras raises many kinds for a file that is not a model it can read
        raise RunFolderError(
            f"train.init: {path} is not a deblur model ({type(err).__name__}: {str(err)[:200]})", settings=("init",)
        ) from None
    try:
        if is_kernel_aware(model) and not is_kernel_aware(source):
            start_from_network(model, source)
        else:
            model.set_weights(source.get_weights())
    except ValueError as err:
        raise RunFolderError(f"train.init: {path} does not fit this model ({err})", settings=("init",)) from None
    return path


def latest_checkpoint(run: RunFolder) -> str | None:
    import tensorflow as tf

    return tf.train.latest_checkpoint(str(run.checkpoints))


def read_metrics(run: RunFolder, completed_epochs: int) -> list[dict]:
    """Rows of finished epochs up to `completed_epochs`; later rows (from after the last checkpoint) are dropped,
    so a resumed run never records an epoch twice."""
    if not run.metrics.is_file():
        return []
    rows = [json.loads(line) for line in run.metrics.read_text().splitlines() if line.strip()]
    return [row for row in rows if row.get("epoch", 0) <= completed_epochs]


def write_metrics(run: RunFolder, rows: list[dict]) -> None:
    atomic_write_text(run.metrics, "".join(json.dumps(row) + "\n" for row in rows))


def weights_fingerprint(model: keras.Model) -> str:
    digest = hashlib.sha256()
    for weight in model.get_weights():
        digest.update(np.ascontiguousarray(weight, dtype=np.float32).tobytes())
    return digest.hexdigest()[:16]


def save_model(model: keras.Model, config: Config, run: RunFolder) -> Path:
    """Write model.keras as float32 (the precision is chosen again at inference) and the config beside it."""
    exported = build_generator(**asdict(config.model), dtype="float32")
    exported.set_weights(model.get_weights())
    with atomic_path(run.model, suffix=".keras") as tmp:
        exported.save(tmp)
    record_config(run, config)
    return run.model
