"""Typed configuration, loaded from YAML with unknown keys refused.

The `model` block is exactly the keyword arguments of `deblur.model.build_generator`, so a config file and the
model can never drift apart. The resolved config is written next to every trained model (`config.yaml`), which is
all `predict` needs besides the `.keras` file.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import re
import types
import typing
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Literal, get_args

import numpy as np
import yaml

from deblur.errors import (
    DeblurError,
    SettingError,
    check_choice,
    is_list_of_strings,
    is_real_number,
    is_whole_number,
)


class ConfigError(DeblurError, ValueError):
    """A config file or override is malformed: names the file and the key."""


# === Choices ===
# Each set of allowed values is written once, here: the config checks against it, the CLI offers it, and the
# error messages list it.

Norm = Literal["instance", "batch", "none"]
Blur = Literal["kernel", "motion"]
KernelPath = Literal["shake", "smooth", "mixed"]
LrScaling = Literal["sqrt", "linear", "none"]
Schedule = Literal["constant", "cosine"]
Loss = Literal["l1", "charbonnier"]
Strategy = Literal["auto", "default", "mirrored", "multi-worker"]
Precision = Literal["auto", "float32", "mixed_float16", "mixed_bfloat16"]  # the training policy
InferencePrecision = Literal["auto", "float32", "bfloat16"]
EvaluationSplit = Literal["auto", "val", "train", "all"]
TimingsPreset = Literal["quick", "paper"]
# Seeds (training's, the blur recipe's, a clip's windows'): what Keras' and NumPy's generators take; -1 had ended in
# their ValueError's traceback.
MAX_SEED = 2**32 - 1


def check_precision(precision: str) -> None:
    """Refuse a precision to deblur in that is none of `InferencePrecision`'s."""
    check_choice("precision", precision, get_args(InferencePrecision))


# === Sections ===


@dataclass
class ModelConfig:
    width: int = 64  # channels of the first conv; the residual blocks run at 4x this width
    blocks: int = 9  # residual blocks at quarter resolution (DeblurGAN: 9)
    norm: Norm = "instance"
    dropout: float = 0.0  # inside each residual block, as DeblurGAN's optional dropout
    zero_init_output: bool = True  # last conv starts at zero: the network starts as the identity
    # given the photo and the kernel path's deconvolution of it (6 channels; pairs with deconvolved/)
    kernel_aware: bool = False

    def __post_init__(self) -> None:
        # as `build_generator`'s arguments too: "64" had been a TypeError, 64.5 Keras' "evenly divisible" error
        _check_types(self, "model.")
        _check_choice("model.norm", self.norm, Norm)
        _check_positive("model.width", self.width)
        _check_range("model.blocks", self.blocks, 0, 64)
        _check_range("model.dropout", self.dropout, 0.0, 0.99)


SMALLEST_MAX_SIDE = 16  # px: the least longer side `data synth --max-side` scales photos to


