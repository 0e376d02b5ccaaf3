"""One worker of a distributed run: the model opened once when the worker starts, then one task (`deblur.scale.plan`)
at a time. A task that fails returns its reason instead of raising, so that one bad file does not stop the job;
its output is then not written. A full disk is not one file's fault: its task says so (`NO_ROOM`), and so does each
later task, at once, without doing its work.
"""

from __future__ import annotations

import io
import time
from collections import OrderedDict
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from deblur.console import hide_native_noise
from deblur.errors import DeblurError, full_disk_message
from deblur.files import full_disk_named
from deblur.imageio import decode_photo, encode_photo, lost_in
from deblur.min_side import check_min_side
from deblur.predict import is_small
from deblur.scale import storage
from deblur.scale.plan import PHOTO, Task, finished
from deblur.settings import DeblurSettings, WriteSettings
from deblur.video.clips import Clip, VideoReadError, clips_named_as_photos, frame_times, probe_clip, read_frames
from deblur.video.predict import VideoOptions, clip_of, deblur_segment, pair_segment

OK, FAILED, SKIPPED = "ok", "failed", "skipped"
NO_ROOM = "no room"  # the disk the outputs go to is full: each task after it would fail the same way
UNUSABLE = "unusable"  # the clip itself cannot be used (truncated, timestamps going back): its work folder goes
NOT_STARTED = "not started"  # the worker could not open its model: the job ends on that error, as plain predict's


class WorkerNotStarted(DeblurError):
    """A worker could not open its model (in its own error's words), or load deblur's code."""


@dataclass(frozen=True)
class WorkerSettings:
    """How each worker opens its model (`deblur.inference.open_deblurrer`), on how many threads, and how it reads
    and writes results.

    The model is passed as the user gave it: None is the packaged model on every worker's own install, and a path
    must be one every worker can read."""

    deblur: DeblurSettings
    write: WriteSettings
    max_pixels: int
    threads: int


