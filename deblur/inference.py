"""Deblurring photos of any size with a trained model: whole when small, else overlapping tiles blended so that
no seam shows. Images are HWC RGB float32 in [0, 1], as everywhere in deblur."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import get_args

import keras
import numpy as np

from deblur import hardware
from deblur.config import InferencePrecision
from deblur.console import Hint
from deblur.errors import DeblurError, SettingError
from deblur.imageio import ImageReadError, read_photo, write_photo
from deblur.model import MIN_SIDE, is_kernel_aware
from deblur.paths import ModelChoice, choose_model, first_time
from deblur.runtime import DEFAULT_RUNTIME, choose_runtime
from deblur.shake import DEFAULT_METHOD, check_method
from deblur.strength import DEFAULT_STRENGTH, blend, check_strength
from deblur.tiling import (
    CALL_PIXELS,
    DEFAULT_OVERLAP,
    DEFAULT_TILE,
    GRID,
    TURNS,
    check_ensemble,
    grid,
    mirror_to,
    ramp,
    round_up,
    turn,
    turned_shape,
    unturn,
)

SMALL_SIDE = 64  # px: smaller photos are mirrored out to it before the model (`mirrored_out`)


def mirrored_out(batch: np.ndarray) -> tuple[np.ndarray, tuple[slice, ...]]:
    """A batch of images under SMALL_SIDE mirrored out to it, and the index of the images in the result.

    Instance normalization's statistics over the few pixels of a small photo's quarter-resolution maps put colour
    blotches on a 20x20 photo (mean change 0.032, against 0.010 mirrored out to 64 px and 0.007 on a 200 px photo).
    """
    height, width = batch.shape[1:3]
    pad_h, pad_w = max(0, SMALL_SIDE - height), max(0, SMALL_SIDE - width)
    top, left = pad_h // 2, pad_w // 2
    if pad_h or pad_w:
        batch = np.pad(batch, ((0, 0), (top, pad_h - top), (left, pad_w - left), (0, 0)), mode="symmetric")
    return batch, (slice(None), slice(top, top + height), slice(left, left + width))


class ModelLoadError(DeblurError, ValueError):
    """The model file is missing or is not a deblur model."""


class ImageTooSmallError(ImageReadError):
    """The image is under the model's smallest side (`deblur.model.MIN_SIDE`)."""


def check_min_side(width: int, height: int, name: str) -> None:
    """The one check that an image is large enough for the model, for every way an image comes in."""
    if min(width, height) < MIN_SIDE:
        raise ImageTooSmallError(f"{name}: {width}x{height} is too small (at least {MIN_SIDE} px a side)")


