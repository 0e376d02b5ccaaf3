"""What a distributed run has to do, worked out centrally before any worker starts: one task per photo, one per
segment of each clip (a few seconds of it, as `deblur.video.predict` writes them), none for what a previous run
finished. Tasks are plain rows, as an engine moves them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from deblur.errors import DeblurError, OutputBusyError, OutputExistsError, SettingError
from deblur.files import longest_name, one_run_at_a_time, refuse_folder, side_by_side_path, to_write, work_folder
from deblur.imageio import RAW_SUFFIXES, READ_SUFFIXES, given_once, outputs_only
from deblur.predict import check_output_folder, input_kind, output_paths
from deblur.scale import storage
from deblur.settings import WriteSettings
from deblur.video.clips import VIDEO_SUFFIXES, Clip, frame_times, frames_per_segment, probe_clip
from deblur.video.predict import VideoOptions, clip_job, clip_notes, finished_segments, pair_segment

PHOTO, SEGMENT = "photo", "segment"


@dataclass(frozen=True)
class Task:
    kind: str  # PHOTO or SEGMENT
    source: str  # the input's location
    target: str  # a photo's output, or a segment's file in its clip's work folder
    first: int = 0  # a segment's frames: first to stop
    stop: int = 0


@dataclass
class ClipPlan:
    """A clip whose segments are made by the workers and then joined here."""

    clip: Clip
    target: Path
    segments: list[Path]  # all of them, in order, finished or not
    missing: list[Path]  # the outputs to join: the clip, its side-by-side, or both (`deblur.files.to_write`)


@dataclass
class Plan:
    tasks: list[Task] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # outputs already there, whole
    failed: list[tuple[str, str]] = field(default_factory=list)  # (input, reason), found before any work
    clips: list[ClipPlan] = field(default_factory=list)
    raw: list[str] = field(default_factory=list)  # cameras' RAW files in the folders given, left out
    earlier: list[Path] = field(default_factory=list)  # local folders of earlier runs' outputs, left out
    mark: bool = False  # whether a local outputs' folder is marked as theirs (`deblur.predict.InputPlan.mark`)


def plan_inputs(
    inputs: list[str],
    write: WriteSettings,
    max_pixels: int,
    identity: Callable[[], dict],
    locks: contextlib.ExitStack,
    log: Callable[[str], None] = print,
) -> Plan:
    """The tasks for deblurring `inputs` (files, folders searched recursively, or URLs of either) into
    `write.out`, with the output names plain `deblur predict` gives. `identity()` is the Deblurrer's, asked only
    when there is a clip (it decides whether a clip's finished segments can be used). Each clip's work folder is
    locked as plain predict locks it (a second run is refused), in `locks`, which the caller holds until the run
    ends."""
    out = write.out
    local_out = None if storage.is_url(out) else Path(out)
    if local_out:
        check_output_folder(local_out, [Path(location) for location in inputs if not storage.is_url(location)])
    plan = Plan(mark=local_out is not None and outputs_only(local_out))
    local, remote = [], []
    for location in inputs:
        suffixes = READ_SUFFIXES | VIDEO_SUFFIXES | RAW_SUFFIXES
        found = storage.list_files(location, suffixes, skip=local_out, outputs=plan.earlier)
        # A RAW file in a folder is left out (a camera's RAW + JPEG pairs); one named itself is refused by name.
        if _is_folder(location, found):
            plan.raw += [source for source, name in found if _is_raw(name)]
            found = [(source, name) for source, name in found if not _is_raw(name)]
        (remote if storage.is_url(location) else local).extend(found)
    local, remote = given_once(local), given_once(remote, key=str)  # as plain predict finds them
    plan.raw = list(dict.fromkeys(plan.raw))
    for source, _ in local:
        if not Path(source).exists():
            plan.failed.append((source, f"{source}: no such file"))
    kinds = [(Path(source), Path(name), input_kind(Path(source))) for source, name in local if Path(source).exists()]
    kinds += [(Path(source), Path(name), "photo") for source, name in remote]  # by suffix: objects are not opened
    folder = local_out or Path(".")  # a URL's names are joined to it below
    targets = output_paths(
        kinds,
        folder,
        write.fmt,
        keep_extension=write.keep_extension,
        codec=write.encoding.codec,
        side_by_side=write.side_by_side,
        longest=longest_name(local_out) if local_out else None,  # a bucket's names are its own
    )
    sources = [source for source, _ in local if Path(source).exists()] + [source for source, _ in remote]
    given = set(sources)  # a million inputs are a million lookups
    for source, (path, _, kind) in zip(sources, kinds, strict=True):
        target = storage.join(out, targets[path].as_posix()) if storage.is_url(out) else str(targets[path])
        if target in given:
            raise SettingError(f"{target} would overwrite an input; choose another output folder", settings=("out",))
        if kind == "video":
            _plan_clip(plan, source, target, write, max_pixels, identity, locks, log)
        elif not write.overwrite and finished(target, write):
            plan.skipped.append(target)
        elif refused := _in_the_way(target, write):
            plan.failed.append((source, refused))
        else:
            storage.remove_leftovers(target)
            plan.tasks.append(Task(PHOTO, source, target))
    return plan


def finished(target: str, write: WriteSettings) -> bool:
    """Whether a photo's or a clip's output is there, with its side-by-side when one is asked for (as plain
    predict's `_finished`: one whose side-by-side was missing had been skipped, and the side-by-side never made)."""
    return storage.is_file(target) and (not write.side_by_side or storage.is_file(storage.side_by_side_of(target)))


def _plan_clip(
    plan: Plan,
    source: str,
    target: str,
    write: WriteSettings,
    max_pixels: int,
    identity: Callable[[], dict],
    locks: contextlib.ExitStack,
    log: Callable[[str], None],
) -> None:
    if storage.is_url(write.out):
        plan.failed.append((source, f"{source}: clips are written to a folder the workers share, not to {write.out}"))
        return
    if not write.overwrite and finished(target, write):
        plan.skipped.append(target)
        return
    if refused := _in_the_way(target, write):
        plan.failed.append((source, refused))
        return
    video = VideoOptions(encoding=write.encoding, max_pixels=max_pixels, side_by_side=write.side_by_side)
    try:
        clip = probe_clip(Path(source), max_pixels=max_pixels)
        times = frame_times(clip)
    except DeblurError as err:
        plan.failed.append((source, str(err)))
        return
    for note in clip_notes(clip, write.encoding):  # as plain predict says them after the clip's line
        log(f"{source}: {note}")
    per_segment = frames_per_segment(clip, video.segment_seconds)
    frames = len(times) if times else clip.frames if clip.counted else None
    if not frames:
        plan.failed.append(
            (source, f"{source}: its frames have no timestamps to split it by; deblur it without --engine")
        )
        return
    work = work_folder(Path(target))
    try:
        locks.enter_context(one_run_at_a_time(work, Path(target), "out"))
    except OutputBusyError as err:
        plan.failed.append((source, str(err)))
        return
    if not write.overwrite and finished(target, write):  # the run that held the lock may have finished it
        plan.skipped.append(target)
        return
    job = clip_job(clip, identity(), video, per_segment)
    done = finished_segments(work, job, log, side_by_side=write.side_by_side)
    segments = [work / f"{index:05d}{Path(target).suffix}" for index in range(-(-frames // per_segment))]
    for index, segment in enumerate(segments):
        if segment not in done:
            for made in (segment, pair_segment(segment)) if write.side_by_side else (segment,):
                storage.remove_leftovers(str(made))
            first = index * per_segment
            plan.tasks.append(Task(SEGMENT, source, str(segment), first, min(first + per_segment, frames)))
    plan.clips.append(
        ClipPlan(clip, Path(target), segments, to_write(_outputs(target, write), overwrite=write.overwrite))
    )


def _outputs(target: str, write: WriteSettings) -> tuple[Path, ...]:
    """A local output, and its side-by-side where one is asked for."""
    return (Path(target), side_by_side_path(Path(target))) if write.side_by_side else (Path(target),)


def _in_the_way(target: str, write: WriteSettings) -> str | None:
    """Why an output in a local folder cannot be written, found before any work: a folder where it or its
    side-by-side goes (`deblur.files.refuse_folder`); the worker's writer refuses one made since."""
    if storage.is_url(target):
        return None
    try:
        for output in _outputs(target, write):
            refuse_folder(output)
    except OutputExistsError as err:
        return str(err)
    return None


def _is_raw(name: str) -> bool:
    return Path(name).suffix.lower() in RAW_SUFFIXES


def _is_folder(location: str, found: list[tuple[str, str]]) -> bool:
    """Whether `location` was searched as a folder (`storage.list_files` returns a file's own location)."""
    if storage.is_url(location):
        return any(source != location for source, _ in found)
    return Path(location).is_dir()