@dataclass
class SynthConfig:
    """Synthetic camera-shake blur, used by the embedded demo dataset and `deblur data synth`."""

    min_length: float = 3.0  # extent of the shake trajectory, in pixels
    max_length: float = 11.0
    noise: float = 0.01  # std of Gaussian noise added to the blurry image, in [0, 1] units (with min_noise: the most)
    pairs_per_photo: int = 4  # different blurs per source photo
    seed: int = 0
    # which photos `deblur data synth` holds out (None: seed's choice); a later stage of a recipe sets its first
    # stage's seed here so that new blurs never reach the photos its evaluation holds out
    holdout_seed: int | None = None
    # kernel: one shake kernel convolved over the whole photo (uniform blur, its kernel saved with the pair);
    # motion: the photo moved along a camera path and averaged, GOPRO's recipe (blur that varies across the photo)
    blur: Blur = "kernel"
    linear_light: bool = False  # blur in linear light (gamma 2.2), as light adds up in a sensor
    max_rotation: float = 0.0  # motion: the largest camera roll over the exposure, in degrees
    max_zoom: float = 0.0  # motion: the largest change of scale over the exposure (0.02 = 2%)
    # kernel: 0 blurs with a continuous exposure, aligned with the sharp photo on average; otherwise the kernel is
    # min_frames to max_frames video frames along the path with the sharp photo the middle one, GOPRO's recipe
    min_frames: int = 0
    max_frames: int = 0
    # kernel: the camera path; shake wanders (long handheld exposures), smooth is a line or gentle arc (short
    # exposures, GOPRO's real pairs), mixed draws either with equal chance
    path: KernelPath = "shake"
    # kernel: the share of photos whose blur varies across the picture (the kernel over random soft-edged regions,
    # elsewhere a kernel of at most min_length px or none), as near objects and moving subjects make it
    varying: float = 0.0
    # a std drawn per blurry photo from min_noise to noise; None: always noise. Real blurry photos range from
    # nearly clean (GOPRO's, averaged frames: about 0.002) to a phone's low light; one level trains for one of them
    min_noise: float | None = None
    # --- The kernel-aware network's recipe (configs/kernel-aware.yaml): each share is of pairs, drawn per pair ---
    linear_share: float = 0.0  # blurred in linear light (all of them with linear_light)
    frames_share: float = 1.0  # with max_frames: made by GOPRO's frames recipe (the others by a continuous exposure)
    sharp_share: float = 0.0  # left sharp (noise and JPEG only): what a sharp photo must come back as
    # left unmoved but soft: the photo softened first, the sharp one too, as a soft lens, focus just missed or a
    # video frame is (GOPRO's sharp frames): the blind estimate finds a small blob there, and its deconvolution
    # sharpens past the photo, which the network must not keep
    soft_share: float = 0.0
    clipped_share: float = 0.0  # with the brightest lights made brighter than white before the blur, then clipped
    jpeg_share: float = 0.0  # the blurry photo saved as a JPEG of quality 70 to 95 and read back
    # lengths drawn log-uniformly (as many 3-6 px shakes as 30-60 px ones), at most 12% of the photo's long side
    log_length: bool = False
    # write the kernel path's deconvolution of each blurry photo beside it (deconvolved/), the kernel-aware
    # network's second input: by the blind estimate for `estimated_share` of the pairs (and every pair without one
    # kernel), else by the true kernel with the errors an estimate makes (`deblur.data.kernel_errors`)
    deconvolve: bool = False
    estimated_share: float = 0.5

    def __post_init__(self) -> None:
        # Floats stay floats whether written 7 or 7.0: the demo dataset's folder name hashes these values.
        _check_types(self, "data.synth.")
        _check_positive("data.synth.min_length", self.min_length)
        _check_positive("data.synth.max_length", self.max_length)
        if self.max_length < self.min_length:
            raise ConfigError("data.synth.max_length must be >= data.synth.min_length")
        _check_range("data.synth.noise", self.noise, 0.0, 0.5)
        if self.min_noise is not None:
            _check_range("data.synth.min_noise", self.min_noise, 0.0, self.noise)
        _check_positive("data.synth.pairs_per_photo", self.pairs_per_photo)
        _check_range("data.synth.seed", self.seed, 0, MAX_SEED)
        if self.holdout_seed is not None:
            _check_range("data.synth.holdout_seed", self.holdout_seed, 0, MAX_SEED)
        _check_choice("data.synth.blur", self.blur, Blur)
        self.max_rotation, self.max_zoom = float(self.max_rotation), float(self.max_zoom)
        _check_range("data.synth.max_rotation", self.max_rotation, 0.0, 45.0)
        _check_range("data.synth.max_zoom", self.max_zoom, 0.0, 0.5)
        _check_range("data.synth.min_frames", self.min_frames, 0, 1000)
        _check_range("data.synth.max_frames", self.max_frames, 0, 1000)
        if self.max_frames and not 2 <= self.min_frames <= self.max_frames:
            raise ConfigError("data.synth.min_frames must be at least 2 and at most data.synth.max_frames")
        if self.min_frames and not self.max_frames:
            raise ConfigError("data.synth.min_frames needs data.synth.max_frames")
        _check_choice("data.synth.path", self.path, KernelPath)
        self.varying = float(self.varying)
        _check_range("data.synth.varying", self.varying, 0.0, 1.0)
        if self.varying and self.blur != "kernel":
            raise ConfigError("data.synth.varying needs data.synth.blur=kernel")
        if self.path != "shake" and self.blur != "kernel":
            raise ConfigError("data.synth.path needs data.synth.blur=kernel")
        if self.max_frames and self.blur != "kernel":
            raise ConfigError("data.synth.max_frames and data.synth.min_frames need data.synth.blur=kernel")
        shares = ("linear_share", "frames_share", "sharp_share", "soft_share", "clipped_share", "jpeg_share")
        for key in (*shares, "estimated_share"):
            setattr(self, key, float(getattr(self, key)))
            _check_range(f"data.synth.{key}", getattr(self, key), 0.0, 1.0)
        if self.sharp_share + self.soft_share > 1:
            raise ConfigError(
                f"data.synth.sharp_share + data.synth.soft_share is {self.sharp_share + self.soft_share:g}: at most 1 "
                "(shares of the same pairs)"
            )
        if self.frames_share < 1 and not self.max_frames:
            raise ConfigError("data.synth.frames_share needs data.synth.max_frames")
        if self.log_length and self.blur != "kernel":
            raise ConfigError("data.synth.log_length needs data.synth.blur=kernel")
        if self.blur == "kernel" and (self.max_rotation or self.max_zoom):
            raise ConfigError(
                "data.synth.max_rotation and data.synth.max_zoom need data.synth.blur=motion (a kernel is uniform)"
            )
        if self.estimated_share != type(self).estimated_share and not self.deconvolve:  # its default: unused
            raise ConfigError("data.synth.estimated_share needs data.synth.deconvolve")

    @property
    def photo_seed(self) -> int:
        """The seed that chooses the held-out photos."""
        return self.seed if self.holdout_seed is None else self.holdout_seed


