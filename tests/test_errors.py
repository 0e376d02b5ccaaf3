import errno
import os

import numpy as np
import pytest
import tensorflow as tf
from helpers import make_clip, write_image

from deblur.errors import error_reason, full_disk_from_tensorflow, full_disk_message
from deblur.files import atomic_dir, atomic_path

GRAPH_ERROR = (
    "Graph execution error:\n\nDetected at node StatefulPartitionedCall defined at (most recent call last):\n"
    '  File "x.py", line 13, in <module>\n\n  File "step.py", line 31, in train_step\n\n'
    "Trying to access resource head_conv/kernel located in device CPU:1 from device CPU:0\n"
    " Cf. https://www.tensorflow.org/xla/known_issues\n\t [[{{node StatefulPartitionedCall}}]]"
)


def test_the_informative_line_not_the_traceback():
    err = tf.errors.InvalidArgumentError(None, None, GRAPH_ERROR)
    assert error_reason(err) == "Trying to access resource head_conv/kernel located in device CPU:1 from device CPU:0"


def test_a_lost_worker_is_named():
    err = tf.errors.UnavailableError(None, None, "Graph execution error:\nfoo\nTask worker/1 is unhealthy: gone")
    assert error_reason(err) == "Task worker/1 is unhealthy: gone"


def test_long_lines_are_cut():
    assert len(error_reason(tf.errors.UnknownError(None, None, "x" * 500))) == 200


def test_a_full_disk_is_one_line_naming_the_file_and_other_os_errors_are_not():
    full = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "out/photo.png")
    assert full_disk_message(full) == (
        f"out/photo.png: {os.strerror(errno.ENOSPC)}: free some space, then run the same command again (what was "
        "finished is kept)"
    )
    assert full_disk_message(OSError(errno.ENOSPC, "No space left on device")).startswith("No space left on device:")
    assert full_disk_message(OSError(errno.EIO, "Input/output error", "out/photo.png")) is None
    assert full_disk_message(OSError("cannot write mode RGBA as JPEG")) is None  # Pillow's: a bug, no errno


def test_tensorflows_full_disk_is_the_os_error_it_is_and_an_atomic_write_names_its_output(tmp_path):
    full = tf.errors.ResourceExhaustedError(None, None, f"/x/variables_temp/part-0; {os.strerror(errno.ENOSPC)}")
    as_os = full_disk_from_tensorflow(full, tmp_path / "model")
    assert (as_os.errno, as_os.filename) == (errno.ENOSPC, str(tmp_path / "model"))
    out_of_memory = tf.errors.ResourceExhaustedError(None, None, "OOM when allocating tensor with shape[8,64,256]")
    assert full_disk_from_tensorflow(out_of_memory, tmp_path) is None
    assert full_disk_from_tensorflow(tf.errors.InvalidArgumentError(None, None, str(full)), tmp_path) is None
    with pytest.raises(OSError) as caught, atomic_dir(tmp_path / "model.savedmodel"):
        raise full  # tf.saved_model.save's variables on a full disk
    assert caught.value.filename == str(tmp_path / "model.savedmodel") and isinstance(
        caught.value.__cause__, type(full)
    )
    with pytest.raises(tf.errors.ResourceExhaustedError), atomic_path(tmp_path / "model.tflite"):
        raise out_of_memory
    assert list(tmp_path.iterdir()) == []


def test_a_switch_that_is_not_true_or_false_is_named():
    import numpy as np

    from deblur.errors import SettingError, check_switches

    check_switches(overwrite=False, align=np.bool_(True))  # NumPy's bool is one
    with pytest.raises(SettingError, match="overwrite, align must be True or False; got overwrite='no', align=1"):
        check_switches(overwrite="no", align=1, baselines=True)


def test_the_functions_that_replace_outputs_refuse_overwrite_as_a_string(tmp_path):
    # a string is true: overwrite="no" had replaced the outputs it was meant to keep
    from types import SimpleNamespace

    from deblur.config import load_config
    from deblur.errors import SettingError
    from deblur.evaluation.evaluate import evaluate_model
    from deblur.export.exporter import ExportRequest
    from deblur.settings import WriteSettings
    from deblur.timings.run import run_timings
    from deblur.video.predict import deblur_clip

    deblurrer = SimpleNamespace(many=lambda *_: None)
    calls = [
        lambda: ExportRequest("onnx", tmp_path / "m.onnx", overwrite="no"),
        lambda: evaluate_model(None, tmp_path, out=tmp_path / "r.json", overwrite="no"),
        lambda: run_timings(load_config("smoke", ["data.root=null"]), "quick", tmp_path / "t", overwrite="no"),
        lambda: deblur_clip(tmp_path / "c.mp4", tmp_path / "d.mp4", deblurrer, overwrite="no"),
        lambda: WriteSettings(str(tmp_path / "out"), overwrite="no"),
    ]
    for call in calls:
        with pytest.raises(SettingError, match="overwrite must be True or False; got overwrite='no'"):
            call()
    assert sorted(tmp_path.iterdir()) == []


