"""`deblur data from-video`'s work folder: a stopped or failed run goes on to the pairs an unstopped run makes."""

import itertools
import json
import threading

import numpy as np
import pytest
from PIL import Image

import deblur.video.pairs as video_pairs
import deblur.video.window_parts as window_parts
from deblur.errors import Interrupted, OutputBusyError
from deblur.video.pairs import WindowRecipe, pairs_from_video


def shaky_frames(folder):
    """Frames that move, but for a stretch that does not (its windows are skipped as still)."""
    folder.mkdir()
    rng = np.random.default_rng(3)
    still = rng.integers(0, 256, (16, 20, 3), dtype=np.uint8)
    for index in range(60):
        frame = still if 12 <= index < 32 else rng.integers(0, 256, still.shape, dtype=np.uint8)
        Image.fromarray(frame).save(folder / f"{index:03d}.png")
    return folder


def files_of(folder):
    return {path.relative_to(folder): path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


@pytest.mark.parametrize("failure", [OSError("No space left on device"), KeyboardInterrupt()])
def test_a_stopped_or_failed_run_goes_on_to_the_pairs_of_an_unstopped_one(tmp_path, monkeypatch, failure):
    folder = shaky_frames(tmp_path / "frames")
    recipe = WindowRecipe(min_frames=3, max_frames=7)  # windows of drawn lengths: a resumed run draws the same
    quiet = {"fps": 240, "progress": False, "log": lambda _: None}
    whole = pairs_from_video(folder, tmp_path / "whole", recipe, **quiet)
    assert whole.skipped_still >= 2 and whole.train_pairs + whole.val_pairs >= 6
    real, calls = window_parts._save_png, itertools.count()

    def save(image, path):
        if next(calls) == 5:  # the third pair's sharp image, on one of the writer threads
            raise failure
        real(image, path)

    monkeypatch.setattr(window_parts, "_save_png", save)
    with pytest.raises(Interrupted if isinstance(failure, KeyboardInterrupt) else OSError) as stopped:
        pairs_from_video(folder, tmp_path / "pairs", recipe, **quiet)
    assert not (tmp_path / "pairs").exists()
    assert not [thread for thread in threading.enumerate() if thread.name.startswith("deblur-png")]
    work = tmp_path / ".pairs.parts"
    records = [json.loads(line) for line in (work / "windows.jsonl").read_text().splitlines()]
    assert sum(record["psnr"] is not None for record in records) == 2  # the two whole pairs, and still windows
    # nothing of the pairs not recorded: the third's blurry image, written, had kept its room until the next run
    staged = sorted(path.relative_to(work / ".windows").as_posix() for path in (work / ".windows").rglob("*.png"))
    assert staged == ["blur/00000.png", "blur/00001.png", "sharp/00000.png", "sharp/00001.png"]
    if isinstance(failure, KeyboardInterrupt):
        assert str(stopped.value).startswith(f"stopped: {len(records)} window(s) of frames are kept in {work}")

    monkeypatch.setattr(window_parts, "_save_png", real)
    messages = []
    report = pairs_from_video(folder, tmp_path / "pairs", recipe, **{**quiet, "log": messages.append})
    assert f"going on from {work}: {len(records)} window(s) (2 pair(s)) were made before" in messages
    assert (report.frames, report.train_pairs, report.val_pairs) == (whole.frames, whole.train_pairs, whole.val_pairs)
    assert (report.skipped_still, report.motion, report.blur_psnr) == (
        whole.skipped_still,
        whole.motion,
        whole.blur_psnr,
    )
    assert files_of(tmp_path / "pairs") == files_of(tmp_path / "whole")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["frames", "pairs", "whole"]


def test_a_cut_record_is_made_again_and_another_recipe_starts_over(tmp_path, monkeypatch):
    folder = shaky_frames(tmp_path / "frames")
    quiet = {"fps": 240, "progress": False, "log": lambda _: None}
    pairs_from_video(folder, tmp_path / "whole", WindowRecipe(min_frames=5, max_frames=5), **quiet)

    def stop(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(video_pairs, "finish_work", stop)
    with pytest.raises(Interrupted):
        pairs_from_video(folder, tmp_path / "pairs", WindowRecipe(min_frames=5, max_frames=5), **quiet)
    work = tmp_path / ".pairs.parts"
    lines = (work / "windows.jsonl").read_text().splitlines()
    (work / "windows.jsonl").write_text("\n".join(lines[:3]) + "\n" + lines[3][:9])  # killed mid-line
    monkeypatch.undo()
    messages = []
    pairs_from_video(
        folder, tmp_path / "pairs", WindowRecipe(min_frames=5, max_frames=5), **{**quiet, "log": messages.append}
    )
    assert any(message.startswith(f"going on from {work}: 3 window(s)") for message in messages)
    assert files_of(tmp_path / "pairs") == files_of(tmp_path / "whole")

    with pytest.raises(Interrupted):
        monkeypatch.setattr(video_pairs, "finish_work", stop)
        pairs_from_video(folder, tmp_path / "other", WindowRecipe(min_frames=5, max_frames=5), **quiet)
    monkeypatch.undo()
    messages = []
    pairs_from_video(
        folder, tmp_path / "other", WindowRecipe(min_frames=7, max_frames=7), **{**quiet, "log": messages.append}
    )
    assert any("another clip, recipe or version of deblur; starting over" in message for message in messages)


def test_a_second_run_on_the_same_out_is_refused_while_the_first_goes_on(tmp_path):
    from deblur.files import one_run_at_a_time

    folder = shaky_frames(tmp_path / "frames")
    with (
        one_run_at_a_time(tmp_path / ".pairs.parts", tmp_path / "pairs", "out"),
        pytest.raises(OutputBusyError, match=r"another deblur run is writing .*pairs \(its work in"),
    ):
        pairs_from_video(folder, tmp_path / "pairs", fps=240, progress=False, log=lambda _: None)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["frames"]