# What each recipe setting means to someone choosing it on the command line (`deblur data synth` makes an option
# of every key here, named as the key: --pairs-per-photo, --min-length, ...); the checks above bound them.
SYNTH_HELP = {
    "pairs_per_photo": "Blurry versions of each photo.",
    "seed": "Makes the blur and noise reproducible.",
    "holdout_seed": "Chooses the photos held out in test/ (default: --seed's); keep it across stages.",
    "blur": "kernel: one shake kernel over the photo; motion: the photo moved along a camera path.",
    "min_length": "Shortest camera-shake path, in pixels.",
    "max_length": "Longest camera-shake path, in pixels.",
    "max_rotation": "Motion blur: largest camera roll over the exposure, degrees.",
    "max_zoom": "Motion blur: largest change of scale over the exposure (0.02).",
    "path": "Kernel blur: shake (a wandering path), smooth (a line or arc, as GOPRO's) or mixed.",
    "varying": "Kernel blur: share of photos blurred in random regions only (sharp or mild elsewhere).",
    "min_frames": "Kernel blur: fewest video frames per exposure, sharp = the middle one (GOPRO's 7).",
    "max_frames": "Kernel blur: most video frames per exposure (GOPRO's 13); 0: continuous.",
    "linear_light": "Blur in linear light (gamma 2.2).",
    "noise": "Gaussian noise std, in [0, 1] units (largest, with --min-noise).",
    "min_noise": "Draw each photo's noise std from this to --noise (default: always --noise).",
    "linear_share": "Share of pairs blurred in linear light (all with --linear-light).",
    "frames_share": "With --max-frames: share of pairs made by GOPRO's frames recipe.",
    "sharp_share": "Share of pairs left sharp (noise and JPEG only).",
    "soft_share": "Share of pairs left unblurred but soft (a Gaussian of 0.6-1.5 px on both photos), as video "
    "frames are.",
    "clipped_share": "Share of pairs whose brightest lights are clipped, as night lights are.",
    "jpeg_share": "Share of blurry photos saved as JPEG (quality 70-95) and read back.",
    "log_length": "Draw shake lengths log-uniformly, at most 12% of the photo's long side.",
    "deconvolve": "Also write the kernel path's deconvolution of each blurry photo (deconvolved/), for the "
    "kernel-aware network.",
    "estimated_share": "With --deconvolve: share deconvolved by the blind estimate (the rest by the true kernel, "
    "with an estimate's errors).",
}


