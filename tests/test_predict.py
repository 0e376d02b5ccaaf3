"""`deblur predict` on photos as people have them: name clashes, mistyped paths, phones' photos."""

import contextlib
import re
import time
from pathlib import Path

import numpy as np
import pytest
from helpers import make_clip, save_model, walks_of
from PIL import Image
from typer.testing import CliRunner

from deblur.cli import app
from deblur.imageio import OUTPUTS_MARK

runner = CliRunner()


def model_never_loads(monkeypatch) -> None:
    """What is checked must be refused before the model loads: loading it fails the test."""
    import deblur.inference

    def never(*args, **kwargs):
        raise AssertionError("the model was loaded")

    monkeypatch.setattr(deblur.inference, "open_deblurrer", never)


def noise(shape, seed=0):
    return np.random.default_rng(seed).integers(0, 256, shape, dtype=np.uint8)


def test_every_name_clash_is_listed_before_any_work_and_keep_extension_tells_them_apart(tmp_path):
    model = save_model(tmp_path / "identity")
    src = tmp_path / "in"
    src.mkdir()
    for name in ("photo.webp", "photo.tiff", "other.png", "other.jpg", "single.png"):
        Image.fromarray(noise((16, 16, 3))).save(src / name)
    out = tmp_path / "out"
    result = runner.invoke(app, ["predict", str(src), "--model", str(model), "--out", str(out), "-q"])
    assert result.exit_code == 1
    assert "2 output name(s) taken by more than one input; nothing was deblurred" in result.output
    assert "photo.png" in result.output and "other.png" in result.output and "--keep-extension" in result.output
    assert not out.exists()
    result = runner.invoke(app, ["predict", str(src), "--model", str(model), "--out", str(out), "--keep-extension"])
    assert result.exit_code == 0, result.output
    names = sorted(path.name for path in out.iterdir())
    assert names == [
        OUTPUTS_MARK,
        "other.jpg.png",
        "other.png.png",
        "photo.tiff.png",
        "photo.webp.png",
        "single.png.png",
    ]


def test_a_side_by_side_named_as_another_inputs_output_is_a_clash_before_any_work(tmp_path, monkeypatch):
    from deblur.predict import NameClashError
    from deblur.scale.plan import plan_inputs as plan_tasks
    from deblur.settings import WriteSettings

    model_never_loads(monkeypatch)
    src, out = tmp_path / "in", tmp_path / "out"
    src.mkdir()
    for name in ("a.png", "a_side_by_side.png"):  # a's side-by-side had been kept as the other's output
        Image.fromarray(noise((16, 16, 3))).save(src / name)
    result = runner.invoke(app, ["predict", str(src), "--out", str(out), "--side-by-side", "-q"])
    assert result.exit_code == 1 and not out.exists(), result.output
    assert (
        f"  - {src / 'a.png'}'s side-by-side, {src / 'a_side_by_side.png'} would all be written to "
        f"{out / 'a_side_by_side.png'}\n" in result.output
    )
    with pytest.raises(NameClashError, match="would all be written to"):  # the engine's plan, the same
        plan_tasks([str(src)], WriteSettings(out=str(out), side_by_side=True), 10**8, dict, contextlib.ExitStack())
    # a side-by-side over an input, given one by one into their own folder
    given = [str(src / "a.png"), str(src / "a_side_by_side.png"), "--out", str(src), "--side-by-side", "-q"]
    result = runner.invoke(app, ["predict", *given])
    assert result.exit_code == 1 and f"{src / 'a_side_by_side.png'} would overwrite an input" in result.output


def test_photos_of_one_name_from_two_folders_are_told_to_go_to_two_output_folders(tmp_path, monkeypatch):
    model_never_loads(monkeypatch)
    out = tmp_path / "out"
    for folder in ("x", "y"):
        (tmp_path / folder).mkdir()
        Image.fromarray(noise((16, 16, 3))).save(tmp_path / folder / "a.png")
    for given in ([tmp_path / "x", tmp_path / "y"], [tmp_path / "x" / "a.png", tmp_path / "y" / "a.png"]):
        result = runner.invoke(app, ["predict", *map(str, given), "--out", str(out), "-q"])
        assert result.exit_code == 1 and not out.exists(), result.output
        # --keep-extension, which had been the advice, writes both to a.png.png
        said = " ".join(result.output.split())
        assert "inputs of one name from different folders: deblur each folder into its own output folder" in said
        assert "--keep-extension" not in result.output and "(--out)" in result.output


