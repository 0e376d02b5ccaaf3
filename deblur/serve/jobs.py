"""Video jobs for `deblur serve`: a clip is a job that runs for minutes or hours, so it is not an HTTP request.

One job runs at a time, on a thread of its own beside the photo line (photos keep being answered while it runs;
they share the CPU). A job's files live in a private temporary folder: the upload, the work folder of finished
segments and the result. The upload and the segments go when the job ends; the result stays for download until
the job is deleted or the server stops. A cancelled or failed job leaves nothing.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from deblur.errors import FULL_DISK
from deblur.files import safe_file_name
from deblur.imageio import is_photo
from deblur.inference import Deblurrer
from deblur.serve.limits import Limits
from deblur.serve.work import NO_ROOM, Busy
from deblur.video.clips import Clip, VideoReadError, probe_clip
from deblur.video.encode import video_suffix
from deblur.video.predict import VideoOptions, deblur_clip

MEDIA_TYPES = {".mp4": "video/mp4", ".mkv": "video/x-matroska", ".mov": "video/quicktime"}


class TooLongError(VideoReadError):
    """The clip is longer than the server takes."""


class Cancelled(Exception):
    """The job was cancelled while it ran."""


@dataclass
class Job:
    id: str
    name: str  # the upload's file name, for messages and the download
    folder: Path
    clip: Clip
    target: Path
    state: str = "queued"  # queued, running, done, failed, cancelled
    frames_done: int = 0
    error: str | None = None
    created: float = field(default_factory=time.monotonic)
    started: float | None = None
    finished: float | None = None
    cancel: threading.Event = field(default_factory=threading.Event)

    def status(self) -> dict:
        total = self.clip.frames
        eta = None
        if self.state == "running" and self.started and self.frames_done and total:
            per_frame = (time.monotonic() - self.started) / self.frames_done
            eta = round(per_frame * max(total - self.frames_done, 0), 1)
        return {
            "id": self.id,
            "name": self.name,
            "state": self.state,
            "frames_done": self.frames_done,
            "frames_total": total,
            "eta_seconds": eta,
            "error": self.error,
            "width": self.clip.width,
            "height": self.clip.height,
            "seconds": round((self.finished or time.monotonic()) - self.started, 1) if self.started else None,
        }

    @property
    def media_type(self) -> str:
        return MEDIA_TYPES.get(self.target.suffix, "application/octet-stream")

    @property
    def download_name(self) -> str:
        stem = safe_file_name(Path(self.name).stem) or "clip"
        return f"{stem}-deblurred{self.target.suffix}"


class VideoJobs:
    """The server's video jobs: at most one queued or running at a time."""

    def __init__(self, deblurrer: Deblurrer, limits: Limits, log: Callable[[str], None] = print) -> None:
        self.deblurrer = deblurrer
        self.limits = limits
        self.log = log
        self._root: Path | None = None  # made with the first job: an app that never takes one leaves nothing
        self.jobs: dict[str, Job] = {}
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._closing = False

    @property
    def root(self) -> Path:
        """The private folder every job's files are in."""
        with self._lock:
            if self._root is None:
                self._root = Path(tempfile.mkdtemp(prefix="deblur-jobs-"))
            return self._root

    def new_folder(self) -> Path:
        """A private folder for one upload; the caller hands it to `submit`, or removes it."""
        return Path(tempfile.mkdtemp(prefix="job-", dir=self.root))

    def check_free(self) -> None:
        """Raise Busy while a job runs (before the upload is read), or once the server shuts down."""
        with self._lock:
            if self._closing:
                raise Busy("the server is shutting down", retry_after=5)
            running = next((job for job in self.jobs.values() if job.state in ("queued", "running")), None)
            if running is not None:
                left = running.status()["eta_seconds"]
                raise Busy(
                    f"busy: video job {running.id} is still running (one at a time)",
                    retry_after=max(5, min(600, round(left or 30))),
                )

    def submit(self, upload: Path, name: str) -> Job:
        """Check the clip in `upload` (inside a `new_folder`) and start deblurring it; raises VideoReadError
        (TooLongError among them) for a clip the server will not take, after removing its folder."""
        folder = upload.parent
        try:
            if is_photo(upload):  # FFmpeg would make it a clip of one frame, as predict never does
                raise VideoReadError(f"{name}: a photo, not a clip: send photos to POST /v1/deblur")
            clip = probe_clip(upload, max_pixels=self.limits.max_pixels, name=name)
            if clip.duration and clip.duration > self.limits.max_video_seconds:
                raise TooLongError(
                    f"{name}: {clip.duration:.0f} s long, over the limit of {self.limits.max_video_seconds:g} s "
                    "(max_video_seconds)"
                )
            self.check_free()
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        job = Job(uuid.uuid4().hex[:12], name, folder, clip, folder / f"result{video_suffix(Path(name))}")
        with self._lock:
            self.jobs[job.id] = job
            self._thread = threading.Thread(target=self._run, args=(job,), name=f"deblur-job-{job.id}", daemon=True)
            self._thread.start()
        return job

    def _run(self, job: Job) -> None:
        job.state, job.started = "running", time.monotonic()

        def on_frames(count: int) -> None:
            job.frames_done += count
            if job.cancel.is_set():
                raise Cancelled

        class Progress:
            def clip(self, name, frames, done):
                job.frames_done = done
                return on_frames

        try:
            deblur_clip(
                job.clip.path,
                job.target,
                self.deblurrer,
                VideoOptions(max_pixels=self.limits.max_pixels),
                Progress(),
                log=lambda _: None,
                name=job.name,  # errors speak of the upload, never of the server's folders
            )
            job.state = "done"
        except Cancelled:
            job.state = "cancelled"
        except VideoReadError as err:
            job.state, job.error = "failed", str(err)
        except Exception as err:  # noqa: BLE001 - a failure inside one job must not take the server down
            reason = f"{type(err).__name__}: {err}"
            full = isinstance(err, OSError) and err.errno in FULL_DISK  # the client is told, without the folders
            job.state, job.error = "failed", NO_ROOM if full else reason
            self.log(f"video job {job.id} failed: {reason}")
        finally:
            job.finished = time.monotonic()
            # The upload goes now (deblur_clip removed its segments); the result stays until the job is deleted.
            if job.state == "done":
                job.clip.path.unlink(missing_ok=True)
            else:
                shutil.rmtree(job.folder, ignore_errors=True)

    def delete(self, job_id: str) -> Job | None:
        """Cancel the job if it runs, and remove it and its files; None if there is no such job."""
        with self._lock:
            job = self.jobs.pop(job_id, None)
        if job is None:
            return None
        job.cancel.set()
        if job.state in ("queued", "running") and self._thread is not None:
            self._thread.join(timeout=60)  # the next frame batch notices the cancel
        shutil.rmtree(job.folder, ignore_errors=True)
        return job

    def close(self) -> None:
        """At shutdown: cancel the running job and remove every job's files."""
        with self._lock:
            self._closing = True
            jobs = list(self.jobs.values())
        for job in jobs:
            job.cancel.set()
        if self._thread is not None:
            self._thread.join(timeout=120)
        if self._root is not None:
            with contextlib.suppress(OSError):
                shutil.rmtree(self._root)