# The smallest training patch (the generator takes 5 px a side, `deblur.min_side`; 8 it needs no padding for) and
# validation crop (validation scores SSIM, whose window is 11 px a side: `deblur.losses.SSIM_WINDOW`).
MIN_PATCH_SIZE = 8
MIN_VAL_CROP = 11


def check_recipe(synth: object) -> None:
    """Refuse a blur recipe that is no SynthConfig, naming the one to give (a name or dict had failed far on, as a
    TypeError of vars() or an AttributeError of its first setting)."""
    if not isinstance(synth, SynthConfig):
        raise SettingError(
            f"the recipe is {type(synth).__name__}: give a deblur.config.SynthConfig, or None for the default one",
            settings=("synth",),
        )


# The recipe keys only `deblur data synth` makes: a device-pairs recipe that sets them is refused, not changed.
DEVICE_CPU_ONLY = ("varying", "soft_share", "clipped_share", "jpeg_share")


@dataclass
class DataConfig:
    root: str | None = None  # a GOPRO-layout or blur/ + sharp/ folder; None: the embedded demo dataset
    patch_size: int = 256
    batch_size: int = 4  # per replica: the global batch is this times the number of replicas
    parallel: bool = True  # decode and augment with parallel map calls
    cache: str = "memory"  # memory | none | a path prefix: tf.data's cache in files, one per set of pairs
    prefetch: bool = True
    augment: bool = True  # random flips and 90-degree rotations, the same on both images of a pair
    val_crop: int | None = 256  # fixed centre crop for validation; None validates whole images
    val_limit: int | None = None  # validate on at most this many pairs (None: all)
    skip_bad_images: bool = False  # leave out (and count) pairs with unreadable files instead of stopping
    synth: SynthConfig = field(default_factory=SynthConfig)
    # Make each batch's blur, noise and deconvolution on the device the model trains on (JAX loop), from the sharp
    # photos of the training pairs and `synth`'s recipe; validation keeps the stored pairs (`deblur.data.device_pairs`)
    device_pairs: bool = False

    def __post_init__(self) -> None:
        _check_types(self, "data.")
        self.root, self.cache = _home(self.root), _home(self.cache)
        if self.device_pairs:
            if self.synth.blur != "kernel":
                raise ConfigError("data.device_pairs makes kernel blur only: set data.synth.blur=kernel")
            used = [key for key in DEVICE_CPU_ONLY if getattr(self.synth, key)]
            if used:
                keys = ", ".join(f"data.synth.{key}" for key in used)
                raise ConfigError(
                    f"data.device_pairs does not make {keys}: set them to 0, or make the pairs with deblur data synth"
                )
        _check_at_least("data.patch_size", self.patch_size, MIN_PATCH_SIZE, "the smallest the model trains on")
        _check_positive("data.batch_size", self.batch_size)
        if self.val_crop is not None:
            _check_at_least("data.val_crop", self.val_crop, MIN_VAL_CROP, "SSIM's window, which validation scores")
        if self.val_limit is not None:
            _check_positive("data.val_limit", self.val_limit)


