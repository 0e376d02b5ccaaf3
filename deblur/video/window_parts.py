"""The work folder of `deblur data from-video`, beside its OUT: the windows finished so far, so that a stopped run goes
on from them when the same command is run again (the frames before them are read past, decoded but not averaged or
written, and the result is the one an unstopped run gives).

    .OUT.parts/recipe.json         the clip (its path, size and time; a folder's frames') and the recipe: another
                                   starts over
    .OUT.parts/windows.jsonl       one line per finished window, in time order: frames, motion, PSNR (none when
                                   skipped as still), written once the window's pair is whole
    .OUT.parts/.windows/{blur,sharp}/NNNNN.png   the pairs, numbered in time order; put in their splits at the end
"""

from __future__ import annotations

import json
import os
import shutil
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import numpy as np
from PIL import Image

from deblur.data.pairs import held_out_count
from deblur.files import atomic_write_text, start_work

PARTS_FORMAT = 1  # the work folder's layout and the windows' recipe: another version's parts start over
RECIPE, WINDOWS = "recipe.json", "windows.jsonl"
ANOTHER_RECIPE = "pairs of an earlier run with another clip, recipe or version of deblur"
# Threads compressing the pairs' PNGs while the next frames are decoded: compression had been two thirds of the
# time (0.6 s a 1080p image), and Pillow lets go of Python's lock while it compresses.
WRITERS = 2


def start_windows(work: Path, recipe: dict, log: Callable[[str], None]) -> list[dict]:
    """The records of the windows an earlier run with the same recipe finished in `work` (their pairs kept;
    anything after them removed); any other work folder is cleared."""
    if not start_work(work, RECIPE, recipe, lambda _: ANOTHER_RECIPE, log):
        (work / WINDOWS).write_text("")
        return []
    records = read_windows(work)
    atomic_write_text(work / WINDOWS, "".join(json.dumps(record) + "\n" for record in records))
    for split in ("train", "test"):  # a run stopped while splitting: its windows are made again
        shutil.rmtree(work / split, ignore_errors=True)
    if records:
        pairs = sum(record["psnr"] is not None for record in records)
        log(f"going on from {work}: {len(records)} window(s) ({pairs} pair(s)) were made before")
    return records


def read_windows(work: Path) -> list[dict]:
    """The finished windows' records, up to the first that is cut short (a run killed mid-line) or whose pair is
    not there whole."""
    records: list[dict] = []
    try:
        lines = (work / WINDOWS).read_text().splitlines()
    except OSError:
        return records
    pairs = 0
    for line in lines:
        try:
            record = json.loads(line)
            kept = record["psnr"] is not None
            record = {"frames": int(record["frames"]), "motion": float(record["motion"]), "psnr": record["psnr"]}
        except (ValueError, TypeError, KeyError):
            break
        if kept and not all((work / ".windows" / kind / f"{pairs:05d}.png").is_file() for kind in ("blur", "sharp")):
            break
        pairs += kept
        records.append(record)
    return records


class WindowWriter:
    """Each new window's pair written, and its record appended to the work folder's `windows.jsonl` once the pair
    is whole, in time order. The PNGs are compressed on `WRITERS` threads while the next frames are decoded, a few
    images ahead at most (each 1080p pair is 12 MB). Leaving the block waits for the images begun, records those
    whole, and drops the rest, their files too; on success every image is written, or its error raised."""

    def __init__(self, work: Path) -> None:
        self.work, self.staged = work, work / ".windows"
        self.pending: deque[tuple[dict, list[Future], list[Path]]] = deque()

    def __enter__(self) -> WindowWriter:
        for kind in ("blur", "sharp"):
            (self.staged / kind).mkdir(parents=True, exist_ok=True)
        self.records = (self.work / WINDOWS).open("a", encoding="utf-8")
        self.pool = ThreadPoolExecutor(WRITERS, thread_name_prefix="deblur-png")
        return self

    def add(self, record: dict, images: dict[str, np.ndarray] | None, pair: int) -> None:
        saved = {self.staged / kind / f"{pair:05d}.png": image for kind, image in (images or {}).items()}
        futures = [self.pool.submit(_save_png, image, path) for path, image in saved.items()]
        self.pending.append((record, futures, list(saved)))
        self._record(wait=False)
        while sum(not future.done() for _, futures, _ in self.pending for future in futures) > 2 * WRITERS:
            self._record(wait=True, first_only=True)

    def _record(self, *, wait: bool, first_only: bool = False) -> None:
        """Records the windows at the front whose pairs are whole; with `wait`, waits for them first (and raises a
        write's error)."""
        while self.pending:
            record, futures, _ = self.pending[0]
            if wait:
                for future in futures:
                    future.result()
            elif not all(future.done() and not future.cancelled() and not future.exception() for future in futures):
                return
            self.pending.popleft()
            self.records.write(json.dumps(record) + "\n")
            self.records.flush()
            if first_only:
                return

    def __exit__(self, kind, error, trace) -> None:
        stopped = error is not None
        try:
            if not stopped:
                self._record(wait=True)
        except BaseException:  # a write's error, found as the last images were waited for
            stopped = True
            raise
        finally:
            self.pool.shutdown(wait=True, cancel_futures=True)
            if stopped:  # what was whole when it stopped is kept for the next run
                self._record(wait=False)
                # and what was not, a full disk's half PNG among them, is not left holding room the next run needs
                for _, _, paths in self.pending:
                    for path in paths:
                        path.unlink(missing_ok=True)
            self.records.close()


def _save_png(image: np.ndarray, path: Path) -> None:
    Image.fromarray(image).save(path)


def finish_work(work: Path, out: Path, name: str, windows: int, val_fraction: float) -> tuple[int, int]:
    """The pairs put in their splits and `work` renamed to `out`; the pairs' count in each split."""
    held = held_out_count(windows, val_fraction, fewest=3)  # one to train on, one left out between
    train = range(windows - held - 1) if held else range(windows)  # one window between: no near-duplicates
    val = range(windows - held, windows) if held else range(0)
    staged = work / ".windows"
    for split, chosen in (("train", train), ("test", val)):
        for index, window in enumerate(chosen):
            for kind in ("blur", "sharp"):
                folder = work / split / name / kind
                folder.mkdir(parents=True, exist_ok=True)
                os.rename(staged / kind / f"{window:05d}.png", folder / f"{index:05d}.png")
    shutil.rmtree(staged)  # and the window between, if any
    (work / WINDOWS).unlink()
    (work / RECIPE).unlink()
    os.rename(work, out)
    return len(train), len(val)