def test_plan_inputs_takes_one_path_as_a_string_and_names_what_it_cannot_take(tmp_path, monkeypatch):
    from deblur.errors import SettingError
    from deblur.predict import plan_inputs
    from deblur.settings import WriteSettings

    for name in ("a.png", "b.png"):
        Image.fromarray(noise((16, 16, 3))).save(tmp_path / name)
    monkeypatch.chdir(tmp_path)
    write = WriteSettings(out=str(tmp_path / "out"))
    # read letter by letter, its "." had planned every photo in this folder
    plan = plan_inputs("a.png", write)
    assert [item.source for item in plan.todo] == [Path("a.png")] and not plan.missing
    for inputs, options, said in [
        ([], {}, "no inputs: name a photo, clip or folder"),
        (["a.png"], {"max_pixels": float("nan")}, "max_pixels must be a whole number of pixels, at least 1; got nan"),
        (["a.png"], {"write": "out"}, "write is str: give WriteSettings(out=folder, ...)"),
    ]:
        with pytest.raises(SettingError, match=re.escape(said)):
            plan_inputs(inputs, **({"write": write} | options))


def test_a_photo_given_twice_is_deblurred_once(tmp_path, monkeypatch):
    from deblur.predict import plan_inputs
    from deblur.scale.plan import plan_inputs as plan_tasks
    from deblur.settings import WriteSettings

    src, out = tmp_path / "in", tmp_path / "out"
    src.mkdir()
    Image.fromarray(noise((16, 16, 3))).save(src / "a.png")
    Image.fromarray(noise((16, 16, 3))).save(src / "a.dng", format="TIFF")  # a camera's RAW, left out and said
    monkeypatch.chdir(tmp_path)
    # twice by one name, by another, and as a folder's: it had been a name clash with itself
    given = ["in/a.png", "in/a.png", str(src / "a.png"), "in", "./in/a.png", "in"]
    plan = plan_inputs(given, WriteSettings(out=str(out)))
    assert [(item.source, item.target) for item in plan.todo] == [(Path("in/a.png"), out / "a.png")]
    assert plan.raw == [Path("in/a.dng")]
    tasks = plan_tasks(given, WriteSettings(out=str(out)), 10**8, dict, contextlib.ExitStack())
    assert [(task.source, task.target) for task in tasks.tasks] == [("in/a.png", str(out / "a.png"))]
    assert tasks.raw == ["in/a.dng"]


def test_a_clip_under_a_photos_name_is_said_to_be_one(tmp_path):
    # a "GIF" saved from a site that sends MP4: it had been "not a readable image"
    make_clip(tmp_path / "clip.mp4", frames=3, audio=False).rename(tmp_path / "funny.gif")
    (tmp_path / "shot.cr3").write_bytes((tmp_path / "funny.gif").read_bytes())  # FFmpeg opens a CR3 as a clip
    Image.fromarray(noise((16, 16, 3))).save(tmp_path / "a.png")
    (tmp_path / "b.png").write_bytes(b"\x89PNG not really")
    given = [str(tmp_path / name) for name in ("funny.gif", "a.png", "b.png", "shot.cr3")]
    model, out = save_model(tmp_path / "m"), tmp_path / "out"
    result = runner.invoke(app, ["predict", *given, "--model", str(model), "--out", str(out), "-q"])
    assert result.exit_code == 1 and "1 written, 3 failed" in result.output, result.output
    assert f"failed: {tmp_path / 'shot.cr3'}: a camera RAW file (.cr3)" in result.output
    assert (
        f"failed: {tmp_path / 'funny.gif'}: a video clip (MP4) under a photo's name: name it as a clip (e.g. "
        "funny.mp4) to deblur it" in result.output
    )
    assert f"failed: {tmp_path / 'b.png'}: not a readable image" in result.output


def test_a_mistyped_path_is_named_before_the_model_loads(tmp_path, monkeypatch):
    model_never_loads(monkeypatch)
    Image.fromarray(noise((16, 16, 3))).save(tmp_path / "real.png")
    result = runner.invoke(app, ["predict", str(tmp_path / "real.png"), str(tmp_path / "tpyo.png"), "-q"])
    assert result.exit_code == 1
    assert f"no such file or folder: {tmp_path / 'tpyo.png'}" in result.output
    assert "--out" not in result.output  # a mistyped photo is not a mistaken output folder