@dataclass
class Deblurrer:
    """A loaded model with its tiling settings; call it on an HWC RGB float32 image in [0, 1]."""

    model: keras.Model | None  # None under method "kernel", which never runs it
    precision: str = "float32"
    tile: int = DEFAULT_TILE
    overlap: int = DEFAULT_OVERLAP
    call_pixels: int = CALL_PIXELS  # an image this size or smaller goes through whole
    ensemble: int = 1  # mirrored and turned copies of the image, deblurred and averaged (ENSEMBLES)
    strength: float = DEFAULT_STRENGTH  # how much of the model's change to keep (deblur.strength)
    model_file: Path | None = None  # where the weights came from, when loaded from a file
    # What runs the model on an NHWC batch (`deblur.runtime`): None is TensorFlow, the Keras model itself.
    runner: Callable[[np.ndarray], np.ndarray] | None = None
    runtime: str = "tensorflow"  # the runner's name, for the log line and the identity
    # kernel-aware (the kernel-aware model, given the photo and its deconvolution), network (a plain model), kernel
    # (`deblur.shake`) or auto (a choice per image). A Deblurrer of a model runs that model unless asked; the
    # commands open theirs with DEFAULT_METHOD (`open_deblurrer`). kernel-aware with a plain model runs it alone.
    method: str = "network"
    # With a kernel-aware model: how to open the plain network (same settings) that clips and the network's and
    # auto's ways run, called once, when first needed (`open_deblurrer` sets it to the shipped network).
    open_network: Callable[[], Deblurrer] | None = field(default=None, compare=False, repr=False)
    # Which way the last image went, "network" or "kernel": auto's choice, for predict's per-photo line.
    last_way: str | None = field(default=None, init=False, compare=False, repr=False)
    # Whether auto left the last image to the network as sharp somewhere, but not by much (`Choice.maybe_shaken`).
    last_maybe_shaken: bool = field(default=False, init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        self.kernel_aware = self.model is not None and is_kernel_aware(self.model)
        self._network: Deblurrer | None = None
        # A compiled predict function: several times less memory than calling the model op by op, and faster.
        if self.model is not None and self.runner is None:
            # XLA was about 2x slower than TensorFlow's graph on CPUs; under JAX it is the compiled path.
            self.model.compile(jit_compile=keras.backend.backend() == "jax")
        if self.tile < 8 * GRID or self.tile % GRID:
            raise SettingError(
                f"tile must be a multiple of {GRID} and at least {8 * GRID}: {self.tile}", settings=("tile",)
            )
        check_ensemble(self.ensemble)
        check_strength(self.strength)
        check_method(self.method)
        if not 0 <= self.overlap < self.tile // 2:
            raise SettingError(
                f"overlap must be at least 0 and less than half of the tile ({self.tile}): {self.overlap}",
                settings=("overlap", "tile"),
            )

    def tiles(self, height: int, width: int) -> list[tuple[int, int, int, int]]:
        """(top, left, tile height, tile width) of every tile; one tile when the image fits the budget.

        The tiles form the smallest grid whose tiles are at most `tile` a side and share at least `overlap`
        pixels, each shrunk to what that grid needs: less overlap to compute twice than fixed-size tiles.
        """
        if height * width <= self.call_pixels:
            return [(0, 0, height, width)]
        tile_h, tops = grid(round_up(height), self.tile, self.overlap)
        tile_w, lefts = grid(round_up(width), self.tile, self.overlap)
        return [(top, left, tile_h, tile_w) for top in tops for left in lefts]

    @property
    def settings(self) -> str:
        """How it runs, for the log line of predict and evaluate: the precision, and the ensemble if any."""
        copies = f", each image averaged over {self.ensemble} mirrored/turned copies" if self.ensemble > 1 else ""
        strength = f", strength {100 * self.strength:.0f}%" if self.strength != DEFAULT_STRENGTH else ""
        if self.method == "kernel":
            return "the camera-shake kernel path, not the model" + strength
        auto = ", or the camera-shake kernel path where a photo is blurred all over" if self.method == "auto" else ""
        aware = ", given the kernel path's deconvolution" if self.method == "kernel-aware" and self.kernel_aware else ""
        return f"{self.precision} on {self.runtime}" + aware + copies + strength + auto

    def calls(self, height: int, width: int, ensemble: int | None = None) -> int:
        """How many tiles deblurring a `height` x `width` image runs, over all the copies of the ensemble."""
        copies = self.ensemble if ensemble is None else ensemble
        return sum(len(self.tiles(*turned_shape((height, width), copy))) for copy in TURNS[:copies])

    def identity(self) -> dict:
        """What decides this Deblurrer's output, for caches of its results (the video work folder)."""
        stat = self.model_file.stat() if self.model_file else None
        return {
            "model": str(self.model_file.resolve()) if self.model_file else None,
            "model_bytes": stat.st_size if stat else None,
            "model_modified_ns": stat.st_mtime_ns if stat else None,
            "precision": self.precision,
            "runtime": self.runtime,
            "tile": self.tile,
            "overlap": self.overlap,
            "call_pixels": self.call_pixels,
            "ensemble": self.ensemble,
            "strength": self.strength,
            "method": self.method,
        }

    def check_call_method(self, method: str) -> None:
        """A method a call may ask for: any, or only kernel when no model was loaded (SettingError)."""
        check_method(method)
        if method != "kernel" and self.model is None:
            raise SettingError(
                f"method {method} needs the model, and this runs without one (method kernel)", settings=("method",)
            )
        if method in ("network", "auto") and self.kernel_aware and self.open_network is None:
            raise SettingError(
                f"method {method} needs a plain network, and this runs a kernel-aware model alone",
                settings=("method",),
            )

    @property
    def effective_method(self) -> str:
        """The method as it runs: kernel-aware with a plain model runs as the network."""
        return "network" if self.method == "kernel-aware" and not self.kernel_aware else self.method

    @property
    def last_choice(self) -> str | None:
        """Under auto, the way the last image went ("network" or "kernel"), as predict and Ray report it; None
        under a fixed method."""
        return self.last_way if self.method == "auto" else None

    def network(self) -> Deblurrer:
        """This Deblurrer itself when its model is plain; with a kernel-aware model, the plain network beside it
        (`open_network`), opened on first use."""
        if not self.kernel_aware:
            return self
        if self._network is None:
            if self.open_network is None:
                raise SettingError(
                    "this runs a kernel-aware model alone: no plain network to run", settings=("method",)
                )
            self._network = self.open_network()
        return self._network

    def for_clips(self) -> tuple[Deblurrer, str]:
        """Under kernel-aware, kernel or auto, what a clip's frames go through instead, and a note for the clip's
        report.

        The kernel path estimates each frame's shake on its own, so its results jump from frame to frame
        (benchmarks/video_flicker.py: 3.69 levels between frames against the input's 2.10 and the network's 1.65),
        and auto would switch ways between frames: kernel-aware and auto send clips to the network; kernel, asked
        for, stays."""
        if self.method in ("auto", "kernel-aware"):
            if self.method == "auto":
                note = "clips go to the network under --method auto (a choice per frame would flicker)"
            elif self.kernel_aware:
                note = (
                    "clips go to the network under --method kernel-aware, the default (each frame's own kernel "
                    "estimate would flicker)"
                )
            else:  # a plain model under the default runs as the network anyway: nothing to say
                note = ""
            return replace(self.network(), method="network"), note
        if self.method == "kernel":
            return (
                self,
                "--method kernel estimates each frame's shake on its own: expect flicker; the network is steadier",
            )
        return self, ""

    def frames_per_call(self, height: int, width: int) -> int:
        """How many images of this size one model call takes: as many as fit `call_pixels`, 1 when tiled or
        without the model."""
        if len(self.tiles(height, width)) > 1 or self.ensemble > 1 or self.method != "network" or self.kernel_aware:
            return 1
        return max(1, self.call_pixels // (height * width))

    def many(self, images: list[np.ndarray]) -> list[np.ndarray]:
        """Deblur images of one size (a clip's frames), `frames_per_call` of them in each model call."""
        if len(images) == 1 or self.frames_per_call(*images[0].shape[:2]) == 1:
            return [self(image) for image in images]
        batch = np.stack([np.asarray(image, dtype=np.float32) for image in images])
        check_min_side(batch.shape[2], batch.shape[1], "the image")
        padded, inside = mirrored_out(batch)  # as `_restore` does one photo, so a frame comes out as predict's
        restored = np.asarray(self.run(padded), dtype=np.float32)[inside]
        return [blend(image, out, self.strength) for image, out in zip(batch, restored, strict=True)]

    def __call__(
        self,
        image: np.ndarray,
        on_tiles: Callable[[int], None] | None = None,
        *,
        ensemble: int | None = None,
        strength: float | None = None,
        method: str | None = None,
    ) -> np.ndarray:
        """Deblur one image; `ensemble`, `strength` and `method` override this Deblurrer's for this call (the
        server's per-request options)."""
        image = np.asarray(image, dtype=np.float32)
        height, width = image.shape[:2]
        check_min_side(width, height, "the image")
        copies = self.ensemble if ensemble is None else ensemble
        check_ensemble(copies)
        strength = self.strength if strength is None else strength
        check_strength(strength)
        method = self.method if method is None else method
        self.check_call_method(method)
        self.last_maybe_shaken = False
        if strength == 0:  # the photo itself: nothing to run (the page asks so for a photo it cannot show)
            self.last_way = None
            return image.copy()
        if self.kernel_aware and method in ("network", "auto"):
            network = self.network()
            restored = network(image, on_tiles, ensemble=copies, strength=strength, method=method)
            self.last_way, self.last_maybe_shaken = network.last_way, network.last_maybe_shaken
            return restored
        if method == "kernel-aware" and self.kernel_aware:
            from deblur.shake.restore import deconvolved  # scipy's FFTs, only when used

            self.last_way = "kernel-aware"
            stacked = np.concatenate([image, deconvolved(image)], axis=2)
            return blend(image, self._ensemble(stacked, copies, on_tiles), strength)
        if method not in ("network", "kernel-aware"):
            from deblur.shake.choose import choose  # scipy's FFTs, only when used
            from deblur.shake.restore import restore

            if method == "kernel":
                restored = restore(image)
            else:
                choice = choose(image)
                restored, self.last_maybe_shaken = choice.deblurred, choice.maybe_shaken
            if restored is not None:
                self.last_way = "kernel"
                if on_tiles:
                    on_tiles(self.calls(height, width, copies))
                return blend(image, restored, strength)
        self.last_way = "network"
        return blend(image, self._ensemble(image, copies, on_tiles), strength)

    def _ensemble(self, image: np.ndarray, copies: int, on_tiles: Callable[[int], None] | None) -> np.ndarray:
        """The model's result on `image` (3 channels, or 6 for the kernel-aware model), averaged over `copies`
        mirrored and turned copies."""
        if copies == 1:
            return self._restore(image, on_tiles)
        total = np.zeros(image.shape[:2] + (3,), np.float32)
        for copy in TURNS[:copies]:
            restored = self._restore(np.ascontiguousarray(turn(image, copy)), on_tiles)
            total += unturn(restored, copy)
        total /= copies
        return total

    def run(self, batch: np.ndarray) -> np.ndarray:
        """The model on one NHWC batch, in this Deblurrer's runtime."""
        return self.runner(batch) if self.runner is not None else self.model.predict_on_batch(batch)

    def _restore(self, image: np.ndarray, on_tiles: Callable[[int], None] | None) -> np.ndarray:
        height, width = image.shape[:2]
        tiles = self.tiles(height, width)
        if len(tiles) == 1:
            padded, inside = mirrored_out(image[None])
            result = np.asarray(self.run(padded))[inside][0]
            if on_tiles:
                on_tiles(1)
            return result
        tile_h, tile_w = tiles[0][2], tiles[0][3]
        weight = np.outer(ramp(tile_h, self.overlap), ramp(tile_w, self.overlap))[:, :, None]
        total = np.zeros((height, width, 3), np.float32)
        weights = np.zeros((height, width, 1), dtype=np.float32)
        per_call = max(1, self.call_pixels // (tile_h * tile_w))
        for first in range(0, len(tiles), per_call):
            chunk = tiles[first : first + per_call]
            batch = np.stack([mirror_to(image[t : t + tile_h, x : x + tile_w], tile_h, tile_w) for t, x, _, _ in chunk])
            restored = np.asarray(self.run(batch))
            for (top, left, _, _), piece in zip(chunk, restored, strict=True):
                # Edge tiles reach past the image by up to GRID - 1 mirrored pixels: keep only the image part.
                h, w = min(tile_h, height - top), min(tile_w, width - left)
                total[top : top + h, left : left + w] += piece[:h, :w] * weight[:h, :w]
                weights[top : top + h, left : left + w] += weight[:h, :w]
            if on_tiles:
                on_tiles(len(chunk))
        total /= weights  # in place: at 24 megapixels each float image is 288 MB
        return total


def load_deblurrer(
    path: str | Path,
    *,
    precision: str = "float32",
    tile: int = DEFAULT_TILE,
    overlap: int = DEFAULT_OVERLAP,
    ensemble: int = 1,
    strength: float = DEFAULT_STRENGTH,
    runtime: str = "tensorflow",
    method: str = "network",
    threads: int | None = None,
    log: Callable[[str], None] = print,
) -> Deblurrer:
    """Load a `model.keras` written by `deblur train` (with `safe_mode=True`).

    precision "bfloat16" rebuilds the model under the mixed_bfloat16 policy from the `config.yaml` beside it;
    "auto" does so where the CPU has native bfloat16 and that file is there, and uses float32 otherwise.
    On the demo model bfloat16 changed validation PSNR by less than 0.001 dB (benchmarks/predict_speed.py).
    `ensemble` > 1 averages that many mirrored/turned copies of each image (TURNS), at that many times the time.
    `method` "network" (here the default) runs the model; "kernel" deblurs by the camera-shake kernel path
    (`deblur.shake`) instead (tiles and the ensemble are the model's), and "auto", the commands' default
    (`open_deblurrer`), chooses between them per image (`deblur.shake.choose`). `runtime`
    "openvino" runs the model in OpenVINO Runtime (`deblur.runtime.openvino`; the first use of a model file
    converts it, saying so through `log`); there "auto" precision is bfloat16 wherever the CPU has it, as OpenVINO
    needs no config.yaml for it. `threads` limits
    OpenVINO's (TensorFlow's are set for the process, before it starts: `deblur.scale.worker`).
    """
    check_ensemble(ensemble)  # before the slow part
    check_strength(strength)
    check_method(method)
    if runtime not in ("tensorflow", "openvino", "jax"):
        raise SettingError(f"runtime must be tensorflow, openvino or jax here; got {runtime!r}", settings=("runtime",))
    if precision not in get_args(InferencePrecision):
        choices = ", ".join(get_args(InferencePrecision))
        raise SettingError(f"precision must be one of {choices}; got {precision!r}", settings=("precision",))
    path = Path(path)
    if not path.is_file():
        raise ModelLoadError(f"model file {path} not found")
    if method == "kernel":  # the model never runs: not loading it saves seconds and hundreds of MB
        return Deblurrer(
            None, "float32", tile, overlap, ensemble=ensemble, strength=strength, model_file=path, method=method
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
        runner = OpenVinoRunner(cached_ir(model, path, log), precision, threads)
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
    model: str | Path | ModelChoice | None,
    *,
    precision: str = "auto",
    tile: int = DEFAULT_TILE,
    overlap: int = DEFAULT_OVERLAP,
    ensemble: int = 1,
    strength: float = DEFAULT_STRENGTH,
    runtime: str = DEFAULT_RUNTIME,
    method: str = DEFAULT_METHOD,
    threads: int | None = None,
    log: Callable[[str], None] = print,
) -> tuple[Deblurrer, ModelChoice]:
    """The one way a command opens its model: choose it (`model` as `deblur.paths.choose_model` takes it, or a
    choice already made), choose the runtime (`deblur.runtime.choose_runtime`), load it, and say which model runs
    in what."""
    chosen = model if isinstance(model, ModelChoice) else choose_model(model, kernel_aware=method == "kernel-aware")
    runtime, hint = choose_runtime(runtime)
    settings = dict(precision=precision, tile=tile, overlap=overlap, ensemble=ensemble, strength=strength)
    settings.update(runtime=runtime, threads=threads)
    deblurrer = load_deblurrer(chosen.path, **settings, method=method, log=log)
    if deblurrer.kernel_aware:
        # The plain network for clips and for the network's and auto's ways: the shipped one, opened when needed.
        network = choose_model("pretrained")
        deblurrer.open_network = partial(load_deblurrer, network.path, **settings, method="network", log=log)
    if deblurrer.method == "kernel":
        log(f"method: {deblurrer.settings}")
    else:
        log(f"model: {chosen.description}, in {deblurrer.settings}")
    if deblurrer.method == "kernel-aware" and not deblurrer.kernel_aware:
        log(f"{chosen.path} is not a kernel-aware network: it deblurs by itself (--method network)")
    if hint and deblurrer.method != "kernel" and first_time("openvino-hint"):  # about running the model; once
        log(Hint(hint + " (said once)"))
    return deblurrer, chosen


def deblur_image(image: np.ndarray, model: str | Path | Deblurrer) -> np.ndarray:
    """Deblur one HWC RGB float32 image in [0, 1] of any size; `model` is a model file or a loaded Deblurrer."""
    deblurrer = model if isinstance(model, Deblurrer) else load_deblurrer(model)
    return deblurrer(image)


def deblur_file(source: str | Path, target: str | Path, model: str | Path | Deblurrer, fmt: str = "png") -> None:
    """Deblur one image file into another (written atomically); grayscale, alpha and 16-bit are kept."""
    deblurrer = model if isinstance(model, Deblurrer) else load_deblurrer(model)
    photo = read_photo(source)
    write_photo(target, deblurrer(photo.rgb), photo, fmt)
