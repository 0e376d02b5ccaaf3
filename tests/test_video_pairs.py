"""`deblur data from-video`: GOPRO's recipe on a clip, and the fine-tuning workflow end to end."""

import os
import re

import av
import numpy as np
import pytest
from helpers import make_clip
from PIL import Image
from typer.testing import CliRunner

from deblur.cli import app
from deblur.errors import OutputExistsError, SettingError
from deblur.video.clips import VideoReadError, probe_clip, read_frames
from deblur.video.pairs import GAMMA, WindowRecipe, pairs_from_video


def frames_of(path):
    with av.open(str(path)) as container:
        return [frame.to_ndarray(format="rgb24") for frame in container.decode(video=0)]


def test_blurry_is_the_linear_light_mean_and_sharp_the_middle_frame(tmp_path):
    folder = tmp_path / "frames"
    folder.mkdir()
    rng = np.random.default_rng(0)
    frames = [rng.integers(0, 256, (16, 20, 3), dtype=np.uint8) for _ in range(14)]
    for index, frame in enumerate(frames):
        Image.fromarray(frame).save(folder / f"{index:03d}.png")
    recipe = WindowRecipe(min_frames=7, max_frames=7, val_fraction=0)
    report = pairs_from_video(folder, tmp_path / "pairs", recipe, fps=240, progress=False, log=lambda _: None)
    assert (report.train_pairs, report.val_pairs, report.frames) == (2, 0, 14)
    for index in range(2):
        window = np.stack(frames[7 * index : 7 * index + 7]).astype(np.float64) / 255
        expected = np.round(np.mean(window**GAMMA, axis=0) ** (1 / GAMMA) * 255)
        pair = tmp_path / "pairs" / "train" / "frames"
        blurry = np.asarray(Image.open(pair / "blur" / f"{index:05d}.png"))
        assert np.abs(blurry - expected).max() <= 1
        assert np.array_equal(np.asarray(Image.open(pair / "sharp" / f"{index:05d}.png")), frames[7 * index + 3])


def test_still_windows_are_skipped_and_the_last_windows_held_out_by_time(tmp_path):
    folder = tmp_path / "frames"
    folder.mkdir()
    still = np.full((16, 20, 3), 100, np.uint8)
    rng = np.random.default_rng(1)
    for index in range(7 * 12):
        moving = index >= 7 * 2  # the first two windows do not move
        frame = rng.integers(0, 256, still.shape, dtype=np.uint8) if moving else still
        Image.fromarray(frame).save(folder / f"{index:03d}.png")
    recipe = WindowRecipe(min_frames=7, max_frames=7, val_fraction=0.2)
    report = pairs_from_video(folder, tmp_path / "pairs", recipe, fps=240, progress=False, log=lambda _: None)
    assert report.skipped_still == 2
    assert (report.train_pairs, report.val_pairs) == (7, 2)  # 10 moving windows: 7, one left out, 2 held out
    assert "2 window(s) with almost no motion skipped" in report.summary()


def test_the_frames_bar_ends_full_when_the_last_window_is_too_short_to_use(tmp_path, monkeypatch):
    import deblur.video.pairs as pairs_module
    from deblur.console import progress_bar

    bars = []
    monkeypatch.setattr(pairs_module, "progress_bar", lambda **kw: bars.append(progress_bar(**kw)) or bars[-1])
    folder = tmp_path / "frames"
    folder.mkdir()
    rng = np.random.default_rng(2)
    for index in range(7 * 3 + 4):  # three windows of 7, then 4 frames too few for a fourth
        Image.fromarray(rng.integers(0, 256, (16, 20, 3), dtype=np.uint8)).save(folder / f"{index:03d}.png")
    recipe = WindowRecipe(min_frames=7, max_frames=7, val_fraction=0.3)
    report = pairs_from_video(folder, tmp_path / "pairs", recipe, fps=240, progress=True, log=lambda _: None)
    assert report.frames == 21
    assert (bars[0].n, bars[0].total) == (25, 25)  # it had stopped at 21 of 25, as a job stopped part way does


def test_each_pair_is_written_as_it_is_made_and_the_held_out_ones_are_the_last(tmp_path, monkeypatch):
    import deblur.video.pairs as video_pairs
    import deblur.video.window_parts as window_parts

    folder = tmp_path / "frames"
    folder.mkdir()
    rng = np.random.default_rng(2)
    frames = [rng.integers(0, 256, (16, 20, 3), dtype=np.uint8) for _ in range(7 * 10)]
    for index, frame in enumerate(frames):
        Image.fromarray(frame).save(folder / f"{index:03d}.png")
    real, on_disk = video_pairs._windows, []

    def counted(*args):
        for window in real(*args):
            on_disk.append(len(list(tmp_path.glob(".pairs.*/.windows/blur/*.png"))))
            yield window

    monkeypatch.setattr(video_pairs, "_windows", counted)
    recipe = WindowRecipe(min_frames=7, max_frames=7, val_fraction=0.2)
    report = pairs_from_video(folder, tmp_path / "pairs", recipe, fps=240, progress=False, log=lambda _: None)
    # not held until the end (a long clip's pairs would fill the memory): at most WRITERS pairs behind
    assert all(window - window_parts.WRITERS <= count <= window for window, count in enumerate(on_disk)), on_disk
    assert (report.train_pairs, report.val_pairs) == (7, 2)
    out = tmp_path / "pairs"
    assert sorted(path.name for path in out.rglob("*") if path.name.startswith(".")) == []
    for split, windows in (("train", range(7)), ("test", range(8, 10))):
        for index, window in enumerate(windows):
            sharp = np.asarray(Image.open(out / split / "frames" / "sharp" / f"{index:05d}.png"))
            assert np.array_equal(sharp, frames[7 * window + 3])