def test_an_output_folder_given_as_the_last_input_is_pointed_to_out(tmp_path, monkeypatch):
    model_never_loads(monkeypatch)
    Image.fromarray(noise((16, 16, 3))).save(tmp_path / "real.png")
    results = tmp_path / "results"
    result = runner.invoke(app, ["predict", str(tmp_path / "real.png"), str(results), "-q"])
    assert result.exit_code == 1
    assert f"no such file or folder: {results}; nothing was deblurred" in result.output
    assert f"meant as the output folder: it is given with --out, as in --out {results}" in result.output
    assert not results.exists()


def test_an_out_named_as_a_photo_is_refused_before_the_model_loads(tmp_path, monkeypatch):
    model_never_loads(monkeypatch)
    Image.fromarray(noise((16, 16, 3))).save(tmp_path / "real.png")
    for engine in ([], ["--engine", "ray"]):
        out = tmp_path / "sharp.JPG"
        result = runner.invoke(app, ["predict", str(tmp_path / "real.png"), "--out", str(out), *engine, "-q"])
        assert result.exit_code == 1 and "looks like a photo's or clip's name, but --out is a folder" in result.output
        assert not out.exists()
    (tmp_path / "kept.png").mkdir()  # a folder already so named is the user's choice
    result = runner.invoke(app, ["predict", str(tmp_path / "real.png"), "--out", str(tmp_path / "kept.png")])
    assert isinstance(result.exception, AssertionError) and "looks like" not in result.output  # on to the model


def test_an_output_over_an_input_is_named_once(tmp_path):
    folder = tmp_path / "photos"
    folder.mkdir()
    for name in ("a.png", "a.jpg"):  # as a first run with --format jpg into the same folder leaves it
        Image.fromarray(noise((16, 16, 3))).save(folder / name)
    inputs = [str(folder / "a.png"), str(folder / "a.jpg")]
    result = runner.invoke(app, ["predict", *inputs, "--out", str(folder), "--format", "jpg", "-q"])
    assert result.exit_code == 1
    assert result.output.count("would overwrite an input") == 1, result.output


def test_results_in_the_photos_folder_are_never_read_as_inputs(tmp_path, monkeypatch):
    from deblur.scale import storage

    model = save_model(tmp_path / "identity")
    photos = tmp_path / "photos"
    (photos / "day").mkdir(parents=True)
    (photos / ".thumbnails").mkdir()  # as a phone's DCIM holds one: not photos to deblur
    (photos / "day" / "@eaDir" / "b.png").mkdir(parents=True)  # a Synology NAS's thumbnails of day/b.png
    for name in ("a.png", "day/b.png", ".thumbnails/a.png", "day/@eaDir/b.png/SYNOPHOTO_THUMB_XL.png"):
        Image.fromarray(noise((16, 16, 3))).save(photos / name)
    out = photos / "deblurred"  # as `cd photos; deblur predict .` makes it
    args = ["predict", str(photos), "--model", str(model), "--out", str(out)]
    first = runner.invoke(app, args)
    assert first.exit_code == 0 and "2 written" in first.output, first.output
    again = runner.invoke(app, args)  # a second run had read deblurred/a.png as an input that it would overwrite
    assert again.exit_code == 0 and "0 written" in again.output and "2 skipped" in again.output, again.output
    assert sorted(path.relative_to(out).as_posix() for path in out.rglob("*.png")) == ["a.png", "day/b.png"]
    listed = storage.list_files(str(photos), {".png"}, skip=out)  # the Ray engine's listing
    assert [name for _, name in listed] == ["a.png", "day/b.png"]

    model_never_loads(monkeypatch)
    for engine in ([], ["--engine", "ray"]):  # the photos' own folder: results among the photos
        result = runner.invoke(app, ["predict", str(photos), "--out", str(photos / "day" / ".."), *engine, "-q"])
        assert result.exit_code == 1 and "is the folder the inputs are read from" in result.output, result.output


