"""`deblur evaluate`: full-image PSNR and SSIM of the model, the blurry input and classical deblurring.

Every image is scored whole against its sharp partner (the model runs tiled on large images, as `predict` does).
Pairs are read as training reads them (RGB, no EXIF rotation), HWC float32 in [0, 1].
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import get_args

import numpy as np

from deblur.config import EvaluationSplit
from deblur.console import progress_bar
from deblur.data.pairs import DatasetError, Pair, Splits, check_pairs, discover, problem_listing
from deblur.data.sequence import load_rgb
from deblur.data.writer import kernel_file
from deblur.errors import (
    Interrupted,
    OutputExistsError,
    SettingError,
    check_choice,
    check_switches,
    given_log,
    is_whole_number,
)
from deblur.evaluation.align import aligned_scores, smallest_side
from deblur.evaluation.baselines import WITH_KERNEL, WITHOUT_KERNEL
from deblur.evaluation.report import EvaluationReport, ImageResult
from deblur.evaluation.resume import ScoredSoFar, parts_file
from deblur.files import as_path, atomic_write_text, check_parent, one_run_at_a_time, refuse_existing
from deblur.inference import Deblurrer, open_deblurrer
from deblur.losses import SSIM_WINDOW, psnr, ssim
from deblur.paths import choose_model
from deblur.runtime import DEFAULT_RUNTIME
from deblur.ways import DEFAULT_METHOD

MAX_REPORT_BYTES = 256 * 2**20  # a results file is far smaller: what is larger is not one, and is not read

SPLITS = get_args(EvaluationSplit)


def evaluation_pairs(
    root: str | Path, split: str = "auto", limit: int | None = None, *, align: bool = False
) -> list[Pair]:
    """The pairs to score, after the same checks as training (all problems listed at once), and large enough to
    score (`align`: at shifts). `split` "auto" is the held-out split of data that has split folders (GOPRO's
    test/), and all the pairs of a flat blur/ + sharp/ folder, whose 1-in-10 validation carve-out is training's,
    not the data's."""
    check_choice("split", split, SPLITS)
    check_switches(align=align)  # "no" had held the pairs to --align's sizes: a string is true
    if limit is not None and (not is_whole_number(limit) or limit < 1):  # 0 had scored every pair, -1 all but one
        raise SettingError(
            f"limit must be a whole number of at least 1 (or None, for every pair): {limit!r}", settings=("limit",)
        )
    splits, problems = discover(root)
    split = resolve_split(splits, split)
    pairs = {"val": splits.val, "train": splits.train, "all": splits.every}[split]
    pairs = pairs[:limit] if limit else pairs
    smallest, reason = (smallest_side(), "that --align scores") if align else (SSIM_WINDOW, "that SSIM scores")
    problems += check_pairs(pairs, smallest, progress=False, min_size_for=reason)
    if problems:
        raise DatasetError(
            f"the data in {root} has {len(problems)} problem(s); nothing was evaluated:\n{problem_listing(problems)}"
        )
    if not pairs:
        raise DatasetError(f"no {split} pairs under {root}")
    return pairs


def resolve_split(splits: Splits, split: str) -> str:
    """What "auto" means for these splits (see `evaluation_pairs`); any other split is itself."""
    if split != "auto":
        return split
    return "val" if splits.layout == "gopro" else "all"