@dataclass
class TrainConfig:
    epochs: int = 5
    steps_per_epoch: int | None = 200  # None: one pass over the training pairs
    learning_rate: float = 1e-4  # for one replica; see lr_scaling
    # With R replicas the global batch is R times larger; the rate becomes learning_rate x sqrt(R) (square-root
    # scaling, the usual rule for Adam: Malladi et al., 2022), x R (linear, Goyal et al., 2017, for SGD), or
    # stays (none).
    lr_scaling: LrScaling = "sqrt"
    schedule: Schedule = "constant"  # cosine decays to 0 over all steps, after the warm-up
    warmup_steps: int = 0  # linear warm-up from 0; Adam's first steps are the ones most likely to diverge
    loss: Loss = "l1"
    perceptual_weight: float = 0.0  # > 0 adds a VGG16 conv3_3 feature loss; needs vgg_weights
    # > 0 (a kernel-aware model, TensorFlow's loop): add this times the pixel loss of the network's gated mix of the
    # photo and its deconvolution, before the residual, against the sharp photo. The gate then learns directly
    # where a right deconvolution is to be kept (it is the mix nearest the sharp photo), not only through the
    # residual beside it, which learned to make up for a timid gate (its bias never left its start).
    mix_weight: float = 0.0
    vgg_weights: str | None = None  # a local ImageNet VGG16 (include_top=False) weights file
    strategy: Strategy = "auto"
    precision: Precision = "auto"
    devices: list[str] | None = None  # mirrored only: explicit devices, e.g. ["/cpu:0", "/cpu:1"]
    cpu_replicas: int = 1  # > 1 splits the CPU into logical devices, to try the mirrored path without GPUs
    jit_compile: bool = False  # XLA; measured 2x slower on CPU, so off unless asked for
    checkpoint_every: int = 100  # steps; a checkpoint is also written at the end of every epoch
    keep_checkpoints: int = 3
    seed: int = 0
    log_images: int = 3  # validation images written to TensorBoard each epoch
    profile_batch: int | None = None  # a step to trace with the TensorFlow profiler
    # Start from these weights instead of random ones (fine-tuning): "pretrained" (the model shipped with deblur),
    # "latest" (the newest run) or a model.keras of the same architecture. A resumed run ignores it.
    init: str | None = None
    # Stop after this many minutes of the process (set-up included), with the model saved as at the end of an
    # epoch; running the same command again goes on. The demo's: a first run that ends soon on any CPU.
    max_minutes: float | None = None

    def __post_init__(self) -> None:
        _check_types(self, "train.")
        self.init, self.vgg_weights = _home(self.init), _home(self.vgg_weights)
        _check_positive("train.epochs", self.epochs)
        if self.max_minutes is not None:
            _check_positive("train.max_minutes", self.max_minutes)
            if self.strategy == "multi-worker":
                raise ConfigError("train.max_minutes cannot stop the workers of a multi-worker run at one step")
        if self.steps_per_epoch is not None:
            _check_positive("train.steps_per_epoch", self.steps_per_epoch)
        _check_positive("train.learning_rate", self.learning_rate)
        _check_range("train.seed", self.seed, 0, MAX_SEED)
        _check_choice("train.lr_scaling", self.lr_scaling, LrScaling)
        _check_choice("train.schedule", self.schedule, Schedule)
        _check_range("train.warmup_steps", self.warmup_steps, 0, 10**9)
        _check_choice("train.loss", self.loss, Loss)
        _check_range("train.perceptual_weight", self.perceptual_weight, 0.0, 1e6)
        _check_range("train.mix_weight", self.mix_weight, 0.0, 1e6)
        _check_choice("train.strategy", self.strategy, Strategy)
        _check_choice("train.precision", self.precision, Precision)
        _check_positive("train.cpu_replicas", self.cpu_replicas)
        _check_positive("train.checkpoint_every", self.checkpoint_every)
        _check_positive("train.keep_checkpoints", self.keep_checkpoints)
        _check_range("train.log_images", self.log_images, 0, 100)

    def warmup_within(self, total_steps: int) -> int:
        """The warm-up a run of `total_steps` gets: `warmup_steps`, shortened to end at the run's last step."""
        return min(self.warmup_steps, max(total_steps - 1, 0))