def test_a_clip_of_a_few_windows_holds_the_last_one_out(tmp_path):
    folder = tmp_path / "frames"
    folder.mkdir()
    rng = np.random.default_rng(3)
    for index in range(7 * 4):
        Image.fromarray(rng.integers(0, 256, (16, 20, 3), dtype=np.uint8)).save(folder / f"{index:03d}.png")
    recipe = WindowRecipe(min_frames=7, max_frames=7)  # 0.1 of 4 windows: had been rounded to none
    report = pairs_from_video(folder, tmp_path / "pairs", recipe, fps=240, progress=False, log=lambda _: None)
    assert (report.train_pairs, report.val_pairs) == (2, 1)  # one left out between


@pytest.mark.parametrize("rotation", [90, -90])
def test_a_phones_upright_clip_gives_upright_pairs(tmp_path, rotation):
    # stored on its side and turned by the player: its pairs had come out on their side
    clip = make_clip(tmp_path / "up.mp4", frames=7, size=(48, 64), fps=240, rotation=rotation, audio=False)
    recipe = WindowRecipe(min_frames=7, max_frames=7, min_motion=0.0)
    pairs_from_video(clip, tmp_path / "pairs", recipe, progress=False, log=lambda _: None)
    (sharp,) = (tmp_path / "pairs").glob("*/up/sharp/*.png")
    stored = np.round(list(read_frames(probe_clip(clip)))[3].rgb * 255).astype(np.uint8)  # the middle, as stored
    np.testing.assert_array_equal(np.asarray(Image.open(sharp)), np.rot90(stored, rotation // 90))


def test_a_low_frame_rate_warns_of_ghosts(tmp_path):
    clip = make_clip(tmp_path / "clip.mp4", frames=30, fps=30, audio=False)
    messages = []
    report = pairs_from_video(clip, tmp_path / "pairs", progress=False, log=messages.append)
    assert any("30 fps is below about 120" in m and "ghosts" in m for m in messages)
    assert report.warnings and report.fps == 30


def test_fps_takes_the_place_of_a_clips_rate_where_its_slow_motion_plays_at_30(tmp_path):
    clip = make_clip(tmp_path / "clip.mp4", frames=30, fps=30, audio=False)
    messages = []
    report = pairs_from_video(clip, tmp_path / "pairs", fps=240, progress=False, log=messages.append)
    assert report.fps == 240 and not report.warnings and not any("ghosts" in m for m in messages)


def test_an_hdr_clip_warns_that_its_pairs_are_not_photos(tmp_path):
    clip = make_clip(tmp_path / "phone.mp4", frames=30, fps=120, audio=False, colour=(9, 18))
    messages = []
    pairs_from_video(clip, tmp_path / "pairs", progress=False, log=messages.append)
    assert any(m.startswith("warning: an HDR clip (HLG): its frames are averaged as if") for m in messages)


def test_an_existing_folder_is_never_written_into(tmp_path):
    clip = make_clip(tmp_path / "clip.mp4", frames=14, fps=240, audio=False)
    (tmp_path / "pairs").mkdir()
    with pytest.raises(OutputExistsError):
        pairs_from_video(clip, tmp_path / "pairs", progress=False, log=lambda _: None)
    assert os.listdir(tmp_path / "pairs") == []


def frames_folder(folder, sizes):
    folder.mkdir()
    rng = np.random.default_rng(2)
    for index, (width, height) in enumerate(sizes):
        Image.fromarray(rng.integers(0, 256, (height, width, 3), dtype=np.uint8)).save(folder / f"{index:03d}.png")
    return folder


def test_a_folder_with_frames_of_two_sizes_names_the_odd_one(tmp_path):
    folder = frames_folder(tmp_path / "frames", [(20, 16)] * 4 + [(18, 16)] + [(20, 16)] * 4)
    with pytest.raises(VideoReadError, match=r"004\.png: 18x16, where the first frame, 000\.png, is 20x16"):
        pairs_from_video(folder, tmp_path / "pairs", fps=240, progress=False, log=lambda _: None)
    assert not (tmp_path / "pairs").exists()


def test_a_negative_seed_is_named_not_numpys_traceback():
    with pytest.raises(SettingError, match="seed must be between 0 and 4294967295: -1") as refused:
        WindowRecipe(seed=-1)
    assert refused.value.settings == ("seed",)


@pytest.mark.parametrize(
    "settings, said",
    [
        # each had ended on a TypeError from inside: range(), a comparison, NumPy's SeedSequence
        (dict(min_frames=3.5), "min_frames must be a whole number: 3.5"),
        (dict(max_frames="9"), "max_frames must be a whole number: '9'"),
        (dict(seed=0.5), "seed must be a whole number: 0.5"),
        (dict(val_fraction="0.1"), "val_fraction must be a number: '0.1'"),
        # NaN and -1 had skipped no window, 5 every one
        (dict(min_motion=float("nan")), "min_motion must be from 0 to 1 (a mean difference of frames in [0, 1]): nan"),
        (dict(min_motion=-1), "min_motion must be from 0 to 1"),
        (dict(min_motion=5), "min_motion must be from 0 to 1"),
    ],
)
def test_a_window_recipe_it_cannot_use_is_named(settings, said):
    with pytest.raises(SettingError) as refused:
        WindowRecipe(**settings)
    assert said in str(refused.value) and refused.value.settings == tuple(settings)


@pytest.mark.parametrize(
    "call, said, setting",
    [
        (dict(fps="30"), "fps must be between 1 and 1000000: '30'", "fps"),  # had been a TypeError
        (dict(source=5), "the clip is int: give its path", "source"),
        (dict(recipe={"min_frames": 3}), "recipe is dict: give a WindowRecipe", "recipe"),  # asdict()'s TypeError
    ],
)
def test_pairs_from_video_names_an_argument_of_the_wrong_kind(tmp_path, call, said, setting):
    folder = frames_folder(tmp_path / "frames", [(20, 16)] * 8)
    given = {"source": folder, "out": tmp_path / "pairs"} | call
    with pytest.raises(SettingError, match=re.escape(said)) as refused:
        pairs_from_video(**given, progress=False, log=lambda _: None)
    assert refused.value.settings == (setting,) and not (tmp_path / "pairs").exists()


@pytest.mark.parametrize("fps", [float("inf"), float("nan"), 0.5])
def test_a_frame_rate_that_is_no_camera_s_is_named(tmp_path, fps):
    folder = frames_folder(tmp_path / "frames", [(20, 16)] * 8)
    with pytest.raises(SettingError, match=f"fps must be between 1 and 1000000: {fps}") as refused:
        pairs_from_video(folder, tmp_path / "pairs", fps=fps, progress=False, log=lambda _: None)
    assert refused.value.settings == ("fps",)
    assert not (tmp_path / "pairs").exists()


def test_too_few_frames_for_a_window_says_so(tmp_path):
    folder = frames_folder(tmp_path / "frames", [(20, 16)] * 8)
    recipe = WindowRecipe(min_frames=9, max_frames=9)
    with pytest.raises(VideoReadError, match=r"8 frame\(s\), too few for one window of 9 to 9 \(--min-frames"):
        pairs_from_video(folder, tmp_path / "pairs", recipe, fps=240, progress=False, log=lambda _: None)


def test_pairs_inside_the_frames_folder_are_refused(tmp_path):
    folder = frames_folder(tmp_path / "frames", [(20, 16)] * 8)
    with pytest.raises(SettingError, match=r"frames/pairs is inside .*frames: the next run"):
        pairs_from_video(folder, folder / "pairs", fps=240, progress=False, log=lambda _: None)


def test_a_photo_is_refused_as_not_a_clip(tmp_path):
    photo = tmp_path / "photo.dat"  # read by its header, not its suffix
    Image.fromarray(np.zeros((16, 20, 3), np.uint8)).save(photo, format="PNG")
    messages = []
    with pytest.raises(VideoReadError, match="a photo, not a clip"):
        pairs_from_video(photo, tmp_path / "pairs", progress=False, log=messages.append)
    assert messages == []  # no warning of its frame rate first


@pytest.mark.slow
def test_fine_tuning_on_pairs_from_a_slow_motion_clip(tmp_path, monkeypatch):
    """The docs' workflow: pairs from a clip, fine-tune the shipped model on them, deblur a clip with the result."""
    monkeypatch.chdir(tmp_path)
    make_clip(tmp_path / "slowmo.mp4", frames=120, fps=240, size=(96, 128), audio=False)
    make_clip(tmp_path / "clip.mp4", frames=4, size=(96, 128))
    runner = CliRunner()
    made = runner.invoke(app, ["data", "from-video", "slowmo.mp4", "--out", "my-pairs", "-q"])
    assert made.exit_code == 0, made.output
    assert "pairs (" in made.output and runner.invoke(app, ["data", "check", "my-pairs", "-q"]).exit_code == 0
    trained = runner.invoke(
        app,
        ["train", "--init", "pretrained", "--data", "my-pairs", "--out", "runs/mine", "-q"]
        + ["--epochs", "1", "--steps-per-epoch", "2", "--patch-size", "64", "--batch-size", "2"],
    )
    assert trained.exit_code == 0, trained.output
    deblurred = runner.invoke(app, ["predict", "clip.mp4", "--model", "runs/mine/model.keras", "-q"])
    assert deblurred.exit_code == 0, deblurred.output
    assert len(frames_of(tmp_path / "deblurred" / "clip.mp4")) == 4
