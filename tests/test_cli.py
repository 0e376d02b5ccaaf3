import errno
import os
from pathlib import Path

import numpy as np
import pytest
from helpers import make_flat_dataset
from PIL import Image
from typer.testing import CliRunner

from deblur.cli import app

runner = CliRunner()


def test_train_smoke(tmp_path):
    out = tmp_path / "run"
    result = runner.invoke(
        app, ["train", "--config", "smoke", "--out", str(out), "--precision", "float32", "--epochs", "1"]
    )
    assert result.exit_code == 0, result.output
    assert "precision: float32 (requested)" in result.output
    assert f"model: {out / 'model.keras'}" in result.output
    assert (out / "model.keras").is_file() and (out / "config.yaml").is_file()


def test_unknown_config_key_exits_nonzero(tmp_path):
    result = runner.invoke(app, ["train", "--config", "smoke", "--set", "train.lr=1", "--out", str(tmp_path / "r")])
    assert result.exit_code == 1
    assert "unknown key(s) train.lr" in result.output
    assert not (tmp_path / "r").exists()


def test_bad_data_exits_nonzero_naming_the_file(tmp_path):
    data = make_flat_dataset(tmp_path / "data", count=3)
    (data / "blur" / "002.png").write_bytes(b"broken")
    out = tmp_path / "run"
    result = runner.invoke(app, ["train", "--config", "smoke", "--data", str(data), "--out", str(out), "-q"])
    assert result.exit_code == 1
    assert "002.png: not a readable image" in result.output
    assert not out.exists()


def test_skip_bad_images_flag(tmp_path):
    data = make_flat_dataset(tmp_path / "data", count=6)
    (data / "sharp" / "004.png").write_bytes(b"broken")
    out = tmp_path / "run"
    args = ["train", "--config", "smoke", "--data", str(data), "--out", str(out), "--epochs", "1", "-q"]
    result = runner.invoke(app, [*args, "--skip-bad-images"])
    assert result.exit_code == 0, result.output
    assert "skipped 1 unreadable file(s):" in result.output and "004.png" in result.output
    assert (out / "model.keras").is_file()


def test_a_bug_keeps_its_traceback(monkeypatch, tmp_path):
    from deblur.training import trainer

    def broken(*args, **kwargs):
        raise KeyError("a programming error")

    monkeypatch.setattr(trainer, "train", broken)
    result = runner.invoke(app, ["train", "--config", "smoke", "--out", str(tmp_path / "r")])
    assert isinstance(result.exception, KeyError)  # not turned into a one-line "error:"
    assert "error:" not in result.output