def evaluate(
    deblurrer: Deblurrer,
    pairs: list[Pair],
    *,
    model_name: str,
    data_name: str,
    split: str,
    baselines: bool = True,
    align: bool = False,
    progress: bool = True,
    scored: ScoredSoFar | None = None,
) -> EvaluationReport:
    """Score the model, the blurry input and (with `baselines`) classical deblurring on every pair; with `align`,
    also at each one's best sub-pixel shift (`deblur.evaluation.align`). With `scored`, pairs it holds are taken
    from it, and each pair scored here is added to it."""
    if not isinstance(deblurrer, Deblurrer):  # a model's path had ended on AttributeError: 'str' ... 'precision'
        raise SettingError(
            f"deblurrer must be a Deblurrer, not {type(deblurrer).__name__}: deblur.load_deblurrer(model) opens "
            "one (or deblur.evaluate_model(model, data) does both)",
            settings=("deblurrer",),
        )
    check_switches(baselines=baselines, align=align, progress=progress)
    # A dataset's folder had been read letter by letter ("'str' object has no attribute 'blurry'"), and a generator
    # of no pairs passed the check below as one of some.
    if isinstance(pairs, str | os.PathLike) or not isinstance(pairs, Iterable):
        raise SettingError(
            f"pairs is {pairs!r:.80}: give the pairs, as deblur.evaluation_pairs(root) "
            "lists a dataset's (or deblur.evaluate_model(model, data) does both)",
            settings=("pairs",),
        )
    pairs = list(pairs)
    if strays := [pair for pair in pairs if not isinstance(pair, Pair)]:
        raise SettingError(
            f"pairs holds {strays[0]!r:.80}, not a Pair: deblur.evaluation_pairs(root) lists a dataset's",
            settings=("pairs",),
        )
    if not pairs:  # a report of no image has no mean, and had looked like a run that scored nothing
        raise DatasetError("no pairs to evaluate: `deblur.evaluation_pairs(root)` lists a dataset's")
    report = EvaluationReport(
        model_name,
        data_name,
        split,
        deblurrer.precision,
        deblurrer.ensemble,
        method=deblurrer.way().name,
        estimates=deblurrer.estimates,
    )
    for pair in progress_bar(pairs, desc="evaluating", unit="image", disable=not progress):
        if scored and (before := scored.get(pair)):
            report.images.append(before)
            continue
        blurry, sharp = _read(pair.blurry), _read(pair.sharp)
        outputs, seconds = {"blurry": blurry}, {}
        started = time.perf_counter()
        outputs["model"] = deblurrer(blurry)
        seconds["model"] = time.perf_counter() - started
        kernel_path = kernel_file(pair.blurry)
        kernel = np.load(kernel_path) if kernel_path.is_file() else None
        if baselines:
            methods = WITH_KERNEL if kernel is not None else WITHOUT_KERNEL
            for name, restore in methods.items():
                started = time.perf_counter()
                outputs[name] = restore(blurry, kernel)
                seconds[name] = time.perf_counter() - started
        order = ["model", "blurry", *(m for m in outputs if m not in ("model", "blurry"))]
        result = ImageResult(
            pair.name,
            blurry.shape[1],
            blurry.shape[0],
            {m: _score(psnr, sharp, outputs[m]) for m in order},
            {m: _score(ssim, sharp, outputs[m]) for m in order},
            kernel is not None,
            {m: round(s, 3) for m, s in seconds.items()},
        )
        if align:
            for method in order:
                scores = aligned_scores(sharp, outputs[method])
                result.aligned_psnr[method], result.aligned_ssim[method] = scores.psnr, scores.ssim
                result.shift[method] = scores.shift
        report.images.append(result)
        if scored:
            scored.add(pair, result)
    return report