@dataclass
class Config:
    model: ModelConfig = field(default_factory=ModelConfig)
    data: DataConfig = field(default_factory=DataConfig)
    train: TrainConfig = field(default_factory=TrainConfig)

    def __post_init__(self) -> None:
        _check_types(self, "")
        if self.train.mix_weight and not self.model.kernel_aware:
            raise ConfigError("train.mix_weight needs model.kernel_aware: a plain network has no gated mix")


# === Loading and saving ===

SHIPPED = ("demo", "gopro", "kernel-aware", "pretrained", "pretrained-finetune", "smoke")


def shipped_config_path(name: str) -> Path:
    """Path of a config shipped with the package (`configs/` in the source tree)."""
    try:
        folder = resources.files("deblur.configs")
    except ModuleNotFoundError:
        # Python started in the repository after `pip install .` imports the checkout's deblur/, which has no
        # configs package (setuptools maps configs/ to it only when installing): load_config had ended on "No
        # module named 'deblur.configs'". The checkout keeps them beside the package.
        folder = Path(__file__).resolve().parent.parent / "configs"
    return Path(str(folder / f"{name}.yaml"))


def yaml_reason(err: yaml.YAMLError) -> str:
    """PyYAML's error on one line, where it is (line and column, from 1) and what it found: its own message spans
    lines and calls the file "<unicode string>"."""
    if isinstance(err, yaml.reader.ReaderError) and err.encoding == "unicode":  # a control character
        return f"at position {err.position}: character #x{err.character:04x} is not allowed in YAML"
    if isinstance(err, yaml.reader.ReaderError):  # a byte UTF-8 (or UTF-16 with its BOM) cannot hold
        return f"at position {err.position}: not {err.encoding.upper()} text ({err.reason}); save it as UTF-8"
    if not isinstance(err, yaml.MarkedYAMLError):
        return str(err).splitlines()[0] if str(err) else type(err).__name__
    mark = err.problem_mark or err.context_mark
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
    context = f" ({err.context})" if err.context else ""
    return f"{where}{err.problem or 'cannot be parsed'}{context}"