class DeblurWorker:
    """Called by the engine with one task as a row (a dict); returns the row with `status`, `reason`, `frames`
    (a segment's), `seconds`, `settings` (those a `NOT_STARTED` reason concerns, joined by ","), `lost` (what
    the format could not hold of a photo, `deblur.imageio.lost_in`, joined by ",") and `small` (whether a photo is
    one `deblur.predict.small_photos_hint` speaks of)."""

    def __init__(self, settings: WorkerSettings) -> None:
        # TensorFlow's start-up lines, filtered out as the CLI does in its own process. Here, not as Ray's process
        # setup hook: a cluster without deblur failed that hook in every worker, which Ray started again without end.
        hide_native_noise()
        self.settings = settings
        _limit_threads(settings.threads)
        # imported here, in the worker: the process that plans the tasks never loads Keras for photos
        from deblur.inference import open_deblurrer

        self.unusable: DeblurError | None = None  # why the model could not be opened
        try:
            self.deblurrer, _ = open_deblurrer(settings.deblur, threads=settings.threads)
            # A clip's frames go the way `deblur predict` sends clips (the default: the network).
            self.frames_deblurrer, _ = self.deblurrer.for_clips()
        except DeblurError as err:
            # Each task says it instead: raised here, the worker would die, and Ray Data end the job in pages of
            # its own trace (with a model the workers cannot read, say).
            self.unusable = err
        self.clips: OrderedDict[str, tuple[Clip, list[int] | None]] = OrderedDict()  # the last few clips probed
        self.no_room: str | None = None  # why a task found the disk full

    def __call__(self, row: dict) -> dict:
        task = Task(**{name: row[name] for name in Task.__dataclass_fields__})
        started = time.perf_counter()
        done = {"status": OK, "reason": "", "frames": 0, "seconds": 0.0, "settings": "", "lost": "", "small": False}
        write = self.settings.write
        done_before = finished(task.target, write) if task.kind == PHOTO else self.segment_finished(task)
        if not write.overwrite and done_before:
            # done by an earlier attempt at this task's block (the engine runs a dead worker's block again)
            return {**row, **done, "status": SKIPPED}
        if self.unusable is not None:
            settings = ",".join(self.unusable.settings)
            return {**row, **done, "status": NOT_STARTED, "reason": str(self.unusable), "settings": settings}
        if self.no_room:
            return {**row, **done, "status": NO_ROOM, "reason": self.no_room}
        try:
            if task.kind == PHOTO:
                lost, done["small"] = self.photo(task)
                done["lost"] = ",".join(lost)
            else:
                done["frames"] = self.segment(task)
        except VideoReadError as err:
            return {**row, **done, "status": UNUSABLE, "reason": str(err)}
        except DeblurError as err:
            return {**row, **done, "status": FAILED, "reason": str(err)}
        except Exception as err:  # anything else is reported with its file too, and the job goes on
            if isinstance(err, OSError) and (message := full_disk_message(err)):
                self.no_room = message
                return {**row, **done, "status": NO_ROOM, "reason": message}
            reason = f"{task.source}: {type(err).__name__}: {str(err)[:300]}"
            return {**row, **done, "status": FAILED, "reason": reason}
        return {**row, **done, "seconds": time.perf_counter() - started}

    def photo(self, task: Task) -> tuple[list[str], bool]:
        """Deblur one photo into its output; what its format could not hold of it, and whether `is_small`."""
        write = self.settings.write
        with clips_named_as_photos(None if storage.is_url(task.source) else Path(task.source)):
            photo = decode_photo(
                io.BytesIO(storage.read_bytes(task.source)), task.source, max_pixels=self.settings.max_pixels
            )
        height, width = photo.rgb.shape[:2]
        check_min_side(width, height, task.source)
        write.check_holds(width, height, task.source)
        restored = self.deblurrer(photo.rgb)
        if write.side_by_side:
            pair = np.concatenate([photo.rgb, restored], axis=1)
            # without the photo's alpha, as plain predict's (it is the width of one half): it had failed the photo
            pair_photo = encode_photo(pair, replace(photo, alpha=None), write.photo)
            storage.write_bytes(storage.side_by_side_of(task.target), pair_photo)
        # The output there without its side-by-side (`deblur.scale.plan.finished`) is kept, as plain predict keeps it.
        if write.overwrite or not (write.side_by_side and storage.is_file(task.target)):
            storage.write_bytes(task.target, encode_photo(restored, photo, write.photo))
        return lost_in(write.fmt, photo), is_small(height, width, self.deblurrer.way(), self.deblurrer.strength)

    def segment_finished(self, task: Task) -> bool:
        """Whether a segment is there, with its side-by-side's where one is asked for."""
        target = Path(task.target)
        return target.exists() and (not self.settings.write.side_by_side or pair_segment(target).exists())

    def segment(self, task: Task) -> int:
        clip, times = self.clip(task.source)
        write = self.settings.write
        video = VideoOptions(write.encoding, self.settings.max_pixels, side_by_side=write.side_by_side)
        frames = read_frames(clip, task.first, task.stop, times)
        target = Path(task.target)
        with full_disk_named(clip_of(target.parent), target.parent):  # the clip, as plain predict names it
            return deblur_segment(clip, frames, target, self.frames_deblurrer, video)

    def clip(self, source: str) -> tuple[Clip, list[int] | None]:
        """The clip and its frame timestamps, read once for all of its segments this worker makes."""
        if source not in self.clips:
            clip = probe_clip(Path(source), max_pixels=self.settings.max_pixels)
            self.clips[source] = (clip, frame_times(clip))
            while len(self.clips) > 4:
                self.clips.popitem(last=False)
        return self.clips[source]


def _limit_threads(threads: int) -> None:
    """TensorFlow's thread pools (and the kernel path's) to `threads`, so that workers sharing a machine do not
    fight over its cores. Only a fresh process can be limited; one whose TensorFlow has already started keeps its
    pools. Under JAX (a GPU worker), only the kernel path's."""
    from deblur.hardware import keras_backend
    from deblur.shake import deconvolve

    deconvolve.THREADS = threads
    if keras_backend() != "tensorflow":
        return
    import tensorflow as tf

    try:
        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(1)
    except RuntimeError:
        pass
