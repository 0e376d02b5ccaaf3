"""OpenVINO Runtime for deblur's model: the Keras model converted once to OpenVINO's IR (cached per model file),
compiled for each batch shape it meets, and run on NHWC float32 batches as `keras.Model.predict_on_batch` is.

Compiling for one fixed shape took 0.1 s and ran 7% faster than one compiled for any shape (1280x720, bf16, 2-core
AMD EPYC Zen 4): tiles and video frames repeat their shape, so the last few compiled shapes are kept.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import hashlib
import os
import shutil
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from pathlib import Path

import keras
import numpy as np

from deblur.errors import FULL_DISK, SettingError
from deblur.files import atomic_dir, try_writing_in
from deblur.paths import data_home
from deblur.runtime import OPENVINO_INSTALL

IR_VERSION = 3  # bump when write_ir writes a different IR, so that cached conversions are made again (3: the gate)
COMPILED_SHAPES = 2  # each compiled shape holds its own activation buffers: hundreds of MB at 1080p
# OpenVINO's INFERENCE_PRECISION_HINT for deblur's precision names.
HINTS = {"float32": "f32", "bfloat16": "bf16"}
NO_ROOM_BELOW = 2**20  # bytes free after a failed write: a disk this full is why it failed


def _openvino():
    try:
        import openvino
    except ImportError:
        raise SettingError(f"the OpenVINO runtime needs OpenVINO: {OPENVINO_INSTALL}", settings=("runtime",)) from None
    return openvino


def write_ir(model: keras.Model, path: Path) -> Path:
    """Write `model` (float32) as OpenVINO IR: `path` (an `.xml`) and its `.bin` beside it, the `.bin` put in
    place first so that an `.xml` is only ever seen with its weights. Returns `path`.

    Only the image output is kept. The IR Keras writes also returns every instance norm's output (the forward
    values its custom gradient holds on to): 25 extra outputs that the CPU plugin must write out in full, which
    made it 1.4x slower (1.65 against 1.18 s for 1280x720 in bf16, 2-core AMD EPYC Zen 4).
    """
    ov = _openvino()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".deblur-openvino-", dir=path.parent) as folder, _full_disk_named(path):
        model.export(str(Path(folder) / "keras.xml"), format="openvino", verbose=False)
        full = ov.Core().read_model(str(Path(folder) / "keras.xml"))
        channels = model.outputs[0].shape[-1]  # 3, or 4: the kernel-aware network's gate beside its output
        images = [out for out in full.outputs if _is_image(out, channels)]
        if not images:
            raise ValueError(f"expected an output of {channels} channels in the converted model, found none")
        pruned = ov.Model([images[0]], full.get_parameters(), model.name)
        ov.save_model(pruned, str(Path(folder) / "model.xml"), compress_to_fp16=False)
        os.replace(Path(folder) / "model.bin", path.with_suffix(".bin"))
        os.replace(Path(folder) / "model.xml", path)
    return path


@contextlib.contextmanager
def _full_disk_named(path: Path) -> Iterator[None]:
    """OpenVINO's writers say only "iostream error" when the disk fills: with no room left beside `path`, that is
    the OSError it is, naming `path`. Checked before the partial files go, while they still take the room."""
    try:
        yield
    except RuntimeError as err:
        if "iostream error" not in str(err) or shutil.disk_usage(path.parent).free >= NO_ROOM_BELOW:
            raise
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path)) from err


def _channels(output) -> int | None:
    last = output.get_partial_shape()[-1]
    return last.get_length() if last.is_static else None


def _is_image(output, channels: int) -> bool:
    """NHWC with `channels` channels: the image, not one of the extra outputs (activations, scalars). Keras writes
    the model's own output first, where a narrow test network's activations have as many channels."""
    rank = output.get_partial_shape().rank
    return rank.is_static and rank.get_length() == 4 and _channels(output) == channels


def model_key(model_file: Path) -> str:
    """What names a model file's conversion: its bytes, OpenVINO's version and `IR_VERSION`."""
    digest = hashlib.sha256()
    with open(model_file, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return f"{digest.hexdigest()[:20]}-ov{_openvino().__version__.split('-')[0]}-ir{IR_VERSION}"


def cached_ir(
    model: keras.Model, model_file: Path | None, log: Callable[[str], None] = print, cache: Path | None = None
) -> Path:
    """The IR of `model`, converted on first use and kept under `<data home>/openvino/<model_key>/`; a model that
    changes gets a new key, so a stale conversion is never used. A model with no file is converted into a
    temporary folder each time, removed when the process ends (the runner reads it until then)."""
    if model_file is None:
        folder = Path(tempfile.mkdtemp(prefix="deblur-openvino-"))
        # Each run under a read-only home had left its IR, megabytes, in the temporary folder.
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        return write_ir(model, folder / "model.xml")
    final = (cache or data_home() / "openvino") / model_key(model_file)
    if (final / "model.xml").is_file():
        return final / "model.xml"
    try:
        final.parent.mkdir(parents=True, exist_ok=True)
        try_writing_in(final.parent)  # it may be there already, another user's
    except OSError as err:  # a read-only home (some containers): convert for this run only
        log(f"converting {model_file.name} for OpenVINO (not kept: {final.parent}: {err.strerror})")
        return cached_ir(model, None, log)
    log(f"converting {model_file.name} for OpenVINO (once; kept in {final.parent})")
    try:
        with atomic_dir(final) as folder:
            write_ir(model, folder / "model.xml")
    except OSError as err:
        if err.errno not in FULL_DISK:
            raise
        # the cache's disk is not the outputs': the run had stopped on a cache it can do without
        log(f"not kept: {final.parent}: {err.strerror}; converting for this run only")
        return cached_ir(model, None, log)
    return final / "model.xml"


class OpenVinoRunner:
    """Runs an IR on NHWC float32 batches, compiled per shape (the last `COMPILED_SHAPES` kept); one call at a
    time, as the server's threads may share it."""

    def __init__(self, xml: Path, precision: str = "float32", threads: int | None = None) -> None:
        ov = _openvino()
        self.core = ov.Core()
        self.model = self.core.read_model(str(xml))
        self.config = {"INFERENCE_PRECISION_HINT": HINTS[precision], "PERFORMANCE_HINT": "LATENCY"}
        if threads:
            # A share of the machine, beside other workers: OpenVINO would pin every process's threads to the same
            # first cores (two 1-thread workers on a 2-core Zen 4 took 4.6 s a 1280x720 photo each, unpinned 2.3 s).
            self.config.update({"INFERENCE_NUM_THREADS": threads, "ENABLE_CPU_PINNING": False})
        self.compiled: OrderedDict[tuple[int, ...], object] = OrderedDict()
        self.lock = threading.Lock()
        self.version = ov.__version__.split("-")[0]

    def request(self, shape: tuple[int, ...]):
        if shape in self.compiled:
            self.compiled.move_to_end(shape)
            return self.compiled[shape]
        model = self.model.clone()
        model.reshape(list(shape))
        request = self.core.compile_model(model, "CPU", self.config).create_infer_request()
        self.compiled[shape] = request
        while len(self.compiled) > COMPILED_SHAPES:
            self.compiled.popitem(last=False)
        return request

    def __call__(self, batch: np.ndarray) -> np.ndarray:
        batch = np.ascontiguousarray(batch, dtype=np.float32)
        with self.lock:
            request = self.request(batch.shape)
            request.infer({0: batch})
            return request.get_output_tensor(0).data.copy()