class _UniqueKeysLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing a key given twice in one mapping: PyYAML keeps the last, so a second `train:`
    section had silently dropped every setting of the first."""


def _unique_mapping(loader: _UniqueKeysLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    lines: dict[Any, int] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if not isinstance(key, typing.Hashable):  # construct_mapping refuses it, in PyYAML's words
            continue
        if key in lines:
            problem = f"{key} is given twice (first on line {lines[key]}): the first would be ignored"
            raise yaml.constructor.ConstructorError(None, None, problem, key_node.start_mark)
        lines[key] = key_node.start_mark.line + 1
    return loader.construct_mapping(node, deep=deep)


_UniqueKeysLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _unique_mapping)


def load_config(path: str | Path | None = None, overrides: list[str] | str | None = None) -> Config:
    """Load a config file (or a shipped config by name, one of `SHIPPED`) and apply `key=value` overrides (a list,
    or one as a string).

    `path=None` loads the embedded default, `demo`. Unknown keys, wrong types and bad values raise
    `ConfigError` naming the file and key.
    """
    if path is not None and not isinstance(path, str | Path):  # a mapping had been Path's TypeError
        raise ConfigError(
            f"the config is {type(path).__name__}, not a file's path or a shipped name: "
            "deblur.config.config_from_dict(mapping) builds one from a mapping",
            settings=("config",),
        )
    if path is not None and not str(path).strip():  # `--config $CONFIG`, unset: it had been "." or the default
        raise ConfigError(
            f"the config is an empty path: name a file or a shipped config ({', '.join(SHIPPED)})", settings=("config",)
        )
    if path is None or str(path) in SHIPPED:
        path = shipped_config_path(str(path or "demo"))
    path = Path(path)
    try:
        # As bytes: PyYAML then reads UTF-16 by its BOM (PowerShell 5's `>` writes it), and names a byte that is
        # not UTF-8, where decoding it here had ended on UnicodeDecodeError's traceback.
        raw = yaml.load(path.read_bytes(), Loader=_UniqueKeysLoader)  # a safe loader
    except OSError as err:
        # `--config pretrianed`: a shipped name mistyped, or one the user did not know to be a name, not a file
        named = f"; nor is it a shipped config ({', '.join(SHIPPED)})" if isinstance(err, FileNotFoundError) else ""
        raise ConfigError(f"cannot read config file {path}: {err.strerror}{named}", settings=("config",)) from None
    except yaml.YAMLError as err:
        raise ConfigError(f"{path} is not valid YAML: {yaml_reason(err)}") from None
    if raw is None:  # an empty file had trained, for an hour, on defaults that are no shipped config's
        raise ConfigError(
            f"{path} holds no settings (it is empty, or only comments): give its model, data and train sections, "
            "or no config for the default (demo)"
        )
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of sections (model, data, train)")
    if isinstance(overrides, str):  # one override: iterated, its letters had each been "an override 't' ..."
        overrides = [overrides]
    if overrides is not None and not is_list_of_strings(overrides):
        # had been a TypeError ("not iterable") or an AttributeError of the item
        raise ConfigError(f"overrides must be strings such as 'train.epochs=3'; got {overrides!r}")
    for item in overrides or []:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"override {item!r} must look like section.key=value, e.g. train.epochs=3")
        if not value.strip():  # `--set data.root=$DATA` with DATA unset had trained on the demo data without a word
            raise ConfigError(f"override {item!r} has no value after '=': give one (null, for none, says so)")
        try:
            parsed = yaml.safe_load(value)
        except yaml.YAMLError as err:
            raise ConfigError(f"override {item!r}: its value is not valid YAML ({yaml_reason(err)})") from None
        if _is_section(key) and not isinstance(parsed, dict):
            raise ConfigError(f"override {item!r}: {key} is a section: set its keys ({key}.<key>=value)")
        _set_dotted(raw, key, parsed, item)
    try:
        return _build(Config, raw, "")
    except ConfigError as err:
        raise ConfigError(f"{_culprit(err, overrides or [], path)}: {err}") from None


def _culprit(err: ConfigError, overrides: list[str], path: Path) -> str:
    """Who set the bad value: the last override whose key the error names first (`train.epochs=abc`), else the
    file. (What follows a ";" lists the keys allowed, not the bad one.)"""
    said = str(err).split(";")[0]
    keys = [item.partition("=")[0].strip() for item in overrides]
    named = [
        item for item, key in zip(overrides, keys, strict=True) if re.search(rf"(?<![\w.]){re.escape(key)}\b", said)
    ]
    return f"override {named[-1]!r}" if named else str(path)


def config_to_dict(config: Config) -> dict[str, Any]:
    return dataclasses.asdict(config)


def config_to_yaml(config: Config) -> str:
    return yaml.safe_dump(config_to_dict(config), sort_keys=False)


def config_from_dict(raw: dict[str, Any]) -> Config:
    return _build(Config, raw, "")


# === Validation helpers ===


def _is_section(dotted: str) -> bool:
    """Whether `dotted` names a section of the config (train, data.synth), not one of its keys."""
    section: Any = Config
    for part in dotted.split("."):
        if not dataclasses.is_dataclass(section) or part not in {f.name for f in dataclasses.fields(section)}:
            return False
        section = typing.get_type_hints(section)[part]
    return dataclasses.is_dataclass(section)


def _set_dotted(raw: dict[str, Any], dotted: str, value: Any, item: str) -> None:
    node = raw
    parts = dotted.split(".")
    for part in parts[:-1]:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise ConfigError(f"override {item!r}: {part!r} is not a section")
        node = child
    node[parts[-1]] = value


def _build(cls: type, raw: Any, prefix: str) -> Any:
    if not isinstance(raw, dict):
        raise ConfigError(f"{prefix.rstrip('.') or 'config'} must be a mapping")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(raw) - set(fields))
    if unknown:
        names = ", ".join(prefix + k for k in unknown)
        known = ", ".join(prefix + k for k in fields)
        raise ConfigError(f"unknown key(s) {names}; known keys here: {known}")
    return cls(**raw)  # each section checks and converts its keys itself (`_check_types`), from a file or not


# What a key of each type must be, as its error says it
_KINDS = {bool: "true or false", int: "a whole number", float: "a number", str: "a string"}


def _check_types(section: Any, prefix: str) -> None:
    """Check and convert each key of a config section as `_coerce` does a file's, for sections built in Python
    (`ModelConfig(...)`, `build_generator`'s arguments): kernel_aware="no" had built a kernel-aware model (a string
    is true), batch_size=2.5 and a section given as a dict went on to fail far away, dropout="0.1" was a TypeError."""
    hints = typing.get_type_hints(type(section))
    for item in dataclasses.fields(section):
        setattr(section, item.name, _coerce(hints[item.name], getattr(section, item.name), prefix + item.name))


def _coerce(hint: Any, value: Any, key: str) -> Any:
    if dataclasses.is_dataclass(hint):
        if isinstance(value, hint):  # built already (in Python, or by `_build`)
            return value
        return _build(hint, value if value is not None else {}, key + ".")
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        (inner,) = [a for a in args if a is not type(None)]
        return _coerce(inner, value, key)
    if origin is Literal:  # checked against its choices in __post_init__, with the key named
        if isinstance(value, str):
            return value
        raise ConfigError(f"{key} must be one of {', '.join(args)}, got {value!r}")
    if origin is list:
        if not isinstance(value, list | tuple):  # a tuple: from Python
            raise ConfigError(f"{key} must be a list, got {value!r}")
        return [_coerce(args[0], v, key) for v in value]
    if hint is bool:
        if isinstance(value, bool | np.bool_):
            return bool(value)
    elif hint is int:
        if is_whole_number(value):  # NumPy's as Python's, as a saved config holds them
            return int(value)
    elif hint is float:
        number = None
        if is_real_number(value):
            number = float(value)
        elif isinstance(value, str):  # YAML 1.1 reads 1e-4 (no dot) as a string
            with contextlib.suppress(ValueError):
                number = float(value)
        if number is not None:
            if not math.isfinite(number):  # nan passes every "> 0" check, and trains NaN weights
                raise ConfigError(f"{key} must be a finite number, got {value!r}")
            return number
    elif hint is str and isinstance(value, (str, int, float, os.PathLike)) and not isinstance(value, bool):
        return os.fspath(value) if isinstance(value, os.PathLike) else str(value)
    raise ConfigError(f"{key} must be {_KINDS.get(hint, getattr(hint, '__name__', hint))}, got {value!r}")


def _home(path: Any) -> Any:
    """A path key's value with a leading ~ made the home folder, as a shell makes it on the command line: written in
    a config file (`root: ~/data/gopro`), it had been a folder named ~ that is not there."""
    return os.path.expanduser(path) if isinstance(path, str) else path


def _check_choice(key: str, value: str, literal: Any) -> None:
    choices = get_args(literal)
    if value not in choices:
        raise ConfigError(f"{key} must be one of {', '.join(choices)}; got {value!r}")


def _check_positive(key: str, value: float) -> None:
    if not math.isfinite(value):  # from an option, not a file's _coerce: nan passes "<= 0", inf every bound
        raise ConfigError(f"{key} must be a finite number, got {value!r}")
    if value <= 0:
        raise ConfigError(f"{key} must be > 0; got {value!r}")


def _check_at_least(key: str, value: int, low: int, why: str) -> None:
    if value < low:
        raise ConfigError(f"{key} must be at least {low} ({why}); got {value!r}")


def _check_range(key: str, value: float, low: float, high: float) -> None:
    if not low <= value <= high:
        raise ConfigError(f"{key} must be between {low} and {high}; got {value!r}")