def test_an_earlier_runs_outputs_among_the_photos_are_left_out_saying_so_unless_given_by_name(tmp_path):
    """`cd photos; deblur predict .` then `deblur predict photos --out second` had deblurred photos/deblurred's
    outputs a second time, into second/deblurred."""
    model = save_model(tmp_path / "identity")
    photos = tmp_path / "photos"
    (photos / "day").mkdir(parents=True)
    for name in ("a.png", "day/b.png"):
        Image.fromarray(noise((16, 16, 3))).save(photos / name)
    first = photos / "deblurred"
    args = ["predict", "--model", str(model), "--method", "network"]
    assert runner.invoke(app, [*args, str(photos), "--out", str(first)]).exit_code == 0
    assert (first / OUTPUTS_MARK).is_file()

    second = runner.invoke(app, [*args, str(photos), "--out", str(tmp_path / "second")])
    assert second.exit_code == 0 and "2 written" in second.output, second.output
    assert f"left out 1 folder(s) of an earlier run's outputs ({first}; each holds a {OUTPUTS_MARK} file)" in (
        second.output
    )
    made = sorted(path.relative_to(tmp_path / "second").as_posix() for path in (tmp_path / "second").rglob("*"))
    assert made == [OUTPUTS_MARK, "a.png", "day", "day/b.png"]

    again = runner.invoke(app, [*args, str(first), "--out", str(tmp_path / "third")])  # given by name: searched
    assert again.exit_code == 0 and "2 written" in again.output and "left out" not in again.output, again.output

    only = tmp_path / "only"
    only.mkdir()
    first.rename(only / "deblurred")
    none = runner.invoke(app, [*args, str(only), "--out", str(tmp_path / "fourth")])
    assert none.exit_code == 1 and f"left out 1 folder(s) of an earlier run's outputs ({only / 'deblurred'}" in (
        none.output
    )

    # a folder of the user's own, holding a photo, is never marked: a later search would leave the photo out
    mine = tmp_path / "mine"
    mine.mkdir()
    Image.fromarray(noise((16, 16, 3))).save(mine / "keep.png")
    assert runner.invoke(app, [*args, str(photos / "a.png"), "--out", str(mine)]).exit_code == 0
    assert sorted(path.name for path in mine.iterdir()) == ["a.png", "keep.png"]


def test_estimates_to_the_network_and_an_ensemble_to_the_kernel_way_are_refused_before_any_work(tmp_path):
    model = save_model(tmp_path / "identity")
    Image.fromarray(noise((32, 48, 3))).save(tmp_path / "in.png")
    args = ["predict", str(tmp_path / "in.png"), "--model", str(model), "--out", str(tmp_path / "out")]
    refused = runner.invoke(app, [*args, "--method", "network", "--estimates", "3"])  # it went unused
    assert refused.exit_code == 1, refused.output
    assert refused.output.strip() == (
        "error: estimates are tried by the kernel-aware and kernel ways, and the network estimates no camera shake: "
        "leave the estimates out, or choose one of those methods (--estimates, --method)"
    )
    assert not (tmp_path / "out").exists()
    refused = runner.invoke(app, [*args, "--method", "kernel", "--ensemble", "4"])  # nor an ensemble to the kernel way
    assert refused.exit_code == 1 and "the kernel way runs no network" in refused.output
    assert refused.output.rstrip().endswith("(--ensemble, --method)") and not (tmp_path / "out").exists()
    for given, named in (
        (["--precision", "bfloat16"], "precision is"),
        (["--tile", "512", "--overlap", "0"], "tile, overlap are"),
    ):
        refused = runner.invoke(app, [*args, "--method", "kernel", *given])  # how the network runs, to no network
        assert refused.exit_code == 1 and f"error: {named} how the network runs, and the kernel way" in refused.output
        assert not (tmp_path / "out").exists()
    assert runner.invoke(app, [*args, "--method", "network"]).exit_code == 0


def test_a_heic_photo_is_written_as_a_photo_never_as_a_clip(tmp_path):
    from pillow_heif import register_heif_opener

    register_heif_opener()
    model = save_model(tmp_path / "identity")
    Image.fromarray(noise((32, 48, 3))).save(tmp_path / "IMG_0001.heic", quality=90)
    Image.fromarray(noise((32, 48, 3))).save(tmp_path / "IMG_0002.avif", quality=90)
    out = tmp_path / "out"
    args = ["predict", str(tmp_path / "IMG_0001.heic"), str(tmp_path / "IMG_0002.avif"), "--model", str(model)]
    refused = runner.invoke(app, [*args, "--out", str(out), "--quality", "90"])  # PNG, as the format was not given
    assert refused.exit_code == 1, refused.output
    assert "quality is for jpg and webp, and png is written without loss: give the format too" in refused.output
    assert not out.exists()
    result = runner.invoke(app, [*args, "--out", str(out), "--format", "jpg", "--quality", "90"])
    assert result.exit_code == 0, result.output
    assert sorted(path.name for path in out.iterdir()) == [OUTPUTS_MARK, "IMG_0001.jpg", "IMG_0002.jpg"]
    assert Image.open(out / "IMG_0001.jpg").size == (48, 32)
    found = runner.invoke(app, ["predict", str(tmp_path), "--model", str(model), "--out", str(tmp_path / "all")])
    assert "IMG_0001.png" in found.output  # found in a folder too


