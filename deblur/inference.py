"""Deblurring photos of any size with a trained model, each its way (`deblur.ways`): the model run whole when the
photo is small, else in overlapping tiles blended so that no seam shows (`deblur.tiling`). Images are HWC RGB
float32 in [0, 1], as everywhere in deblur."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import get_args

import keras
import numpy as np

from deblur import hardware
from deblur.config import InferencePrecision, check_precision
from deblur.console import Hint
from deblur.errors import DeblurError, SettingError, check_threads, given_log
from deblur.files import as_path, refuse_over_input
from deblur.image_array import ImageArrayError, as_image  # noqa: F401  the error is named deblur.inference's too
from deblur.imageio import format_for, lost_in, read_photo, write_photo
from deblur.min_side import check_min_side
from deblur.model import is_kernel_aware, with_gate
from deblur.paths import EXPORT_RUNTIMES, ModelChoice, choose_model, exported_format, first_time
from deblur.runtime import choose_runtime
from deblur.settings import DeblurSettings
from deblur.shake.tries import ESTIMATES, check_estimates
from deblur.strength import DEFAULT_STRENGTH, blend, check_strength
from deblur.tiling import CALL_PIXELS, DEFAULT_OVERLAP, DEFAULT_TILE, Tiling, check_ensemble, mirrored_out
from deblur.ways import WAYS, Way, check_ensemble_for, way_of

RUN_PRECISIONS = tuple(choice for choice in get_args(InferencePrecision) if choice != "auto")  # what auto becomes


class ModelLoadError(DeblurError, ValueError):
    """The model file is missing or is not a deblur model."""


@dataclass
class Deblurrer:
    """A loaded model and how it runs (runtime, tiles, ensemble), the way it deblurs (`method`: `deblur.ways`) and
    the strength of its result; call it on an HWC RGB float32 image in [0, 1]."""

    model: keras.Model | None  # None under method "kernel", which never runs it
    precision: str = "float32"
    tile: int = DEFAULT_TILE
    overlap: int = DEFAULT_OVERLAP
    call_pixels: int = CALL_PIXELS  # an image this size or smaller goes through whole
    ensemble: int = 1  # mirrored and turned copies of the image, deblurred and averaged (ENSEMBLES)
    strength: float = DEFAULT_STRENGTH  # how much of the model's change to keep (deblur.strength)
    model_file: Path | None = None  # where the weights came from, when loaded from a file
    runner: Callable[[np.ndarray], np.ndarray] | None = None  # the model on an NHWC batch (None: Keras' own)
    runtime: str = "tensorflow"  # the runner's name, for the log line and the identity
    method: str = "network"  # the commands open theirs with the default, kernel-aware (`open_deblurrer`)
    # Camera-shake estimates tried per photo by the ways that estimate one (`deblur.shake.tries`)
    estimates: int = ESTIMATES
    # Beside a kernel-aware model: opens the plain network (same settings) that other ways and clips run, once.
    open_network: Callable[[], Deblurrer] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.model is not None and not isinstance(self.model, keras.Model):  # a path: AttributeError 'inputs'
            raise SettingError(
                f"the model is {type(self.model).__name__}, not a keras.Model: deblur.load_deblurrer(path) opens a "
                "model file",
                settings=("model",),
            )
        if self.precision not in RUN_PRECISIONS:  # a label only (the model holds its dtype), said in the log line
            raise SettingError(
                f"precision must be one of {', '.join(RUN_PRECISIONS)} (the model's own, as load_deblurrer builds it); "
                f"got {self.precision!r}",
                settings=("precision",),
            )
        self._plain_numbers()
        self.kernel_aware = self.model is not None and is_kernel_aware(self.model)
        if self.kernel_aware and self.runner is None:
            self.model = with_gate(self.model)  # its gate beside its output: the kernel-aware way reads it
        self._network: Deblurrer | None = None
        # A compiled predict function: several times less memory than calling the model op by op, and faster.
        if self.model is not None and self.runner is None:
            # XLA was about 2x slower than TensorFlow's graph on CPUs; under JAX it is the compiled path.
            self.model.compile(jit_compile=keras.backend.backend() == "jax")
        self.tiling = Tiling(self.tile, self.overlap, self.call_pixels)
        check_ensemble(self.ensemble)
        check_strength(self.strength)
        check_ensemble_for(way_of(self.method), self.ensemble)
        check_estimates(self.estimates)

    def _plain_numbers(self) -> None:
        """NumPy's numbers among the settings as Python's (those of other kinds are refused by their checks): they go
        into JSON (a clip's work folder, evaluate's scores), where np.int64 had ended a run on a TypeError."""
        for name in ("tile", "overlap", "call_pixels", "ensemble", "strength", "estimates"):
            value = getattr(self, name)
            if isinstance(value, np.integer):
                setattr(self, name, int(value))
            elif isinstance(value, np.floating):
                setattr(self, name, float(value))

    def way(self, method: str | None = None) -> Way:
        """The way `method` (by default this Deblurrer's) runs here; SettingError where it needs a model this runs
        without, or the plain network beside a kernel-aware model and none was given."""
        way = way_of(self.method if method is None else method)
        if way.model_channels and self.model is None:
            raise SettingError(f"method {way.name} needs the model, and this runs without one (method kernel)",
                               settings=("method",))  # fmt: skip
        if way.model_channels == 6 and not self.kernel_aware:
            return WAYS["network"]
        if way.estimates not in (None, self.estimates):
            way = replace(way, estimates=self.estimates)
        if way.model_channels == 3 and self.kernel_aware and self.open_network is None:
            raise SettingError(f"method {way.name} needs a plain network, and this runs a kernel-aware model alone",
                               settings=("method",))  # fmt: skip
        return way

    @property
    def settings(self) -> str:
        """How it runs, for the log line of predict and evaluate: the precision, and the ensemble if any."""
        way = self.way()
        strength = f", strength {100 * self.strength:.0f}%" if self.strength != DEFAULT_STRENGTH else ""
        copies = f", each image averaged over {self.ensemble} mirrored/turned copies" if self.ensemble > 1 else ""
        runs = f"{self.precision} on {self.runtime}{way.summary}{copies}" if way.model_channels else way.summary
        tries = f", the sharpest of {self.estimates} shake estimates" if (way.estimates or 1) > 1 else ""
        return runs + tries + strength

    def estimates_shake(self) -> bool:
        """Whether this Deblurrer's way estimates each photo's camera shake before any model call."""
        return self.way().estimates is not None

    def calls(self, height: int, width: int, ensemble: int | None = None) -> int:
        """How many tiles deblurring a `height` x `width` image runs, over all the copies of the ensemble."""
        return self.tiling.calls(height, width, self.ensemble if ensemble is None else ensemble)

    def identity(self) -> dict:
        """What decides this Deblurrer's output, for caches of its results (the video work folder)."""
        stat = self.model_file.stat() if self.model_file else None
        model = str(self.model_file.resolve()) if stat else None
        found = {"model": model, "model_bytes": stat and stat.st_size, "model_modified_ns": stat and stat.st_mtime_ns}
        settings = ("precision", "runtime", "tile", "overlap", "call_pixels", "ensemble", "strength", "method")
        # only where the way estimates the shake: work folders from before (clips go to the network) stay valid
        estimating = way_of(self.method).estimates is not None
        tries = {"estimates": self.estimates} if estimating and self.estimates > 1 else {}
        return found | {name: getattr(self, name) for name in settings} | tries

    def network(self) -> Deblurrer:
        """This Deblurrer when its model is plain; beside a kernel-aware one, the plain network, opened once."""
        if self.kernel_aware and self._network is None:
            self.way("network")  # refused where no plain network was given
            self._network = self.open_network()
        return self._network if self.kernel_aware else self

    def for_clips(self) -> tuple[Deblurrer, str]:
        """What a clip's frames go through under this method (`Way.clips`), and a note for the clip's report."""
        way = self.way()
        clips = self if way.clips == way.name else replace(self.network(), method=way.clips)
        return clips, way.clips_note

    def frames_per_call(self, height: int, width: int) -> int:
        """How many images of this size one model call takes: as many as fit `call_pixels`; 1 when tiled, with an
        ensemble, or another way than the plain network."""
        plain = self.method == "network" and not self.kernel_aware and self.ensemble == 1
        whole = len(self.tiling.tiles(height, width)) == 1
        return max(1, self.call_pixels // (height * width)) if plain and whole else 1

    def many(self, images: list[np.ndarray]) -> list[np.ndarray]:
        """Deblur images of one size (a clip's frames), `frames_per_call` of them in each model call."""
        if isinstance(images, np.ndarray) and images.ndim != 4:  # one image's rows had each been an image
            raise ImageArrayError(
                f"many() takes a list of images or an NHWC batch, not an array of shape {images.shape}: give one "
                "image to the Deblurrer itself, deblurrer(image)"
            )
        images = list(images)  # a generator had been used up by the shapes' check: "has no len()"
        shapes = {np.shape(image) for image in images}
        if len(shapes) > 1:  # numpy's "all input arrays must have the same shape" had said it of the stack
            listed = ", ".join(str(shape) for shape in sorted(shapes))
            raise ImageArrayError(f"the images are of {len(shapes)} shapes ({listed}): many() takes one shape")
        if len(images) <= 1 or self.strength == 0 or self.frames_per_call(*images[0].shape[:2]) == 1:
            return [self(image) for image in images]
        batch = as_image(np.stack([np.asarray(image) for image in images]), "the images", batch=True)
        check_min_side(batch.shape[2], batch.shape[1], "the image")
        padded, inside = mirrored_out(batch)  # as `Tiling.restored` does one photo: a frame comes out as predict's
        restored = np.asarray(self.run(padded), dtype=np.float32)[inside]
        return [blend(image, out, self.strength) for image, out in zip(batch, restored, strict=True)]

    def __call__(self, image: np.ndarray, on_tiles: Callable[[int], None] | None = None, *, ensemble: int | None = None,
                 strength: float | None = None, method: str | None = None) -> np.ndarray:  # fmt: skip
        """Deblur one image its way; `ensemble`, `strength` and `method` override this Deblurrer's for this call
        (the server's per-request options)."""
        if on_tiles is not None and not callable(on_tiles):  # had been Python's "not callable" mid-way
            raise SettingError(
                f"on_tiles is {type(on_tiles).__name__}: give a function of the tiles run, or None",
                settings=("on_tiles",),
            )
        image = as_image(image)
        check_min_side(image.shape[1], image.shape[0], "the image")
        copies = self.ensemble if ensemble is None else ensemble
        strength = self.strength if strength is None else strength
        check_ensemble(copies)
        check_strength(strength)
        way = self.way(method)
        check_ensemble_for(way, copies)
        if strength == 0:  # the photo itself: nothing to run (the page asks so for a photo it cannot show)
            return image.copy()
        if way.model_channels is None:
            restored = way.deblur(image, None)
            if on_tiles:
                on_tiles(self.calls(*image.shape[:2], copies))
            return blend(image, restored, strength)
        owner = self.network() if way.model_channels == 3 else self  # the plain network beside a kernel-aware model

        def model(given: np.ndarray) -> np.ndarray:
            if on_tiles:
                on_tiles(0)  # the network starts: what the way ran before it (the shake's estimate) is done
            return owner.tiling.ensembled(given, copies=copies, run=owner.run, on_tiles=on_tiles)

        return blend(image, way.deblur(image, model), strength)

    def run(self, batch: np.ndarray) -> np.ndarray:
        """The model on one NHWC batch, in this Deblurrer's runtime."""
        return self.runner(batch) if self.runner is not None else self.model.predict_on_batch(batch)


def check_model_file(path: Path, setting: str = "model") -> None:
    """Refuse what is not a model.keras file before loading it, naming an export of one (deblur runs the .keras
    model; the exports are for other runtimes)."""
    if path.is_dir():
        inside = path / "model.keras"
        kind = (
            f"a run folder: give {inside}"
            if inside.is_file()
            else "a folder (a SavedModel export?): give a model.keras"
        )
        raise ModelLoadError(f"{path} is {kind}", settings=(setting,))
    if not path.is_file():
        raise ModelLoadError(f"model file {path} not found", settings=(setting,))
    exported = exported_format(path)
    if exported:
        raise ModelLoadError(
            f"{path} is an export for {EXPORT_RUNTIMES[exported]}, not a model deblur runs: give the model.keras "
            "it was exported from",
            settings=(setting,),
        )


def load_deblurrer(
    path: str | Path | None,
    *,
    precision: str = "float32",
    tile: int = DEFAULT_TILE,
    overlap: int = DEFAULT_OVERLAP,
    ensemble: int = 1,
    strength: float = DEFAULT_STRENGTH,
    runtime: str = "tensorflow",
    method: str = "network",
    estimates: int = ESTIMATES,
    threads: int | None = None,
    log: Callable[[str], None] = print,
) -> Deblurrer:
    """Load a `model.keras` written by `deblur train` (with `safe_mode=True`): `path` as `deblur.paths.choose_model`
    takes it (a file; "latest"; None or "pretrained", the shipped model, the kernel-aware one for that method).

    precision "bfloat16" rebuilds the model under the mixed_bfloat16 policy from the `config.yaml` beside it;
    "auto" does so where the CPU has native bfloat16 and that file is there, and uses float32 otherwise.
    On the demo model bfloat16 changed validation PSNR by less than 0.001 dB (benchmarks/predict_speed.py).
    `ensemble` > 1 averages that many mirrored/turned copies of each image (TURNS), at that many times the time.
    `method` is the way (`deblur.ways`): "network" (here the default) runs the model alone; "kernel" deblurs by the
    camera-shake kernel path and loads no model; "kernel-aware", the commands' default (`open_deblurrer`), gives
    the kernel-aware network the photo and its deconvolution. `estimates` (1 to 3) camera-shake estimates are tried per
    photo by the ways that estimate one (`deblur.shake.tries`). `runtime` "openvino" runs the model in OpenVINO
    Runtime (`deblur.runtime.openvino`; the first use of a model file converts it, saying so through `log`); there
    "auto" precision is bfloat16 wherever the CPU has it, as OpenVINO needs no config.yaml for it. `threads` limits
    OpenVINO's (TensorFlow's are set for the process, before it starts: `deblur.scale.worker`).
    """
    check_ensemble(ensemble)  # before the slow part
    check_strength(strength)
    check_estimates(estimates)
    way_of(method)
    if runtime not in ("tensorflow", "openvino", "jax"):
        raise SettingError(f"runtime must be tensorflow, openvino or jax here; got {runtime!r}", settings=("runtime",))
    check_threads(threads)
    check_precision(precision)
    log = given_log(log)
    path = choose_model(path, kernel_aware=method == "kernel-aware").path  # None had been Path's TypeError
    check_model_file(path)
    if way_of(method).model_channels is None:  # the model never runs: not loading it saves seconds and hundreds of MB
        return Deblurrer(
            None,
            "float32",
            tile,
            overlap,
            ensemble=ensemble,
            strength=strength,
            model_file=path,
            method=method,
            estimates=estimates,
        )
    import deblur.model  # noqa: F401  registers the custom layers for loading

    try:
        model = keras.saving.load_model(path, safe_mode=True, compile=False)
    except Exception as err:  # Keras raises many kinds for a file that is not a model it can read
        raise ModelLoadError(f"{path} is not a deblur model ({type(err).__name__}: {str(err)[:200]})") from None
    if (
        not isinstance(model, keras.Model)
        or len(model.inputs) != 1
        or tuple(model.inputs[0].shape[1:]) not in ((None, None, 3), (None, None, 6))
        or tuple(model.outputs[0].shape[1:]) != (None, None, 3)
    ):
        raise ModelLoadError(
            f"{path} is a Keras model but not a deblur model (it must map any-size RGB, or RGB and its "
            "deconvolution, to RGB)"
        )
    if runtime == "openvino":
        from deblur.runtime.openvino import OpenVinoRunner, cached_ir

        if precision == "auto":
            precision = "bfloat16" if hardware.native_bfloat16_inference() else "float32"
        converted = with_gate(model) if is_kernel_aware(model) else model  # as a Deblurrer runs it in Keras
        runner = OpenVinoRunner(cached_ir(converted, path, log), precision, threads)
        return Deblurrer(
            model,
            precision,
            tile,
            overlap,
            ensemble=ensemble,
            strength=strength,
            model_file=path,
            runner=runner,
            runtime=f"OpenVINO {runner.version}",
            method=method,
            estimates=estimates,
        )
    call_pixels, label = CALL_PIXELS, "tensorflow"
    if runtime == "jax":
        from deblur.runtime import jax as on_jax

        native = on_jax.native_bfloat16()
        call_pixels = on_jax.gpu_call_pixels(_first_width(model)) or CALL_PIXELS
        label = f"JAX on {on_jax.device_label()}"
    else:
        native = hardware.native_bfloat16_inference()
    if precision == "auto":
        precision = "bfloat16" if native and (path.parent / "config.yaml").is_file() else "float32"
    if precision == "bfloat16":
        model = _rebuild(model, path.parent / "config.yaml", "mixed_bfloat16")
    return Deblurrer(
        model,
        precision,
        tile,
        overlap,
        call_pixels,
        ensemble=ensemble,
        strength=strength,
        model_file=path,
        runtime=label,
        method=method,
        estimates=estimates,
    )


def _first_width(model: keras.Model) -> int:
    """The channels of the model's first convolution (`width` in its config): what its memory grows with."""
    for layer in model.layers:
        if isinstance(layer, keras.layers.Conv2D):
            return int(layer.filters)
    return 64


def _rebuild(model: keras.Model, config_path: Path, policy: str) -> keras.Model:
    from deblur.config import ConfigError, load_config
    from deblur.model import build_generator

    try:
        model_args = asdict(load_config(config_path).model)
    except ConfigError as err:
        raise ModelLoadError(f"bfloat16 inference needs the run's config.yaml beside the model: {err}") from None
    rebuilt = build_generator(**model_args, dtype=policy)
    rebuilt.set_weights(model.get_weights())
    return rebuilt


def open_deblurrer(
    settings: DeblurSettings | str | Path | ModelChoice | None = None,
    *,
    threads: int | None = None,
    log: Callable[[str], None] = print,
    **options,
) -> tuple[Deblurrer, ModelChoice]:
    """The one way a command opens its model: choose it (`settings.model` as `deblur.paths.choose_model` takes it,
    or a choice already made), choose the runtime (`deblur.runtime.choose_runtime`), load it, and say which model
    runs in what. `settings` is a `DeblurSettings`, or the model alone with `options` for DeblurSettings' other
    fields (the defaults are DeblurSettings')."""
    log = given_log(log)
    if not isinstance(settings, DeblurSettings):
        settings = DeblurSettings(settings, **options)
    model, method = settings.model, settings.method
    chosen = model if isinstance(model, ModelChoice) else choose_model(model, kernel_aware=method == "kernel-aware")
    runtime, hint = choose_runtime(settings.runtime)
    loading = asdict(settings) | {"runtime": runtime, "threads": threads, "log": log}
    loading["estimates"] = settings.shake_estimates
    del loading["model"], loading["method"]
    deblurrer = load_deblurrer(chosen.path, **loading, method=method)
    if deblurrer.kernel_aware:
        # The plain network for clips and the network's way: the shipped one, opened when needed.
        network = choose_model("pretrained")
        deblurrer.open_network = partial(load_deblurrer, network.path, **loading, method="network")
    if deblurrer.way().model_channels is None:
        log(f"method: {deblurrer.settings}")
    else:
        log(f"model: {chosen.description}, in {deblurrer.settings}")
    if deblurrer.method == "kernel-aware" and not deblurrer.kernel_aware:
        log(f"{chosen.path} is not a kernel-aware network: it deblurs by itself (--method network)")
    if hint and deblurrer.method != "kernel" and first_time("openvino-hint"):  # about running the model; once
        log(Hint(hint + " (said once)"))
    return deblurrer, chosen


def deblur_image(image: np.ndarray, model: str | Path | Deblurrer | None) -> np.ndarray:
    """Deblur one HWC RGB float32 image in [0, 1] of any size; `model` is a loaded Deblurrer, or what
    `load_deblurrer` takes (a model file; None, the shipped model)."""
    deblurrer = model if isinstance(model, Deblurrer) else load_deblurrer(model)
    return deblurrer(image)


def deblur_file(
    source: str | Path, target: str | Path, model: str | Path | Deblurrer | None, fmt: str | None = None
) -> list[str]:
    """Deblur one image file into another (written atomically); grayscale, alpha and 16-bit are kept where the
    format holds them. The photo itself is never written over. Written as `fmt` (png, jpg, webp, bmp, tiff), by
    default the format the target's suffix names, else png (`deblur.imageio.format_for`). Returns what the format
    could not hold of the photo (`deblur.imageio.lost_in`: "transparency", flattened onto white; "depth", 16 bits
    written as 8), as predict says it; mostly nothing."""
    source, target = as_path(source, "the photo", "source"), as_path(target, "the target", "target")
    refuse_over_input(target, source, "the photo deblurred")  # it had been replaced
    fmt = format_for(target, fmt)  # "out.jpg" had been written as PNG, the default format, without a word
    deblurrer = model if isinstance(model, Deblurrer) else load_deblurrer(model)
    photo = read_photo(source)
    write_photo(target, deblurrer(photo.rgb), photo, fmt)
    return lost_in(fmt, photo)
