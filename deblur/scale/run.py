"""`deblur predict --engine ray`: plan centrally, deblur on the engine's workers, join clips centrally.

What is per worker: the model, loaded once (and, with OpenVINO, converted once per machine into its cache); each
photo read, deblurred and written by the worker that takes it; each segment of a clip likewise. What is central:
listing the inputs, skipping finished outputs, probing clips and joining their segments, and the summary with the
dead-letter list `FAILED_LIST` (file, reason) beside the outputs.

Re-running the same command skips every output that is there (they only ever appear whole) and every finished
segment, so a run that was killed, or whose worker was killed, is finished by running it again. That is also how a
run stopped by a full disk goes on (`ScaleReport.stopped`): a worker that meets one refuses its later tasks at once,
where each would have done its work only to fail in the same way, and no clip is joined.
"""

from __future__ import annotations

import contextlib
import csv
import io
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from deblur.console import Hint
from deblur.errors import (
    FULL_DISK,
    DeblurError,
    Interrupted,
    NothingFoundError,
    check_choice,
    check_switches,
    full_disk_message,
    given_log,
)
from deblur.files import side_by_side_path, work_folder
from deblur.imageio import mark_outputs, raw_files
from deblur.predict import earlier_outputs
from deblur.scale import FAILED_LIST, default_workers, storage
from deblur.scale.plan import PHOTO, ClipPlan, plan_inputs
from deblur.scale.worker import NO_ROOM, NOT_STARTED, OK, SKIPPED, UNUSABLE, WorkerNotStarted, WorkerSettings
from deblur.settings import ENGINES, PredictSettings, check_predict_settings
from deblur.video.predict import join_outputs


@dataclass
class ScaleReport:
    written: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # outputs a previous run finished
    failed: list[tuple[str, str]] = field(default_factory=list)  # (input, reason): the dead-letter list
    failed_list: str | None = None  # where that list was written
    seconds: float = 0.0
    workers: int = 0
    frames: int = 0  # of clips, this run
    stopped: str | None = None  # a full disk, in the CLI's words: the tasks after it were not done
    left: int = 0  # inputs a stopped job did not get to
    raw: list[str] = field(default_factory=list)  # cameras' RAW files in the folders given, left out
    lost: dict[str, list[str]] = field(default_factory=dict)  # what the format could not hold of photos (lost_in)
    small: list[str] = field(default_factory=list)  # photos a network deblurred under SMALL_PHOTO (is_small)
    earlier: list[Path] = field(default_factory=list)  # folders of earlier runs' outputs, left out (`Plan.earlier`)

    @property
    def summary(self) -> str:
        rate = len(self.written) / self.seconds if self.seconds else 0.0
        frames = f", {self.frames / self.seconds:.2f} frames/s" if self.frames and self.seconds else ""
        workers = _count(self.workers, "worker")
        left = f", {self.left} left" if self.stopped else ""
        return (
            f"{len(self.written)} done, {len(self.skipped)} skipped, {len(self.failed)} failed{left} in "
            f"{self.seconds:.1f} s with {workers}: {rate:.2f} inputs/s{frames}"
        )