def evaluate_model(
    model: str | Path | None,
    data: str | Path,
    *,
    split: str = "auto",
    limit: int | None = None,
    precision: str = "auto",
    runtime: str = DEFAULT_RUNTIME,
    method: str = DEFAULT_METHOD,
    ensemble: int = 1,
    estimates: int | None = None,
    baselines: bool = True,
    align: bool = False,
    out: str | Path | None = None,
    overwrite: bool = False,
    progress: bool = True,
    log: Callable[[str], None] = print,
) -> EvaluationReport:
    """`deblur evaluate`: load the model (`model` as `deblur.paths.choose_model` takes it), score it on the pairs
    of `data`, and write the report as JSON to `out` (atomically; an existing file only with `overwrite`, checked
    before anything runs)."""
    # before the model loads; progress="no" had drawn bars: a string is true
    check_switches(baselines=baselines, align=align, overwrite=overwrite, progress=progress)
    log = given_log(log)
    out = None if out is None else as_path(out, "the results file", "out")  # 5 had been Path's TypeError
    if overwrite and out is None:  # it went unused without a word
        raise SettingError(
            "overwrite replaces a results file, and none is named: give the file too", settings=("overwrite", "out")
        )
    if out is not None:
        check_parent(out, "out")
    if out is not None and out.is_dir():
        raise OutputExistsError(f"{out} is a folder: give a file for the results (JSON)", settings=("out",))
    if out is not None:
        _refuse_existing(out, overwrite)
    with contextlib.ExitStack() as held:
        chosen = choose_model(model, kernel_aware=method == "kernel-aware")
        pairs = evaluation_pairs(data, split, limit, align=align)  # the data is checked before the slow load
        splits, asked = discover(data)[0], split
        split = resolve_split(splits, split)
        if out is not None:  # one run at a time on FILE: two would append to one file of scores
            held.enter_context(one_run_at_a_time(parts_file(out), out, "out"))
            _refuse_existing(out, overwrite)  # again, with the lock held: another run may just have written it
        deblurrer, _ = open_deblurrer(
            chosen, precision=precision, runtime=runtime, method=method, ensemble=ensemble, estimates=estimates, log=log
        )
        whole = " (a flat folder has no split of its own: all its pairs)" if asked == "auto" and split == "all" else ""
        log(f"{len(pairs)} {split} pair(s) from {data}{whole}")
        scored = None
        if out is not None:  # a stopped run goes on from the pairs it scored
            settings = {"data": str(Path(data).resolve()), "split": split, "baselines": baselines, "align": align}
            scored = ScoredSoFar(out, {"deblurrer": deblurrer.identity(), **settings})
            if before := sum(scored.get(pair) is not None for pair in pairs):
                log(f"going on from {scored.path}: {before} of {len(pairs)} pair(s) were scored before")
        try:
            report = evaluate(
                deblurrer,
                pairs,
                model_name=str(chosen.path),
                data_name=str(data),
                split=split,
                baselines=baselines,
                align=align,
                progress=progress,
                scored=scored,
            )
        except KeyboardInterrupt:
            if scored is None:
                raise Interrupted(
                    "stopped: nothing was kept; with --out FILE, a stopped evaluation goes on from the pairs it scored"
                ) from None
            kept = sum(scored.get(pair) is not None for pair in pairs)
            raise Interrupted(
                f"stopped: the scores of {kept} of {len(pairs)} pair(s) are kept in {scored.path}; the same command "
                "goes on from them"
            ) from None
        if out is not None and scored is not None:
            atomic_write_text(out, json.dumps(report.to_json(), indent=2) + "\n")
            scored.finished()
        return report


def _refuse_existing(out: Path, overwrite: bool) -> None:
    """An existing `out` only with `overwrite`, and then only one that holds results: `--out photo.png
    --overwrite` (or the model's own file) had been replaced by the scores. A finished evaluation's results are
    said to be that: the same command run again had said only that the file exists."""
    report = _report(out) if out.exists() else None
    if report is not None and not overwrite:
        mean = report["mean"] if isinstance(report["mean"], dict) else {}
        psnr = mean.get("psnr") if isinstance(mean.get("psnr"), dict) else {}
        model, blurry = psnr.get("model"), psnr.get("blurry")
        scores = f"{mean.get('images')} pair(s)"
        if isinstance(model, float) and isinstance(blurry, float):
            scores += f", mean PSNR {model:.2f} dB against the blurry photos' {blurry:.2f}"
        raise OutputExistsError(
            f"{out} holds the results of a finished evaluation ({scores}): read them there, or give --overwrite to "
            "evaluate again, replacing them",
            settings=("out", "overwrite"),
        )
    refuse_existing(out, overwrite=overwrite, settings=("out", "overwrite"))
    if out.exists() and report is None:
        raise OutputExistsError(f"{out} exists and is not a results file (JSON): not replacing it", settings=("out",))


def _report(path: Path) -> dict | None:
    """The results `deblur evaluate` wrote in `path`, or None where it holds none."""
    try:
        if path.stat().st_size > MAX_REPORT_BYTES:
            return None
        report = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    return report if isinstance(report, dict) and {"mean", "images"} <= report.keys() else None


def _read(path: Path) -> np.ndarray:
    try:
        return load_rgb(path).astype(np.float32) / 255.0
    except (OSError, SyntaxError, ValueError) as err:  # the check reads headers only: a truncated file gets here
        raise DatasetError(f"{path}: not a readable image ({err}); nothing was written") from None


def _score(metric, sharp: np.ndarray, restored: np.ndarray) -> float:
    return float(np.asarray(metric(sharp[None], restored[None]))[0])