def test_the_functions_that_draw_bars_refuse_progress_as_a_string(tmp_path):
    # a string is true: progress="no" had drawn the bars it was meant to leave out
    from deblur.config import load_config
    from deblur.data.check import summarize
    from deblur.data.gopro import check_gopro
    from deblur.data.pairs import preflight
    from deblur.data.synth import synthesize_pairs
    from deblur.errors import SettingError
    from deblur.evaluation.evaluate import evaluate_model
    from deblur.export.exporter import ExportRequest, export_model
    from deblur.scale.run import predict_at_scale
    from deblur.settings import PredictSettings, ReadSettings, RunSettings, WriteSettings
    from deblur.timings.run import run_timings
    from deblur.training.run import train
    from deblur.video.pairs import pairs_from_video

    (tmp_path / "photos").mkdir()
    scaled = PredictSettings(ReadSettings(str(tmp_path / "photos")), write=WriteSettings(str(tmp_path / "out")))
    scaled = PredictSettings(scaled.read, scaled.deblur, scaled.write, RunSettings(engine="ray"))
    calls = [
        lambda: train(load_config("smoke"), tmp_path / "run", progress="no"),
        lambda: synthesize_pairs(tmp_path / "photos", tmp_path / "pairs", progress="no"),
        lambda: evaluate_model(None, tmp_path, progress="no"),
        lambda: export_model(ExportRequest("onnx", tmp_path / "m.onnx"), progress="no"),
        lambda: run_timings(load_config("smoke", ["data.root=null"]), "quick", tmp_path / "t", progress="no"),
        lambda: summarize(tmp_path, progress="no"),
        lambda: preflight(tmp_path, 32, progress="no"),
        lambda: check_gopro(tmp_path, progress="no"),
        lambda: pairs_from_video(tmp_path / "c.mp4", tmp_path / "pairs", progress="no"),
        lambda: predict_at_scale(scaled, progress="no"),
    ]
    for call in calls:
        with pytest.raises(SettingError, match="progress must be True or False; got progress='no'"):
            call()
    assert sorted(path.name for path in tmp_path.iterdir()) == ["photos"]


def test_a_progress_reporter_without_its_calls_is_refused_before_the_model_loads(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from deblur import inference
    from deblur.errors import SettingError
    from deblur.predict import deblur_photos
    from deblur.settings import PredictSettings, ReadSettings, WriteSettings
    from deblur.video.predict import deblur_clip

    monkeypatch.setattr(inference, "open_deblurrer", lambda *_, **__: pytest.fail("the model was opened"))
    write_image(tmp_path / "photo.png", np.zeros((8, 8, 3), np.uint8))
    settings = PredictSettings(ReadSettings(str(tmp_path / "photo.png")), write=WriteSettings(str(tmp_path / "out")))
    with pytest.raises(SettingError, match="progress must be None .* bool has no start, image, finished"):
        deblur_photos(settings, progress=True)
    # a reporter for photos alone (benchmarks' PhotoTimes) does for photos; a clip needs its `clip` too
    photos_only = SimpleNamespace(start=print, image=print, finished=print)
    make_clip(tmp_path / "clip.mp4", frames=2, size=(16, 16))
    clip_settings = PredictSettings(ReadSettings(str(tmp_path / "clip.mp4")), write=settings.write)
    with pytest.raises(SettingError, match="SimpleNamespace has no clip"):
        deblur_photos(clip_settings, progress=photos_only)
    with pytest.raises(SettingError, match="a deblur.video.predict.ClipProgress, with the methods clip"):
        deblur_clip(tmp_path / "clip.mp4", tmp_path / "d.mp4", SimpleNamespace(many=print), progress=True)
    assert not (tmp_path / "out").exists() and not (tmp_path / "d.mp4").exists()


def test_a_value_that_is_none_of_its_choices_is_named_with_them():
    from deblur.errors import SettingError, check_choice

    check_choice("codec", "h264", ("h264", "vp9"))
    with pytest.raises(SettingError, match="codec must be one of h264, vp9; got 'x264'") as err:
        check_choice("codec", "x264", ("h264", "vp9"))
    assert err.value.settings == ("codec",)
    # a list had ended on "unhashable type" where the choices were a dict's keys
    with pytest.raises(SettingError, match=r"format must be one of png, jpg; got \['png'\]") as err:
        check_choice("format", ["png"], {"png": 1, "jpg": 2}, setting="fmt")
    assert err.value.settings == ("fmt",)


def test_a_log_that_is_no_function_is_refused_before_any_work_and_none_says_nothing(tmp_path, capsys):
    # a Logger given as log had ended on "'Logger' object is not callable" at the first line said: after all the
    # pairs synthesize_pairs had made, its report lost
    import logging

    from deblur.config import load_config
    from deblur.data.synth import synthesize_pairs
    from deblur.errors import SettingError, given_log
    from deblur.evaluation.evaluate import evaluate_model
    from deblur.export.exporter import ExportRequest, export_model
    from deblur.inference import load_deblurrer
    from deblur.training.run import train

    logger = logging.getLogger("deblur-test")
    (tmp_path / "photos").mkdir()
    write_image(tmp_path / "photos" / "a.png", np.zeros((64, 64, 3), np.uint8))
    calls = [
        lambda: synthesize_pairs(tmp_path / "photos", tmp_path / "pairs", log=logger),
        lambda: train(load_config("smoke"), tmp_path / "run", log=logger),
        lambda: evaluate_model(None, tmp_path, log=logger),
        lambda: export_model(ExportRequest("onnx", tmp_path / "m.onnx"), log=logger),
        lambda: load_deblurrer(None, log=logger),
    ]
    for call in calls:
        with pytest.raises(SettingError, match="log must be a function of one string .* or None for none; got Logger"):
            call()
    assert sorted(path.name for path in tmp_path.iterdir()) == ["photos"]
    assert given_log(print) is print
    given_log(None)("said to nobody")
    assert capsys.readouterr().out == ""