def test_an_mpeg_video_stream_is_a_clip_though_pillow_knows_its_header(tmp_path):
    # Pillow names an MPEG-2 stream's sequence header "MPEG" and cannot decode it: it was read as a broken photo.
    model = save_model(tmp_path / "identity")
    clips = tmp_path / "dvd"
    clips.mkdir()
    make_clip(clips / "VTS_01.m2v", codec="mpeg2video", frames=4, audio=False)
    (clips / "VTS_01.m2v").rename(clips / "VTS_01.mpg")  # a stream alone, named as a program stream often is
    make_clip(clips / "title.m2v", codec="mpeg2video", frames=4, audio=False)
    out = tmp_path / "out"
    result = runner.invoke(app, ["predict", str(clips), "--model", str(model), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert sorted(path.name for path in out.iterdir()) == [OUTPUTS_MARK, "VTS_01.mp4", "title.mp4"]
    assert "4 frames" in result.output


def test_clips_in_a_dvds_and_a_professional_cameras_containers_are_found_in_a_folder(tmp_path):
    from deblur.predict import plan_inputs
    from deblur.scale.plan import plan_inputs as plan_tasks
    from deblur.settings import WriteSettings

    clips = tmp_path / "shoot"
    clips.mkdir()
    make_clip(clips / "VTS_01_1.VOB", codec="mpeg2video", frames=3, fps=25, audio=False)
    make_clip(clips / "A001C002.MXF", codec="mpeg2video", frames=3, fps=25, audio=False)
    plan = plan_inputs([clips], WriteSettings(out=str(tmp_path / "out")))
    assert sorted((item.source.name, item.kind) for item in plan.todo) == [
        ("A001C002.MXF", "video"),
        ("VTS_01_1.VOB", "video"),
    ]
    tasks = plan_tasks([str(clips)], WriteSettings(out=str(tmp_path / "out")), 10**8, dict, contextlib.ExitStack())
    assert sorted(Path(task.source).name for task in tasks.tasks) == ["A001C002.MXF", "VTS_01_1.VOB"]


def test_an_output_name_too_long_for_the_file_system_is_refused_before_any_work(tmp_path):
    # a 245-byte photo name: its output fits in 255 bytes, but not the hidden name it is written under first, nor
    # its side-by-side: the OS's traceback, after the model had loaded
    from deblur.errors import SettingError
    from deblur.files import longest_name
    from deblur.scale.plan import plan_inputs as plan_tasks
    from deblur.settings import WriteSettings

    model = save_model(tmp_path / "identity")
    src = tmp_path / "in"
    src.mkdir()
    Image.fromarray(noise((16, 16, 3))).save(src / f"{'a' * 245}.jpg")
    Image.fromarray(noise((16, 16, 3))).save(src / f"{'b' * 220}.jpg")  # fits, alone; not with its side-by-side
    out = tmp_path / "out"
    args = ["predict", str(src), "--model", str(model), "--method", "network", "--out", str(out)]
    refused = runner.invoke(app, args)
    assert refused.exit_code == 1 and not out.exists(), refused.output
    longest = longest_name(tmp_path)
    assert f"1 output name(s) longer than the {longest} bytes a name can have in {out}" in refused.output
    assert f"{'a' * 245}.jpg: {out / ('a' * 245)}.png (249 bytes)" in refused.output
    refused = runner.invoke(app, [*args, "--side-by-side"])
    assert f"{'b' * 220}.jpg's side-by-side: {out / ('b' * 220)}_side_by_side.png (237 bytes)" in refused.output
    with pytest.raises(SettingError, match="1 output name"):  # the engine's plan, as plain predict's
        plan_tasks([str(src)], WriteSettings(out=str(out)), 10**8, dict, contextlib.ExitStack())
    (src / f"{'a' * 245}.jpg").unlink()
    assert runner.invoke(app, args).exit_code == 0 and len(list(out.iterdir())) == 2  # the output, the mark


def test_transparency_flattened_by_the_format_is_said(tmp_path):
    model = save_model(tmp_path / "identity")
    Image.fromarray(noise((16, 16, 4))).save(tmp_path / "logo.png")
    args = ["predict", str(tmp_path / "logo.png"), "--model", str(model), "--out", str(tmp_path / "out")]
    result = runner.invoke(app, [*args, "--format", "jpg"])
    assert result.exit_code == 0, result.output
    assert "1 photo(s) had transparency, which jpg cannot hold: flattened onto white" in result.output


def test_a_photo_too_small_for_the_network_to_measure_is_said(tmp_path):
    model = save_model(tmp_path / "identity")
    for name, size in (("crop.png", (96, 128)), ("photo.png", (300, 400))):
        Image.fromarray(noise((*size, 3))).save(tmp_path / name)
    args = ["predict", str(tmp_path / "crop.png"), str(tmp_path / "photo.png"), "--model", str(model)]
    result = runner.invoke(app, [*args, "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert "1 photo(s) under 384 px a side (crop.png): the network measures the whole photo" in result.output
    assert "if you have the photo it was cut from, deblur that and crop after" in result.output
    result = runner.invoke(app, [*args, "--out", str(tmp_path / "kernel"), "--method", "kernel"])
    assert result.exit_code == 0 and "under 384 px" not in result.output, result.output  # no network ran
    result = runner.invoke(app, [*args, "--out", str(tmp_path / "none"), "--strength", "0"])
    assert result.exit_code == 0 and "under 384 px" not in result.output, result.output  # the photo as it is


def test_sixteen_bits_written_as_eight_by_the_format_is_said(tmp_path):
    import tifffile

    model = save_model(tmp_path / "identity")
    deep = (np.random.default_rng(0).random((16, 16, 3)) * 65535).astype(np.uint16)
    tifffile.imwrite(tmp_path / "scan.tif", deep, photometric="rgb")
    args = ["predict", str(tmp_path / "scan.tif"), "--model", str(model)]
    result = runner.invoke(app, [*args, "--out", str(tmp_path / "jpg"), "--format", "jpg"])
    assert result.exit_code == 0, result.output
    assert "1 photo(s) had 16 bits a channel, which jpg holds 8 of: written in 8 bits" in result.output
    result = runner.invoke(app, [*args, "--out", str(tmp_path / "tiff"), "--format", "tiff"])
    assert result.exit_code == 0 and "16 bits" not in result.output, result.output


def test_camera_raw_files_are_refused_by_name_and_said_to_be_left_out_of_folders(tmp_path, monkeypatch):
    model = save_model(tmp_path / "identity")
    shots = tmp_path / "card"
    shots.mkdir()
    Image.fromarray(noise((16, 24, 3))).save(shots / "a.jpg")
    # A DNG is a TIFF whose first image is a small preview: Pillow read it, and it came back a thumbnail
    Image.fromarray(noise((8, 12, 3))).save(shots / "b.dng", format="TIFF")
    walks = walks_of(shots, monkeypatch)
    result = runner.invoke(app, ["predict", str(shots), "--model", str(model), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert walks == [shots]  # once (it was walked for photos, then again for RAW files)
    assert f"left out 1 camera RAW file(s) ({shots / 'b.dng'}): deblur reads developed photos" in result.output
    assert sorted(path.name for path in (tmp_path / "out").iterdir()) == [OUTPUTS_MARK, "a.png"]
    result = runner.invoke(app, ["predict", str(shots / "b.dng"), "--model", str(model), "--out", str(tmp_path / "x")])
    assert result.exit_code == 1 and "b.dng: a camera RAW file (.dng); deblur reads developed photos" in result.output
    (shots / "a.jpg").unlink()
    model_never_loads(monkeypatch)
    result = runner.invoke(app, ["predict", str(shots), "--out", str(tmp_path / "out")])
    assert result.exit_code == 1 and f"it holds 1 camera RAW file(s) ({shots / 'b.dng'}): deblur" in result.output


def test_a_photo_longer_than_the_format_holds_fails_alone_before_it_is_deblurred(tmp_path):
    model = save_model(tmp_path / "identity")
    Image.fromarray(noise((6, 8200, 3))).save(tmp_path / "strip.png")  # 16400 wide beside itself
    Image.fromarray(noise((16, 16, 3))).save(tmp_path / "small.png")
    args = ["predict", str(tmp_path / "strip.png"), str(tmp_path / "small.png"), "--model", str(model)]
    result = runner.invoke(app, [*args, "--out", str(tmp_path / "out"), "--format", "webp", "--side-by-side"])
    assert result.exit_code == 1  # it had deblurred the strip, then ended every input on WebP's traceback
    assert "strip.png: 16400x6 is more than webp holds (16383 px a side): choose another format" in result.output
    assert sorted(path.name for path in (tmp_path / "out").iterdir()) == [
        OUTPUTS_MARK,
        "small.webp",
        "small_side_by_side.webp",
    ]


def test_a_photo_bar_says_what_runs_before_its_first_model_call():
    from deblur.cli.predict import ProgressBars

    bars = ProgressBars(quiet=False)
    bars.start(2)
    update = bars.image("in.png", 4, "estimating the camera shake")
    assert bars.calls.desc == "in.png, estimating the camera shake" and bars.calls.n == 0
    estimating_since = bars.calls.start_t
    time.sleep(0.05)
    update(0)  # the first model call starts: the clock of the calls starts there, not with the estimate
    assert bars.calls.desc == "in.png" and bars.calls.start_t > estimating_since
    update(1)
    assert bars.calls.desc == "in.png" and bars.calls.n == 1 and bars.calls.total == 4
    bars.finished()
    update = bars.image("next.png", 4)
    assert bars.calls.desc == "next.png"
    update(4)
    assert bars.calls.desc == "next.png" and bars.calls.n == 4
    bars.finished()
    bars.close()


def test_quiet_bars_take_the_same_calls():
    from deblur.cli.predict import ProgressBars

    bars = ProgressBars(quiet=True)  # a disabled tqdm has no `desc` until one is set: reading it had failed -q runs
    bars.start(1)
    update = bars.image("in.png", 2, "estimating the camera shake")
    for done in (0, 1, 1, 0, 1, 1):  # the default ran the photo again: two more calls
        update(done)
    assert bars.calls.desc == "in.png"
    bars.finished()
    bars.close()


def test_a_run_stopped_inside_a_clip_closes_its_bar_before_the_error_is_printed():
    from deblur.cli.predict import ProgressBars

    bars = ProgressBars(quiet=False)
    bars.start(1)
    bars.clip("clip.mp4", 12, 0)(5)
    clip_bar = bars.calls
    bars.close()  # what predict does on its way out, an error or not
    assert clip_bar.disable and bars.calls is None  # tqdm's close: else it is closed at exit, after the error


def test_a_url_without_an_engine_is_refused_not_made_a_local_folder(tmp_path, monkeypatch):
    model_never_loads(monkeypatch)
    monkeypatch.chdir(tmp_path)
    Image.fromarray(noise((16, 16, 3))).save(tmp_path / "a.png")
    result = runner.invoke(app, ["predict", "a.png", "--out", "s3://bucket/sharp", "-q"])
    said = "s3://bucket/sharp: a URL, which predict reads and writes only with --engine ray"
    assert result.exit_code == 1 and said in result.output, result.output
    assert not (tmp_path / "s3:").exists()  # it had written s3:/bucket/sharp/a.png here
    result = runner.invoke(app, ["predict", "s3://bucket/a.png", "gs://b/photos", "-q"])
    assert result.exit_code == 1 and "s3://bucket/a.png, gs://b/photos: URLs, which" in result.output


def test_a_stopped_predict_says_what_it_wrote_and_kept(tmp_path, monkeypatch):
    import deblur.predict
    from deblur.video.predict import work_folder

    model = save_model(tmp_path / "identity")
    for name in ("a.png", "b.png"):
        Image.fromarray(noise((16, 16, 3))).save(tmp_path / name)
    (tmp_path / "c.mp4").write_bytes(b"")  # never read: its deblurring is stopped below

    def clip_stopped_after_a_segment(item, *args, **kwargs):
        work_folder(item.target).mkdir(parents=True)
        (work_folder(item.target) / "00000.mp4").write_bytes(b"segment")
        raise KeyboardInterrupt

    monkeypatch.setattr(deblur.predict, "input_kind", lambda path: "video" if path.suffix == ".mp4" else "photo")
    monkeypatch.setattr(deblur.predict, "predict_clip", clip_stopped_after_a_segment)
    out = tmp_path / "out"
    inputs = [str(tmp_path / name) for name in ("a.png", "b.png", "c.mp4")]
    result = runner.invoke(app, ["predict", *inputs, "--model", str(model), "--out", str(out), "-q"])
    assert result.exit_code == 130
    assert "stopped: 2 of 3 output(s) written; 1 finished segment(s) of" in result.output
    assert f"are kept in {out / '.c.mp4.parts'}; the same command goes on from there" in result.output
    assert sorted(path.name for path in out.iterdir()) == [".c.mp4.parts", OUTPUTS_MARK, "a.png", "b.png"]


def test_a_photo_another_run_wrote_after_the_plan_is_skipped_and_one_half_there_is_kept_and_made_whole(tmp_path):
    from deblur.inference import load_deblurrer
    from deblur.predict import plan_inputs, predict_files
    from deblur.settings import WriteSettings

    src, out = tmp_path / "in", tmp_path / "out"
    src.mkdir()
    for name in ("a.png", "b.png", "c.png"):
        Image.fromarray(noise((16, 16, 3))).save(src / name)
    settings = WriteSettings(out=str(out), side_by_side=True)
    plan = plan_inputs([str(src)], settings)
    out.mkdir()
    # a run beside this one (or one stopped between a photo and its pair): a whole, b without its pair, c's pair alone
    for name in ("a.png", "a_side_by_side.png", "b.png", "c_side_by_side.png"):
        (out / name).write_bytes(b"the other run's")
    report = predict_files(plan, load_deblurrer(save_model(tmp_path / "identity")), settings)
    assert report.skipped == [out / "a.png"] and not report.failed
    # b and c had failed as existing at every run: what is there is kept, and the other half made
    assert report.written == [out / "b_side_by_side.png", out / "c.png"]
    assert Image.open(out / "b_side_by_side.png").size == (32, 16) and Image.open(out / "c.png").size == (16, 16)
    kept = ("a.png", "a_side_by_side.png", "b.png", "c_side_by_side.png")
    assert {(out / name).read_bytes() for name in kept} == {b"the other run's"}


def test_a_pattern_no_shell_expanded_is_deblurred_as_the_photos_it_matches(tmp_path):
    for name in ("a.png", "b.png", "c.jpg"):
        Image.fromarray(noise((16, 16, 3))).save(tmp_path / name)
    model, out = save_model(tmp_path / "identity"), tmp_path / "out"
    # as Windows' shells pass `photos\*.png`, or a quoted pattern here: "no such file or folder" before
    result = runner.invoke(app, ["predict", str(tmp_path / "*.png"), "--model", str(model), "--out", str(out), "-q"])
    assert result.exit_code == 0, result.output
    assert sorted(path.name for path in out.iterdir()) == [OUTPUTS_MARK, "a.png", "b.png"]


def test_an_output_folder_never_made_is_not_named_as_holding_the_outputs(tmp_path):
    Image.fromarray(noise((16, 16, 3))).save(tmp_path / "a.png")
    model, out = save_model(tmp_path / "identity"), tmp_path / "out"
    given = [str(tmp_path / "a.png"), "--model", str(model), "--out", str(out), "--max-pixels", "100"]
    result = runner.invoke(app, ["predict", *given])
    assert result.exit_code == 1 and not out.exists(), result.output
    # it had said "outputs in <out>", a folder that is not there
    assert f"0 written, 1 failed; {out} was not made (nothing to put in it)" in result.output


def test_a_folder_where_an_output_goes_fails_its_photo_and_is_not_taken_for_the_output(tmp_path):
    Image.fromarray(noise((16, 16, 3))).save(tmp_path / "a.png")
    model, out = save_model(tmp_path / "identity"), tmp_path / "out"
    # it had been skipped as done, had the output written without its side-by-side, and been an OS traceback
    for name, flags in (("a.png", []), ("a_side_by_side.png", ["--side-by-side"]), ("a.png", ["--overwrite"])):
        (out / name).mkdir(parents=True)
        given = [str(tmp_path / "a.png"), "--model", str(model), "--out", str(out), "-q", *flags]
        result = runner.invoke(app, ["predict", *given])
        assert result.exit_code == 1 and "0 written, 1 failed" in result.output, result.output
        assert f"{out / name} is a folder, where an output file goes" in result.output
        assert [path.name for path in out.iterdir()] == [name]
        (out / name).rmdir()
