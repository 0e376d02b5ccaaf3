"""What `deblur predict` is asked, grouped as its options are: what to read, how to deblur, how to write, how to
run. The command builds one `PredictSettings` and passes it down; the library reads the group it needs (the server
and the engine's workers open their model from the same `DeblurSettings`). Light: no TensorFlow, so the command
checks its options before anything loads. Every default lives here, once.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, get_args

from deblur.config import check_precision
from deblur.errors import SettingError, check_choice, check_switches, is_whole_number
from deblur.imageio import DEFAULT_MAX_PIXELS, WriteOptions, check_format_holds, check_max_pixels
from deblur.paths import ModelChoice
from deblur.runtime import DEFAULT_RUNTIME, check_runtime
from deblur.shake.tries import ESTIMATES, check_estimates
from deblur.strength import DEFAULT_STRENGTH, check_strength
from deblur.tiling import DEFAULT_OVERLAP, DEFAULT_TILE, Tiling
from deblur.video.encode import Encoding  # light: PyAV loads on use
from deblur.ways import DEFAULT_METHOD, check_ensemble_for, way_of

DEFAULT_OUT = "deblurred"  # the output folder, under the current one
WORKER_CPUS = 1  # with an engine: each worker's model runs on this many threads; Ray reserves as many CPUs for it
Engine = Literal["ray"]  # the distributed engines (`deblur.scale`)
ENGINES: tuple[str, ...] = get_args(Engine)


@dataclass(frozen=True)
class ReadSettings:
    """What to read: photos, clips and folders of them (searched recursively; with an engine, also URLs)."""

    inputs: tuple[str, ...]  # paths as strings (a Path given is made one), or URLs
    max_pixels: int = DEFAULT_MAX_PIXELS  # refuse larger images and frames, from their header

    def __post_init__(self) -> None:
        # One path as a string had been read letter by letter, its "." deblurring the current folder.
        inputs = (self.inputs,) if isinstance(self.inputs, str | os.PathLike) else self.inputs
        # None or 5 had been "'int' object is not iterable"; a generator is read once
        inputs = tuple(inputs) if isinstance(inputs, Iterable) and not isinstance(inputs, bytes) else (inputs,)
        for item in inputs:
            if not isinstance(item, str | os.PathLike):  # had been os.fspath's TypeError
                kind = type(item).__name__
                raise SettingError(f"an input is {kind} {item!r}: name a photo, clip or folder by its path")
        inputs = tuple(os.fspath(item) for item in inputs)  # the engine's planner reads URLs from strings
        object.__setattr__(self, "inputs", inputs)
        if not inputs:  # nothing to read had ended as a report of nothing done
            raise SettingError("no inputs: name a photo, clip or folder")
        if any(not item.strip() for item in inputs):  # an unset "$VAR": "." would deblur this folder
            raise SettingError("an input is an empty path: name a photo, clip or folder")
        check_max_pixels(self.max_pixels)


@dataclass(frozen=True)
class DeblurSettings:
    """How to deblur: the model (as `deblur.paths.choose_model` takes it), the way (`deblur.ways`), and how the
    model runs (`deblur.inference.open_deblurrer`)."""

    model: str | Path | ModelChoice | None = None
    method: str = DEFAULT_METHOD
    precision: str = "auto"
    runtime: str = DEFAULT_RUNTIME
    tile: int = DEFAULT_TILE
    overlap: int = DEFAULT_OVERLAP
    ensemble: int = 1  # mirrored and turned copies averaged (`deblur.tiling.ENSEMBLES`)
    strength: float = DEFAULT_STRENGTH  # how much of the change to keep (`deblur.strength`)
    # camera-shake estimates tried per photo (`deblur.shake.tries`) by the ways that estimate one; None: ESTIMATES
    estimates: int | None = None

    def __post_init__(self) -> None:
        if self.estimates is not None and self.method == "network":  # it went unused without a word
            raise SettingError(
                "estimates are tried by the kernel-aware and kernel ways, and the network estimates no camera shake: "
                "leave the estimates out, or choose one of those methods",
                settings=("estimates", "method"),
            )
        way = way_of(self.method)
        check_ensemble_for(way, self.ensemble)  # before the model loads
        # Each of these had been refused only when the model loaded: with an engine, by every worker as it started.
        check_strength(self.strength)
        if self.estimates is not None:
            check_estimates(self.estimates)
        check_precision(self.precision)
        check_runtime(self.runtime)
        Tiling(self.tile, self.overlap)
        if way.model_channels is None and (unused := self.model_options_given()):
            named = ", ".join(unused)
            raise SettingError(  # each went unused without a word
                f"{named} {'is' if len(unused) == 1 else 'are'} how the network runs, and the {way.name} way runs no "
                f"network: leave {'it' if len(unused) == 1 else 'them'} out, or choose another method",
                settings=(*unused, "method"),
            )

    def model_options_given(self) -> tuple[str, ...]:
        """The options on how the model runs that differ from their defaults, in the order predict lists them."""
        defaults = {"tile": DEFAULT_TILE, "overlap": DEFAULT_OVERLAP, "precision": "auto", "runtime": DEFAULT_RUNTIME}
        return tuple(name for name, default in defaults.items() if getattr(self, name) != default)

    @property
    def shake_estimates(self) -> int:
        """The camera-shake estimates to try: as given, else ESTIMATES."""
        return ESTIMATES if self.estimates is None else self.estimates


@dataclass(frozen=True)
class WriteSettings:
    """How to write: where, in which format, and what is kept of each photo."""

    out: str = DEFAULT_OUT  # a folder; with an engine, also a URL for photos
    fmt: str = "png"  # photos: one of `deblur.imageio.WRITE_FORMATS`
    quality: int | None = None  # photos written as JPEG or WebP; None: DEFAULT_QUALITY
    strip_metadata: bool = False  # leave out photos' EXIF (camera, date, place) and ICC profile, and clips' tags
    # outputs named with the input's extension too (photo.webp -> photo.webp.png), so inputs that differ only by it
    # do not clash
    keep_extension: bool = False
    side_by_side: bool = False  # photos: also write <name>_side_by_side: blurry | deblurred
    overwrite: bool = False  # replace existing outputs; otherwise they are skipped and counted
    encoding: Encoding = field(default_factory=Encoding)  # clips: the video codec and quality

    def __post_init__(self) -> None:
        if not str(self.out).strip():  # an unset variable in a script (--out "$DIR"): "." would be meant by nobody
            raise SettingError("the output folder is empty: name one", settings=("out",))
        check_switches(
            strip_metadata=self.strip_metadata,
            keep_extension=self.keep_extension,
            side_by_side=self.side_by_side,
            overwrite=self.overwrite,
        )
        self.photo  # checks the format and quality  # noqa: B018
        if not isinstance(self.encoding, Encoding):  # "vp9" had been refused only as the first clip was written
            raise SettingError(
                f"encoding must be a deblur.video.encode.Encoding, not {type(self.encoding).__name__} "
                f"{self.encoding!r}: Encoding(codec, crf)",
                settings=("encoding",),
            )

    @property
    def photo(self) -> WriteOptions:
        return WriteOptions(self.fmt, self.quality, self.strip_metadata)

    def unused_for(self, kinds: set[str]) -> list[str]:
        """What was asked of a kind of input ("photo", "video") that `kinds` does not hold, said as advice: a
        codec asked of photos had gone unused without a word. Nothing is said of inputs of unknown kind."""
        plain, said = WriteSettings(self.out), []
        if "photo" not in kinds and (self.fmt, self.quality) != (plain.fmt, plain.quality):
            said.append("the photo format and quality are for photos, and the inputs hold none: they go unused")
        if "video" not in kinds and self.encoding != plain.encoding:
            said.append("the codec and crf are for clips, and the inputs hold none: they go unused")
        return said

    def check_holds(self, width: int, height: int, name: str) -> None:
        """Refuse (FormatLimitError) a `width` x `height` photo whose outputs `fmt` cannot hold: its side-by-side
        is twice as wide."""
        check_format_holds(width * (2 if self.side_by_side else 1), height, self.fmt, name)


@dataclass(frozen=True)
class RunSettings:
    """How to run: in this process (no engine), or on a distributed engine's workers (`deblur.scale`)."""

    engine: str | None = None
    workers: int | None = None  # with an engine: worker processes (default: one a CPU here)
    worker_cpus: int = WORKER_CPUS  # with an engine: CPUs (threads) for each worker's model
    address: str | None = None  # with engine ray: the cluster (default: a local Ray)

    def __post_init__(self) -> None:
        if self.engine is None and (self.workers, self.address, self.worker_cpus) != (None, None, WORKER_CPUS):
            raise SettingError(
                "workers, worker_cpus and address go with an engine",
                settings=("workers", "worker_cpus", "address", "engine"),
            )
        if self.engine is not None:  # "spark" had been refused only by predict_at_scale, deblur_photos naming it
            check_choice("engine", self.engine, ENGINES)
        whole = is_whole_number(self.worker_cpus) and (self.workers is None or is_whole_number(self.workers))
        # worker_cpus "2" had been a TypeError, workers=1.5 had gone on to the engine
        if not whole or self.worker_cpus < 1 or (self.workers is not None and self.workers < 1):
            raise SettingError(
                f"workers and worker CPUs must be whole numbers of at least 1; got workers={self.workers!r}, "
                f"worker_cpus={self.worker_cpus!r}",
                settings=("workers", "worker_cpus"),
            )


@dataclass(frozen=True)
class PredictSettings:
    """Everything `deblur predict` is asked, in its four groups."""

    read: ReadSettings
    deblur: DeblurSettings = field(default_factory=DeblurSettings)
    write: WriteSettings = field(default_factory=WriteSettings)
    run: RunSettings = field(default_factory=RunSettings)

    def __post_init__(self) -> None:
        groups = {"read": ReadSettings, "deblur": DeblurSettings, "write": WriteSettings, "run": RunSettings}
        for name, group in groups.items():
            if not isinstance(getattr(self, name), group):  # paths as `read` had been an AttributeError far on
                given = type(getattr(self, name)).__name__
                raise SettingError(f"PredictSettings' {name} is {given}: give a {group.__name__}", settings=(name,))


def check_predict_settings(settings: object) -> None:
    """Refuse what is not a PredictSettings where one is asked for (None or a path had been an AttributeError)."""
    if not isinstance(settings, PredictSettings):
        raise SettingError(
            f"the settings are {type(settings).__name__}: give deblur.settings.PredictSettings(ReadSettings(paths)), "
            "with the groups as `deblur predict` fills them",
            settings=("settings",),
        )