def test_a_stop_before_the_work_begins_is_said(monkeypatch, tmp_path):
    # stopped while the model loaded: Typer ended predict with exit 130 and no word
    import deblur.inference

    def stopped(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(deblur.inference, "open_deblurrer", stopped)
    Image.fromarray(np.zeros((32, 32, 3), np.uint8)).save(tmp_path / "photo.png")
    result = runner.invoke(app, ["predict", str(tmp_path / "photo.png"), "--out", str(tmp_path / "out")])
    assert (result.exit_code, result.output) == (130, "error: stopped: nothing was written\n")
    assert not (tmp_path / "out").exists()


def test_user_errors_are_one_line_with_the_flags(monkeypatch, tmp_path):
    from deblur.errors import SettingError
    from deblur.training import trainer

    def refuse(*args, **kwargs):
        raise SettingError("batch_size must be even", settings=("batch_size",))

    monkeypatch.setattr(trainer, "train", refuse)
    result = runner.invoke(app, ["train", "--config", "smoke", "--out", str(tmp_path / "r")])
    assert result.exit_code == 1
    assert result.output.strip() == "error: batch_size must be even (--batch-size)"


def test_a_keras_backend_that_is_none_of_keras_is_named_and_help_still_shows(monkeypatch, tmp_path):
    # Keras' own refusal had been a ValueError's traceback from inside its import
    monkeypatch.setenv("KERAS_BACKEND", "Jax")
    for command in (["predict", str(tmp_path / "a.png")], ["data", "check", str(tmp_path)]):
        result = runner.invoke(app, command)
        assert result.exit_code == 1, result.output
        assert "error: KERAS_BACKEND=Jax is none of Keras' backends: set it to tensorflow" in result.output
    assert runner.invoke(app, ["predict", "--help"]).exit_code == 0
    monkeypatch.setenv("KERAS_BACKEND", "")  # Keras takes an empty one for none
    assert "KERAS_BACKEND" not in runner.invoke(app, ["data", "check", str(tmp_path)]).output


def test_a_bad_choice_is_named_without_the_validators_plumbing():
    result = runner.invoke(app, ["predict", "x.png", "--method", "blind"])
    assert result.exit_code == 2
    message = "Invalid value for '--method': method must be one of kernel-aware, network, kernel; got 'blind'"
    assert message in " ".join(result.output.replace("│", " ").split())
    retired = runner.invoke(app, ["predict", "x.png", "--method", "auto"])
    assert retired.exit_code == 2 and "use the default, kernel-aware" in " ".join(
        retired.output.replace("│", " ").split()
    )
    assert "Value error" not in result.output
    result = runner.invoke(app, ["data", "synth", "--src", "x", "--out", "y", "--blur", "nope"])
    assert result.exit_code == 2 and "'nope' is not one of 'kernel', 'motion'" in result.output
    assert "Value error" not in result.output


def test_an_upload_limit_of_no_finite_size_is_named_before_the_server_starts(monkeypatch):
    from deblur.serve import server

    monkeypatch.setattr(server, "serve", lambda *args, **kwargs: pytest.fail("served"))
    for option in ("--max-upload-mb", "--max-video-mb"):
        # inf had passed min= and ended in an OverflowError's traceback when made bytes
        result = runner.invoke(app, ["serve", option, "inf", "--port", "0"])
        assert result.exit_code == 2 and f"Invalid value for '{option}'" in result.output, result.output


def test_version_is_shown_without_a_command():
    from deblur import __version__

    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and result.output.startswith(f"deblur {__version__} (Python 3.")
    pyproject = (Path(__file__).parents[1] / "pyproject.toml").read_text()
    assert f'\nversion = "{__version__}"\n' in pyproject  # the package's version, written twice: kept as one


def test_usage_lines_read_as_the_docs_write_them():
    assert "predict [OPTIONS] INPUT...\n" in runner.invoke(app, ["predict", "--help"]).output
    assert "data check [OPTIONS] DIR\n" in runner.invoke(app, ["data", "check", "--help"]).output
    from_video = runner.invoke(app, ["data", "from-video", "--help"]).output
    assert "data from-video [OPTIONS] CLIP|FOLDER\n" in from_video


def test_quiet_training_prints_the_result_only_and_what_to_run_next(tmp_path):
    out = tmp_path / "run"
    args = ["train", "--config", "smoke", "--out", str(out), "--precision", "float32", "--epochs", "2", "-q"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "epoch 1:" not in result.output and "precision:" not in result.output
    assert result.output.startswith("done: 8 steps; validation PSNR")
    assert "try it: deblur predict --model latest " in result.output


def test_the_hint_after_training_works_pasted_as_is_from_another_folder(tmp_path, monkeypatch):
    """`latest` is the model trained last wherever training ran, and the hint names a photo that is there."""
    import shlex

    out = tmp_path / "run"
    args = ["train", "--config", "smoke", "--out", str(out), "--precision", "float32", "--epochs", "1", "-q"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    hint = next(line for line in result.output.splitlines() if line.startswith("try it: "))
    command = shlex.split(hint.removeprefix("try it: ").split("  (")[0])
    assert command[:4] == ["deblur", "predict", "--model", "latest"] and Path(command[4]).is_file()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    predicted = runner.invoke(app, command[1:])
    assert predicted.exit_code == 0, predicted.output
    assert f"model: {out / 'model.keras'}, the newest training run" in predicted.output
    assert (elsewhere / "deblurred" / f"{Path(command[4]).stem}.png").is_file()


def test_a_time_limit_stops_training_with_the_model_saved(tmp_path):
    out = tmp_path / "run"
    args = ["train", "--config", "smoke", "--out", str(out), "--precision", "float32", "--epochs", "50"]
    result = runner.invoke(app, [*args, "--set", "train.max_minutes=0.0001"])  # gone by the first step
    assert result.exit_code == 0, result.output
    assert "stopped at the time limit (train.max_minutes=0.0001) after 1 of 200 steps" in result.output
    assert (out / "model.keras").is_file() and "epoch 1:" in result.output
    again = runner.invoke(app, [*args, "--set", "train.max_minutes=0.0001"])  # goes on from there
    assert "resuming from" in again.output and "after 2 of 200 steps" in again.output


def test_an_output_under_a_file_is_refused_by_every_command_before_its_work(tmp_path):
    # Before, each of these ran (a model loaded, a photo deblurred) and then stopped on the OS's traceback.
    photo = tmp_path / "photo.png"
    make_flat_dataset(tmp_path / "pairs", count=2)
    (tmp_path / "pairs" / "sharp" / "000.png").replace(photo)
    before = photo.read_bytes()
    _every_command_refuses(photo, tmp_path / "pairs", photo, f"{photo} is a file, not a folder (--out)")
    assert photo.read_bytes() == before


def test_an_output_that_cannot_be_written_is_refused_by_every_command_before_its_work(tmp_path, unwritable_folder):
    # Before, predict deblurred the first photo and then stopped on the OS's PermissionError.
    make_flat_dataset(tmp_path / "pairs", count=2)
    photo = tmp_path / "pairs" / "sharp" / "000.png"
    _every_command_refuses(photo, tmp_path / "pairs", unwritable_folder, f"{unwritable_folder} cannot be written in (")


def test_a_url_for_a_path_or_a_model_is_refused_by_every_command_but_predict(tmp_path, monkeypatch):
    # As a Path, s3://bucket/x is s3:/bucket/x: export had written ./s3:/bucket/m.onnx and called it done.
    monkeypatch.chdir(tmp_path)
    url = "s3://bucket/x"
    commands = {
        "train --out": ["train", "--config", "smoke", "--out", url],
        "train --data": ["train", "--config", "smoke", "--data", url],
        "timings --out": ["timings", "--config", "smoke", "--out", url],
        "evaluate DATA": ["evaluate", url],
        "evaluate --out": ["evaluate", ".", "--out", url],
        "export --out": ["export", "--format", "onnx", "--out", url],
        "data synth --src": ["data", "synth", "--src", url, "--out", "pairs"],
        "data from-video CLIP|FOLDER": ["data", "from-video", url, "--out", "pairs"],
        "data check DIR": ["data", "check", url],
    }
    for name, args in commands.items():
        result = runner.invoke(app, args)
        assert result.exit_code == 2, (name, result.output)
        assert f"{url} is a URL; give a path on this machine" in result.output, (name, result.output)
        assert f"Invalid value for '{name.split()[-1]}'" in result.output, (name, result.output)
    models = {"--init": ["train", "--config", "smoke", "--out", "run"], "--model": ["export", "--out", "m.onnx"]}
    for flag, args in models.items():  # a string option, checked where the model is chosen
        result = runner.invoke(app, [*args, flag, url] + (["--format", "onnx"] if flag == "--model" else []))
        assert result.exit_code == 1, (flag, result.output)
        assert f"{url} is a URL: give the model file as a path on this machine ({flag})" in result.output
    assert list(tmp_path.iterdir()) == []


def test_an_empty_path_is_refused_by_every_command(tmp_path, monkeypatch):
    # An unset variable in a script ("$DIR") is "": as a path ".", so `deblur predict ""` had deblurred this folder.
    monkeypatch.chdir(tmp_path)
    Image.fromarray(np.full((32, 32, 3), 128, np.uint8)).save(tmp_path / "photo.png")
    commands = {
        "an input is an empty path": [["predict", ""], ["predict", "photo.png", " ", "--engine", "ray"]],
        "the output folder is empty": [["predict", "photo.png", "--out", ""]],
        "Invalid value for '--out': an empty path": [
            ["export", "--format", "onnx", "--out", ""],
            ["timings", "--config", "smoke", "--out", ""],
            ["train", "--config", "smoke", "--out", ""],
        ],
        "Invalid value for 'DIR': an empty path": [["data", "check", ""]],
        # through an override it had been named as one: "override 'train.init=' has no value"
        "Invalid value for '--init': empty: name pretrained, latest or a model.keras": [
            ["train", "--config", "smoke", "--init", ""]
        ],
    }
    for message, runs in commands.items():
        for args in runs:
            result = runner.invoke(app, args)
            assert result.exit_code in (1, 2) and message in result.output, (args, result.output)
    assert sorted(os.listdir(tmp_path)) == ["photo.png"]


def _every_command_refuses(photo: Path, pairs: Path, blocker: Path, message: str) -> None:
    commands = {
        "predict": ["predict", str(photo), "--out", str(blocker)],
        "predict, a folder under it": ["predict", str(photo), "--out", str(blocker / "out")],
        "train": ["train", "--config", "smoke", "--out", str(blocker / "run")],
        "timings": ["timings", "--config", "smoke", "--out", str(blocker / "timings")],
        "evaluate": ["evaluate", str(pairs), "--method", "network", "--out", str(blocker / "r.json")],
        "export": ["export", "--format", "onnx", "--out", str(blocker / "model.onnx")],
        "data synth": ["data", "synth", "--src", str(pairs / "blur"), "--out", str(blocker / "pairs")],
        "data from-video": ["data", "from-video", str(pairs / "blur"), "--out", str(blocker / "pairs")],
    }
    for name, args in commands.items():
        result = runner.invoke(app, [*args, "-q"] if name != "export" else args)
        assert result.exit_code == 1, (name, result.output)
        assert message in result.output, (name, result.output)
        assert isinstance(result.exception, SystemExit), (name, result.exception)  # a user error: no traceback


def test_a_full_disk_is_one_line_naming_what_was_being_written(tmp_path, monkeypatch):
    # A real full disk (a 64 KiB tmpfs) gave these before: Pillow's OSError with no file name from predict, after
    # the photo was deblurred, and TensorFlow's ResourceExhaustedError from train's first checkpoint.
    import PIL.Image
    import tensorflow as tf

    def disk_full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    make_flat_dataset(tmp_path / "pairs", count=2)
    photo = tmp_path / "pairs" / "blur" / "000.png"
    with monkeypatch.context() as patched:
        patched.setattr(PIL.Image.Image, "save", disk_full)
        result = runner.invoke(app, ["predict", str(photo), "--method", "network", "--out", str(tmp_path / "out")])
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output
    assert f"error: {tmp_path / 'out' / '000.png'}: {os.strerror(errno.ENOSPC)}: free some space" in result.output
    assert list((tmp_path / "out").iterdir()) == []  # no temporary file left

    def checkpoint_on_a_full_disk(manager, *args, **kwargs):
        unfinished = Path(manager.directory) / "ckpt-2_temp"  # as TensorFlow leaves it, holding the room
        unfinished.mkdir(parents=True)
        (unfinished / "part-0.tempstate1").write_bytes(b"half a checkpoint")
        raise tf.errors.ResourceExhaustedError(None, None, f"ckpt-2_temp/part-0; {os.strerror(errno.ENOSPC)}")

    monkeypatch.setattr(tf.train.CheckpointManager, "save", checkpoint_on_a_full_disk)
    result = runner.invoke(app, ["train", "--config", "smoke", "--out", str(tmp_path / "run"), "-q"])
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output
    assert f"error: {tmp_path / 'run' / 'checkpoints'}: {os.strerror(errno.ENOSPC)}: free some" in result.output
    assert list((tmp_path / "run" / "checkpoints").iterdir()) == []