def predict_at_scale(
    settings: PredictSettings, progress: bool = True, log: Callable[[str], None] = print
) -> ScaleReport:
    """Deblur every photo and clip of `settings.read.inputs` (paths or URLs, folders searched recursively) into
    `settings.write.out` (a path or URL) on the workers of `settings.run.engine`; see the module's docstring."""
    check_predict_settings(settings)
    check_switches(progress=progress)  # "no" had drawn bars: a string is true
    log = given_log(log)
    run, inputs, out = settings.run, list(settings.read.inputs), settings.write.out
    check_choice("engine", run.engine, ENGINES)  # None: settings for this process (RunSettings checked the rest)
    from deblur.scale.ray_engine import check_address, ray_module, run_on_ray

    ray_module()  # before any work: without the extra, nothing is listed or probed
    check_address(run.address)
    workers = run.workers or default_workers(run.worker_cpus)
    started = time.perf_counter()
    worker = WorkerSettings(settings.deblur, settings.write, settings.read.max_pixels, run.worker_cpus)
    central = {}

    def identity() -> dict:
        """What makes a clip's frames (the workers' `for_clips`), which its work folder records as plain predict's
        does, so either command resumes the other's segments; loaded only for clips."""
        if "deblurrer" not in central:
            from deblur.inference import open_deblurrer

            opened, _ = open_deblurrer(settings.deblur, log=log)
            central["deblurrer"], central["note"] = opened.for_clips()
        return central["deblurrer"].identity()

    with contextlib.ExitStack() as locks:  # each clip's work folder, held until it is joined (as predict does)
        plan = plan_inputs(inputs, settings.write, settings.read.max_pixels, identity, locks, log)
        if not (plan.tasks or plan.skipped or plan.failed):
            held = f"; it holds {raw_files(plan.raw)}" if plan.raw else ""
            held += f"; {earlier_outputs(plan.earlier)}" if plan.earlier else ""
            raise NothingFoundError(f"no photos or clips in {', '.join(inputs)} (searched all its folders){held}")
        report = ScaleReport(
            skipped=plan.skipped, failed=list(plan.failed), workers=workers, raw=plan.raw, earlier=plan.earlier
        )
        counts = f"{_count(len(plan.tasks), 'task')} for {run.engine} ({_count(workers, 'worker')})"
        log(f"{counts}, {len(plan.skipped)} outputs already there")
        if not (plan.skipped or plan.failed):  # of these, the kind is not known here
            kinds = {task.kind for task in plan.tasks if task.kind == PHOTO} | ({"video"} if plan.clips else set())
            for unused in settings.write.unused_for(kinds):
                log(Hint(unused))
        if plan.clips and central.get("note"):
            log(central["note"])  # how clips go under this method, once for them all (plain predict says it per clip)
        segments: dict[str, str] = {}  # a finished segment's file; or the reason it failed, by file
        unusable: set[str] = set()  # work folders of clips that cannot be used: nothing is kept for them
        not_started: dict | None = None
        unmarked = plan.mark
        try:
            for row in run_on_ray(plan.tasks, worker, workers=workers, address=run.address, progress=progress):
                if unmarked and row["status"] == OK:  # at the first output or segment: a stopped run's folder too
                    mark_outputs(Path(out))
                    unmarked = False
                if row["status"] == NOT_STARTED:  # every task of the job says so, at once: the job ends on it below
                    not_started = not_started or row
                elif row["status"] == NO_ROOM:
                    report.stopped = report.stopped or row["reason"]
                    report.left += row["kind"] == PHOTO  # a clip is counted once, below
                elif row["kind"] == PHOTO:
                    if row["status"] == OK:
                        report.written.append(row["target"])
                        for loss in filter(None, row["lost"].split(",")):
                            report.lost.setdefault(loss, []).append(row["source"])
                        if row["small"]:
                            report.small.append(row["source"])
                    elif row["status"] == SKIPPED:
                        report.skipped.append(row["target"])
                    else:
                        report.failed.append((row["source"], row["reason"]))
                else:
                    segments[row["target"]] = "" if row["status"] in (OK, SKIPPED) else row["reason"]
                    if row["status"] == UNUSABLE:
                        unusable.add(str(Path(row["target"]).parent))
                    report.frames += row["frames"]
        except KeyboardInterrupt:
            finished = sum(not reason for reason in segments.values())
            clips = f" and {finished} clip segment(s) finished (kept for the next run)" if finished else ""
            raise Interrupted(
                f"stopped: {len(report.written)} photo(s) written{clips}; the same command goes on from there"
            ) from None
        if not_started:
            settings = tuple(filter(None, not_started["settings"].split(",")))
            raise WorkerNotStarted(not_started["reason"], settings=settings)
        for clip in plan.clips:
            reasons = [segments[str(path)] for path in clip.segments if segments.get(str(path))]
            if reasons:
                report.failed.append((str(clip.clip.path), reasons[0]))
                if str(clip.segments[0].parent) in unusable:  # as plain predict leaves nothing for such a clip
                    _remove_work(clip)
                continue
            if report.stopped:  # its finished segments are kept for the next run; the join needs room too
                report.left += 1
                continue
            try:
                tags = not settings.write.strip_metadata
                join_outputs(clip.clip, clip.segments, clip.target, clip.missing, log, tags=tags)
            except DeblurError as err:
                report.failed.append((str(clip.clip.path), str(err)))
                continue
            except OSError as err:
                if (message := full_disk_message(err)) is None:
                    raise
                report.stopped, report.left = message, report.left + 1
                continue
            _remove_work(clip)
            report.written.append(str(clip.missing[0]))
        report.seconds = time.perf_counter() - started
        try:
            report.failed_list = write_failed_list(out, report.failed)
        except OSError as err:
            if not (report.stopped and err.errno in FULL_DISK):
                raise
            storage.remove(storage.join(out, FAILED_LIST))  # an earlier run's list, no longer true; these are printed
        return report


def _remove_work(clip: ClipPlan) -> None:
    """A clip's work folder, and its side-by-side's."""
    for work in (work_folder(clip.target), work_folder(side_by_side_path(clip.target))):
        shutil.rmtree(work, ignore_errors=True)


def _count(number: int, thing: str) -> str:
    return f"{number} {thing}{'' if number == 1 else 's'}"


def write_failed_list(out: str, failed: list[tuple[str, str]]) -> str | None:
    """The dead-letter list, `FAILED_LIST` in `out`: one row per input that failed (file, reason). A list a
    previous run left is replaced, or removed when nothing failed."""
    location = storage.join(out, FAILED_LIST)
    if not failed:
        storage.remove(location)
        return None
    text = io.StringIO()
    writer = csv.writer(text)
    writer.writerow(["file", "reason"])
    writer.writerows(failed)
    storage.write_bytes(location, text.getvalue().encode())
    return location
