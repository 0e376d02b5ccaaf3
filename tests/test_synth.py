from dataclasses import replace

import numpy as np
import pytest
from helpers import smoke_config, walks_of, write_image
from PIL import Image
from typer.testing import CliRunner

from deblur.cli import app
from deblur.config import ConfigError, SynthConfig, load_config
from deblur.data.demo import load_photo
from deblur.data.kernels import apply_blur
from deblur.data.pairs import DatasetError, preflight
from deblur.data.synth import synthesize_pairs
from deblur.errors import Interrupted, OutputBusyError, SettingError
from deblur.training.trainer import train

runner = CliRunner()


def make_photos(folder, names=("astronaut", "camera", "coffee", "chelsea", "rocket")):
    for i, name in enumerate(names):
        photo = load_photo(name)[:120, :160]
        sub = folder / "holiday" if i % 2 else folder
        write_image(sub / f"{name}.{'jpg' if i == 2 else 'png'}", photo)
    return folder


def test_gopro_layout_with_kernels_and_held_out_photos(tmp_path):
    src = make_photos(tmp_path / "photos")
    out = tmp_path / "pairs"
    result = runner.invoke(
        app,
        [
            "data",
            "synth",
            "--src",
            str(src),
            "--out",
            str(out),
            "--pairs-per-photo",
            "2",
            "--val-fraction",
            "0.4",
            "-q",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "wrote 10 pairs from 5 photos" in result.output
    train_seqs = sorted(p.name for p in (out / "train").iterdir())
    test_seqs = sorted(p.name for p in (out / "test").iterdir())
    assert len(test_seqs) == 2 and len(train_seqs) == 3 and not set(train_seqs) & set(test_seqs)
    assert "holiday__camera" in train_seqs + test_seqs
    for seq in (out / "train").iterdir():
        assert sorted(p.name for p in (seq / "blur").iterdir()) == ["000.png", "001.png"]
        assert sorted(p.name for p in (seq / "kernel").iterdir()) == ["000.npy", "001.npy"]
    splits = preflight(out, 32, progress=False)
    assert len(splits.train) == 6 and len(splits.val) == 4 and splits.layout == "gopro"


def test_saved_kernel_reproduces_the_blur(tmp_path):
    src = make_photos(tmp_path / "photos", names=("astronaut",))
    out = synthesize_pairs(src, tmp_path / "pairs", SynthConfig(noise=0.0, pairs_per_photo=1), log=lambda _: None).out
    folder = next((out / "train").iterdir())
    sharp = np.asarray(Image.open(folder / "sharp" / "000.png"))
    blurry = np.asarray(Image.open(folder / "blur" / "000.png")).astype(int)
    kernel = np.load(folder / "kernel" / "000.npy")
    remade = np.clip(np.round(apply_blur(sharp.astype(np.float32) / 255, kernel) * 255), 0, 255).astype(int)
    assert np.abs(remade - blurry).max() <= 1  # rounding only
    assert np.abs(sharp.astype(int) - blurry).mean() > 1  # and it is blurred


def test_same_seed_same_pairs_other_photos_do_not_matter(tmp_path):
    one = synthesize_pairs(
        make_photos(tmp_path / "a", names=("camera",)), tmp_path / "out_a", SynthConfig(), log=lambda _: None
    )
    two = synthesize_pairs(
        make_photos(tmp_path / "b", names=("camera", "rocket")),
        tmp_path / "out_b",
        SynthConfig(),
        val_fraction=0.0,
        log=lambda _: None,
    )
    a = np.load(one.out / "train" / "camera" / "kernel" / "002.npy")
    b = np.load(two.out / "train" / "camera" / "kernel" / "002.npy")
    np.testing.assert_array_equal(a, b)


def tree(folder):
    return {path.relative_to(folder): path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


def test_a_stopped_run_goes_on_from_its_finished_photos_and_gives_an_unstopped_runs_pairs(tmp_path, monkeypatch):
    import deblur.data.synth as synth_module

    src = make_photos(tmp_path / "photos")
    recipe = SynthConfig(pairs_per_photo=2)
    whole = synthesize_pairs(src, tmp_path / "whole", recipe, val_fraction=0.4, progress=False, log=print).out
    made, real = [], synth_module.write_pairs

    def stopped_after_two(sharp, folder, synth, rng):
        if len(made) == 2:
            real(sharp, folder, synth, rng)  # a third photo half written, then Ctrl-C
            (folder / "sharp" / "001.png").unlink()
            raise KeyboardInterrupt
        made.append(folder.name)
        real(sharp, folder, synth, rng)

    out = tmp_path / "pairs"
    monkeypatch.setattr(synth_module, "write_pairs", stopped_after_two)
    with pytest.raises(Interrupted, match=r"stopped: 2 of 5 photos' pairs are kept in .*\.pairs\.parts; the same"):
        synthesize_pairs(src, out, recipe, val_fraction=0.4, progress=False, log=print)
    assert not out.exists() and (tmp_path / ".pairs.parts").is_dir()
    assert not list((tmp_path / ".pairs.parts").rglob("*.part"))  # the half-made photo's pairs are not kept
    made.clear()
    monkeypatch.setattr(synth_module, "write_pairs", lambda *args: made.append(args[1].name) or real(*args))
    said = []
    synthesize_pairs(src, out, recipe, val_fraction=0.4, progress=False, log=said.append)
    assert len(made) == 3  # the two finished photos were not made again
    assert any("2 of 5 photos' pairs were made before" in line for line in said)
    assert tree(out) == tree(whole)
    assert not (tmp_path / ".pairs.parts").exists()


def test_a_photo_with_a_long_name_gets_a_folder_name_that_fits_and_is_found_again(tmp_path, monkeypatch):
    # a 245-byte name: the folder its pairs are made in first, .<name>.<pid>.part, had been over the 255 a name holds
    import deblur.data.synth as synth_module

    src = tmp_path / "photos"
    for name in ("a" * 245, "a" * 244 + "b", "short"):
        write_image(src / f"{name}.png", load_photo("camera")[:120, :160])
    recipe = SynthConfig(pairs_per_photo=1)
    real, made = synth_module.write_pairs, []

    def stopped_after_two(sharp, folder, synth, rng):
        if len(made) == 2:
            raise KeyboardInterrupt
        made.append(folder.name)
        real(sharp, folder, synth, rng)

    monkeypatch.setattr(synth_module, "write_pairs", stopped_after_two)
    with pytest.raises(Interrupted):
        synthesize_pairs(src, tmp_path / "pairs", recipe, val_fraction=0, progress=False, log=print)
    monkeypatch.setattr(synth_module, "write_pairs", lambda *args: made.append(args[1].name) or real(*args))
    out = synthesize_pairs(src, tmp_path / "pairs", recipe, val_fraction=0, progress=False, log=print).out
    names = sorted(folder.name for folder in (out / "train").iterdir())
    assert len(made) == 3 and len(names) == 3 and "short" in names  # the two finished were found again
    assert all(len(name.encode()) <= synth_module.SEQUENCE_NAME_BYTES for name in names)
    assert names[0].startswith("a" * 150) and names[0] != names[1]


def test_a_full_disk_keeps_the_finished_photos_and_not_the_half_made_one(tmp_path, monkeypatch):
    import errno
    import os

    import deblur.data.synth as synth_module

    src = make_photos(tmp_path / "photos", names=("astronaut", "camera"))
    real = synth_module.write_pairs
    made = []

    def full_at_the_second(sharp, folder, synth, rng):
        real(sharp, folder, synth, rng)
        made.append(folder)
        if len(made) == 2:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(folder / "blur" / "000.png"))

    monkeypatch.setattr(synth_module, "write_pairs", full_at_the_second)
    with pytest.raises(OSError) as caught:
        synthesize_pairs(src, tmp_path / "pairs", SynthConfig(pairs_per_photo=2), progress=False, log=print)
    assert (caught.value.errno, caught.value.filename) == (errno.ENOSPC, str(tmp_path / "pairs"))
    parts = tmp_path / ".pairs.parts"
    assert not list(parts.rglob("*.part"))  # the half-made photo had kept its room until the next run
    assert [path.name for path in parts.glob("*/*") if path.is_dir()] == [made[0].name.split(".")[1]]


def test_a_second_run_on_the_same_out_is_refused_while_the_first_goes_on(tmp_path):
    from deblur.files import one_run_at_a_time

    src = make_photos(tmp_path / "photos")
    with (
        one_run_at_a_time(tmp_path / ".pairs.parts", tmp_path / "pairs", "out"),
        pytest.raises(OutputBusyError, match=r"another deblur run is writing .*pairs \(its work in"),
    ):
        synthesize_pairs(src, tmp_path / "pairs", SynthConfig(), progress=False, log=lambda _: None)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["photos"]


def test_a_stopped_run_with_another_recipe_starts_over(tmp_path, monkeypatch):
    import deblur.data.synth as synth_module

    src = make_photos(tmp_path / "photos", names=("camera", "rocket"))
    real = synth_module.write_pairs

    def stopped(sharp, folder, synth, rng):
        real(sharp, folder, synth, rng)
        raise KeyboardInterrupt

    monkeypatch.setattr(synth_module, "write_pairs", stopped)
    with pytest.raises(Interrupted):
        synthesize_pairs(src, tmp_path / "pairs", SynthConfig(pairs_per_photo=1), progress=False, log=print)
    monkeypatch.setattr(synth_module, "write_pairs", real)
    said = []
    other = SynthConfig(pairs_per_photo=1, seed=7)
    out = synthesize_pairs(src, tmp_path / "pairs", other, progress=False, log=said.append).out
    assert any("another recipe" in line and "starting over" in line for line in said)
    fresh = synthesize_pairs(src, tmp_path / "fresh", other, progress=False, log=print).out
    assert tree(out) == tree(fresh)


def test_a_photo_changed_since_a_stopped_run_is_made_again(tmp_path, monkeypatch):
    import deblur.data.synth as synth_module

    src = make_photos(tmp_path / "photos", names=("camera", "rocket"))
    real = synth_module.write_pairs

    def stopped_after_one(sharp, folder, synth, rng):
        if list(tmp_path.glob(".pairs.parts/train/*/sharp")):
            raise KeyboardInterrupt
        real(sharp, folder, synth, rng)

    monkeypatch.setattr(synth_module, "write_pairs", stopped_after_one)
    with pytest.raises(Interrupted, match="1 of 2 photos' pairs are kept"):
        synthesize_pairs(src, tmp_path / "pairs", SynthConfig(pairs_per_photo=1), val_fraction=0, log=print)
    monkeypatch.setattr(synth_module, "write_pairs", real)
    write_image(src / "camera.png", load_photo("coffee")[:120, :160])  # edited since
    said = []
    out = synthesize_pairs(src, tmp_path / "pairs", SynthConfig(pairs_per_photo=1), val_fraction=0, log=said.append)
    assert not any("made before" in line for line in said)
    fresh = synthesize_pairs(src, tmp_path / "fresh", SynthConfig(pairs_per_photo=1), val_fraction=0, log=print)
    assert tree(out.out) == tree(fresh.out)


def test_a_photo_found_unreadable_keeps_the_others_pairs_for_the_next_run(tmp_path):
    src = make_photos(tmp_path / "photos", names=("camera", "rocket"))
    whole = src / "camera.png"
    (src / "cut.png").write_bytes(whole.read_bytes()[: len(whole.read_bytes()) // 2])  # found only when decoded
    out = tmp_path / "pairs"
    with pytest.raises(DatasetError, match="cut.png") as refused:
        synthesize_pairs(src, out, SynthConfig(pairs_per_photo=1), val_fraction=0.0, progress=False, log=print)
    assert f"nothing was written to {out} (the other photos' pairs are kept in" in str(refused.value)
    assert not out.exists()
    (src / "cut.png").unlink()
    said = []
    synthesize_pairs(src, out, SynthConfig(pairs_per_photo=1), val_fraction=0.0, progress=False, log=said.append)
    assert any("2 of 2 photos' pairs were made before" in line for line in said)
    assert sorted(path.name for path in (out / "train").iterdir()) == ["camera", "holiday__rocket"]


def held_out(tmp_path, name, synth):
    src = tmp_path / "photos"
    if not src.exists():
        make_photos(src)
    report = synthesize_pairs(src, tmp_path / name, synth, val_fraction=0.4, progress=False, log=lambda _: None)
    return sorted(p.name for p in (report.out / "test").iterdir())


def test_holdout_seed_keeps_the_held_out_photos_when_the_blur_seed_changes(tmp_path):
    recipe = SynthConfig(pairs_per_photo=1, max_length=5.0)
    first = held_out(tmp_path, "first", recipe)
    by_seed = {seed: held_out(tmp_path, f"seed{seed}", replace(recipe, seed=seed)) for seed in (1, 2, 3)}
    assert any(choice != first for choice in by_seed.values())  # without it, another seed holds out other photos
    for seed in by_seed:
        assert held_out(tmp_path, f"kept{seed}", replace(recipe, seed=seed, holdout_seed=0)) == first


def test_the_two_stages_of_the_pretrained_recipe_hold_out_the_same_photos():
    stage1, stage2 = load_config("pretrained").data.synth, load_config("pretrained-finetune").data.synth
    assert stage2.seed != stage1.seed  # new blurs
    assert stage2.photo_seed == stage1.photo_seed


def test_a_bad_photo_writes_nothing_and_names_it(tmp_path):
    src = make_photos(tmp_path / "photos", names=("camera", "rocket"))
    (src / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n not really")
    out = tmp_path / "pairs"
    result = runner.invoke(app, ["data", "synth", "--src", str(src), "--out", str(out), "-q"])
    assert result.exit_code == 1
    assert "broken.png" in result.output and "nothing was written" in result.output
    assert not out.exists() and not list(tmp_path.glob(".pairs*"))


def test_camera_raw_files_are_said_to_be_left_out(tmp_path, monkeypatch):
    src = make_photos(tmp_path / "photos", names=("camera",))
    Image.new("RGB", (64, 48)).save(src / "IMG_1.dng", format="TIFF")  # found nowhere before, without a word
    walks = walks_of(src, monkeypatch)
    result = runner.invoke(app, ["data", "synth", "--src", str(src), "--out", str(tmp_path / "pairs"), "-q"])
    assert result.exit_code == 0, result.output
    assert walks == [src]  # once (it was walked for photos, then again for RAW files)
    assert f"left out 1 camera RAW file(s) ({src / 'IMG_1.dng'}): deblur reads developed photos" in result.output
    (src / "camera.png").unlink()
    result = runner.invoke(app, ["data", "synth", "--src", str(src), "--out", str(tmp_path / "again"), "-q"])
    assert result.exit_code == 1 and "; it holds 1 camera RAW file(s)" in result.output


def test_deblur_predicts_outputs_under_the_photos_are_left_out_saying_so(tmp_path):
    from deblur.imageio import OUTPUTS_MARK

    src = make_photos(tmp_path / "photos", names=("camera", "rocket"))
    photos = sorted(src.rglob("*.png"))
    done = src / "deblurred"  # as `cd photos; deblur predict .` leaves it: deblurred copies of the photos beside them
    done.mkdir()
    for photo in photos:
        (done / photo.name).write_bytes(photo.read_bytes())
    (done / OUTPUTS_MARK).write_text("")
    result = runner.invoke(app, ["data", "synth", "--src", str(src), "--out", str(tmp_path / "pairs"), "-q"])
    assert result.exit_code == 0, result.output
    assert f"left out 1 folder(s) of deblur predict's outputs ({done}): deblurred photos are not" in result.output
    made = sorted(folder.name for folder in (tmp_path / "pairs").glob("*/*"))
    assert made == ["camera", "holiday__rocket"]  # not deblurred__camera, nor deblurred__rocket
    for photo in photos:
        photo.unlink()
    result = runner.invoke(app, ["data", "synth", "--src", str(src), "--out", str(tmp_path / "again"), "-q"])
    assert result.exit_code == 1 and "; left out 1 folder(s) of deblur predict's outputs" in result.output


def test_no_recipe_is_the_default_recipe(tmp_path, monkeypatch):
    src = make_photos(tmp_path / "photos", names=("camera",))
    made = []
    monkeypatch.setattr(
        "deblur.data.synth.write_pairs", lambda sharp, part, synth, rng: (part.mkdir(parents=True), made.append(synth))
    )
    synthesize_pairs(src, tmp_path / "pairs", log=lambda _: None)
    assert made == [SynthConfig()]


def test_no_folder_or_a_recipe_of_the_wrong_kind_is_named(tmp_path):
    from deblur.errors import SettingError

    src = make_photos(tmp_path / "photos", names=("camera",))
    with pytest.raises(SettingError, match="the photos' folder is NoneType: give its path"):
        synthesize_pairs(None, tmp_path / "pairs")  # had been Path's TypeError
    with pytest.raises(SettingError, match="the recipe is dict: give a deblur.config.SynthConfig, or None"):
        synthesize_pairs(src, tmp_path / "pairs", {"noise": 0.01})  # had been an AttributeError of a setting
    assert not (tmp_path / "pairs").exists()


def test_existing_out_is_refused(tmp_path):
    src = make_photos(tmp_path / "photos", names=("camera",))
    (tmp_path / "pairs").mkdir()
    with pytest.raises(DatasetError, match="already exists"):
        synthesize_pairs(src, tmp_path / "pairs", SynthConfig(), log=lambda _: None)


@pytest.mark.parametrize(
    "given, said",
    [
        # 0 and NaN had been read as no limit; -5 and 10.5 had refused every photo as too small
        (dict(max_side=0), "max_side must be a whole number of px, at least 16 (or None: the photos' own size); got 0"),
        (dict(max_side=float("nan")), "got nan"),
        (dict(max_side=10.5), "got 10.5"),
        (dict(val_fraction="0.1"), "val_fraction must be in [0, 1); got '0.1'"),  # had been a TypeError
    ],
)
def test_a_size_or_share_that_cannot_be_used_is_refused_before_any_work(tmp_path, given, said):
    from deblur.errors import SettingError

    src = make_photos(tmp_path / "photos", names=("camera",))
    with pytest.raises(SettingError) as refused:
        synthesize_pairs(src, tmp_path / "pairs", SynthConfig(), log=lambda _: None, **given)
    assert said in str(refused.value)
    assert not (tmp_path / "pairs").exists()


def test_pairs_inside_the_photos_folder_are_refused(tmp_path):
    src = make_photos(tmp_path / "photos", names=("camera",))
    with pytest.raises(SettingError, match="would take what is written here as its input"):
        synthesize_pairs(src, src / "pairs", SynthConfig(), log=lambda _: None)
    assert not (src / "pairs").exists()


def test_too_small_photos_are_named(tmp_path):
    write_image(tmp_path / "photos" / "tiny.png", np.zeros((20, 30, 3), np.uint8))
    with pytest.raises(DatasetError, match="tiny.png: 30x20 is too small"):
        synthesize_pairs(tmp_path / "photos", tmp_path / "pairs", SynthConfig(), log=lambda _: None)


def test_photos_refused_by_their_headers_are_named_before_any_pair_is_made(tmp_path, monkeypatch):
    src = make_photos(tmp_path / "photos", names=("camera",))
    frames = [Image.fromarray(load_photo(name)[:120, :160]) for name in ("camera", "rocket")]
    frames[0].save(src / "waving.gif", save_all=True, append_images=frames[1:])
    (src / "never copied.jpg").write_bytes(b"")

    def no_work(*args, **kwargs):
        raise AssertionError("pairs were made before the refusal")

    monkeypatch.setattr("deblur.data.synth.write_pairs", no_work)
    with pytest.raises(DatasetError, match="2 photo") as refused:
        synthesize_pairs(src, tmp_path / "pairs", SynthConfig(), log=lambda _: None)
    assert "waving.gif: an animation of 2 frames" in str(refused.value)
    assert "never copied.jpg: an empty file" in str(refused.value)
    assert not (tmp_path / "pairs").exists()


def test_a_few_photos_hold_one_out_and_one_photo_says_validation_scores_it(tmp_path):
    src = make_photos(tmp_path / "photos", names=("astronaut", "camera", "coffee"))
    recipe = SynthConfig(pairs_per_photo=1)
    out = synthesize_pairs(src, tmp_path / "three", recipe, progress=False, log=lambda _: None).out
    assert len(list((out / "test").iterdir())) == 1 and len(list((out / "train").iterdir())) == 2
    said = []
    one = make_photos(tmp_path / "one", names=("camera",))
    synthesize_pairs(one, tmp_path / "alone", recipe, progress=False, log=said.append)
    assert said[-1].endswith(
        "(0 photo(s) held out in test/; validation scores the one photo's own pairs: give two or more to hold one out)"
    )


def test_max_side_scales_down(tmp_path):
    src = make_photos(tmp_path / "photos", names=("camera",))
    out = synthesize_pairs(src, tmp_path / "pairs", SynthConfig(pairs_per_photo=1), max_side=80, log=lambda _: None)
    with Image.open(out.out / "train" / "camera" / "sharp" / "000.png") as image:
        assert image.size == (80, 60)


def test_synthetic_pairs_train(tmp_path):
    src = make_photos(tmp_path / "photos")
    out = synthesize_pairs(
        src, tmp_path / "pairs", SynthConfig(pairs_per_photo=2), val_fraction=0.2, log=lambda _: None
    ).out
    result = train(
        smoke_config(f"data.root={out}", "train.epochs=1"), tmp_path / "run", progress=False, log=lambda _: None
    )
    assert result.model_path.is_file() and result.metrics[0]["val_psnr"] > 10


def test_recipe_from_a_config_with_overrides(tmp_path):
    src = make_photos(tmp_path / "photos", names=("astronaut", "camera"))
    out = tmp_path / "pairs"
    args = ["data", "synth", "--src", str(src), "--out", str(out), "-c", "pretrained", "--pairs-per-photo", "1"]
    result = runner.invoke(app, [*args, "--max-length", "20", "--blur", "motion", "--max-rotation", "2"])
    assert result.exit_code == 0, result.output
    assert "wrote 2 pairs from 2 photos" in result.output
    # Motion blur has no single kernel to save.
    assert not list(out.rglob("kernel")) and len(list(out.rglob("blur/000.png"))) == 2


def test_recipe_defaults_are_the_config_defaults():
    from deblur.data.synth import synth_recipe

    assert synth_recipe() == SynthConfig()
    assert synth_recipe("pretrained", noise=None, max_length=9) == replace(
        load_config("pretrained").data.synth, max_length=9.0
    )
    with pytest.raises(ConfigError, match="blur=motion"):
        synth_recipe(max_rotation=1.0)  # the built-in recipe is kernel blur


@pytest.mark.parametrize("option", ["min_length", "max_length"])
@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_recipe_options_refuse_numbers_that_are_not_finite(option, value):
    from deblur.data.synth import synth_recipe

    # the options reach the recipe without a config file's checks: `--max-length inf` had ended in an
    # OverflowError, `--min-length nan` in one from numpy's uniform
    with pytest.raises(ConfigError, match=rf"data.synth.{option} must be a finite number, got {value!r}"):
        synth_recipe(**{option: value})


def test_a_bad_recipe_option_is_named_by_its_flag_on_the_command_line(tmp_path):
    src = make_photos(tmp_path / "photos", names=("camera",))
    args = ["data", "synth", "--src", str(src), "--out", str(tmp_path / "pairs")]
    result = runner.invoke(app, [*args, "--min-length", "9", "--max-length", "5"])
    assert result.exit_code == 1 and not (tmp_path / "pairs").exists()
    assert result.output.strip().endswith("max_length must be >= data.synth.min_length (--max-length, --min-length)")
    # each setting the message names and the command line gave: one of two had gone unsaid, without data.synth.
    for given, named in [
        (["--sharp-share", "0.7", "--soft-share", "0.7"], "(--sharp-share, --soft-share)"),
        (["--max-zoom", "0.02"], "(--max-zoom)"),
        (["--blur", "motion", "--min-frames", "3", "--max-frames", "9"], "(--max-frames, --min-frames, --blur)"),
    ]:
        result = runner.invoke(app, [*args, *given])
        assert result.exit_code == 1 and result.output.strip().endswith(named), result.output


def test_deconvolve_writes_each_pairs_deconvolution_the_same_on_any_number_of_workers(tmp_path, monkeypatch):
    import deblur.data.synth as synth_module

    src = make_photos(tmp_path / "photos", names=("astronaut", "camera"))
    recipe = SynthConfig(min_length=3, max_length=9, pairs_per_photo=2, deconvolve=True, sharp_share=0.3)
    out = synthesize_pairs(src, tmp_path / "two", recipe, val_fraction=0.0, progress=False, log=lambda _: None).out
    monkeypatch.setattr(synth_module, "_workers", lambda synth, photos: 1)
    one = synthesize_pairs(src, tmp_path / "one", recipe, val_fraction=0.0, progress=False, log=lambda _: None).out
    files = sorted(path.relative_to(out) for path in out.rglob("deconvolved/*.png"))
    assert len(files) == 4
    for name in files:
        deconvolved = np.asarray(Image.open(out / name))
        assert deconvolved.shape == np.asarray(Image.open(out / str(name).replace("deconvolved", "blur"))).shape
        np.testing.assert_array_equal(deconvolved, np.asarray(Image.open(one / name)))
    splits = preflight(out, 32, progress=False)
    assert all(pair.deconvolved is not None for pair in splits.train)
