from pathlib import Path

import pytest

from deblur.errors import SettingError
from deblur.settings import ReadSettings, WriteSettings


@pytest.mark.parametrize("one", ["photo.jpg", Path("photo.jpg")])
def test_one_input_given_alone_is_one_input_not_its_letters(one):
    assert ReadSettings(one).inputs == ("photo.jpg",)


def test_inputs_as_a_list_of_paths_are_kept_in_order_as_strings():
    assert ReadSettings([Path("b.jpg"), "a.jpg"]).inputs == ("b.jpg", "a.jpg")
    assert ReadSettings(path for path in ["c.jpg"]).inputs == ("c.jpg",)  # a generator, read once


def test_no_inputs_are_refused_not_a_run_that_does_nothing():
    with pytest.raises(SettingError, match="no inputs: name a photo, clip or folder"):
        ReadSettings(())


def test_what_was_asked_of_a_kind_of_input_the_run_does_not_hold_is_said():
    from deblur.video.encode import Encoding

    for_clips = WriteSettings(encoding=Encoding("vp9", 30))
    for_photos = WriteSettings(fmt="jpg", quality=90)
    assert for_clips.unused_for({"photo"}) == [
        "the codec and crf are for clips, and the inputs hold none: they go unused"
    ]
    assert for_photos.unused_for({"video"}) == [
        "the photo format and quality are for photos, and the inputs hold none: they go unused"
    ]
    assert for_clips.unused_for({"photo", "video"}) == for_photos.unused_for({"photo", "video"}) == []
    assert WriteSettings().unused_for({"photo"}) == WriteSettings().unused_for({"video"}) == []


def test_settings_of_the_wrong_kind_are_named_with_the_one_to_give():
    from deblur.predict import deblur_photos
    from deblur.scale.run import predict_at_scale
    from deblur.settings import PredictSettings

    with pytest.raises(SettingError, match="PredictSettings' read is list: give a ReadSettings"):
        PredictSettings(["photo.jpg"])  # had been an AttributeError when the run read it
    for run in (deblur_photos, predict_at_scale):  # both had been an AttributeError of None
        with pytest.raises(SettingError, match=r"the settings are NoneType: give deblur.settings.PredictSettings\("):
            run(None)


@pytest.mark.parametrize(
    "given, said",
    [
        # NaN had let any size through, -1 refused every photo as too large, "x" ended on a TypeError
        (dict(max_pixels=float("nan")), "max_pixels must be a whole number of pixels, at least 1; got nan"),
        (dict(max_pixels=-1), "got -1"),
        (dict(max_pixels="x"), "got 'x'"),
        # had been os.fspath's "expected str, bytes or os.PathLike object, not int"
        (dict(inputs=["photo.jpg", 5]), "an input is int 5: name a photo, clip or folder by its path"),
        (dict(inputs=None), "an input is NoneType None"),  # had been "'NoneType' object is not iterable"
    ],
)
def test_what_to_read_is_refused_by_name_where_it_cannot_be_read(given, said):
    with pytest.raises(SettingError) as refused:
        ReadSettings(**{"inputs": ("photo.jpg",), **given})
    assert said in str(refused.value)


def test_a_switch_given_as_anything_but_true_or_false_is_refused():
    # overwrite="no" had replaced existing outputs: a string is true
    with pytest.raises(SettingError, match="side_by_side, overwrite must be True or False; got side_by_side=1, ov"):
        WriteSettings(overwrite="no", side_by_side=1)
    import numpy as np

    assert WriteSettings(overwrite=np.bool_(True)).overwrite  # NumPy's bool is one


def test_settings_naming_an_engine_are_not_run_here_without_it(tmp_path):
    from deblur.predict import deblur_photos
    from deblur.settings import DeblurSettings, PredictSettings, RunSettings

    photo = tmp_path / "photo.png"
    settings = PredictSettings(
        ReadSettings((str(photo),)),
        DeblurSettings(method="kernel"),
        WriteSettings(str(tmp_path / "out")),
        RunSettings(engine="ray"),
    )
    with pytest.raises(SettingError, match="name the 'ray' engine, and deblur_photos deblurs in this process"):
        deblur_photos(settings)  # had deblurred here as if no engine were named
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("run", [dict(worker_cpus="2"), dict(workers=1.5), dict(workers=0)])
def test_workers_that_are_no_whole_number_of_at_least_1_are_named_when_the_settings_are_made(run):
    from deblur.settings import RunSettings

    with pytest.raises(SettingError, match="workers and worker CPUs must be whole numbers of at least 1; got") as err:
        RunSettings(engine="ray", **run)  # worker_cpus "2" had ended on a TypeError in predict_at_scale
    assert err.value.settings == ("workers", "worker_cpus")


def test_an_engine_or_an_encoding_of_another_kind_is_named_when_the_settings_are_made():
    from deblur.settings import RunSettings
    from deblur.video.encode import Encoding

    # "spark" had been refused only by predict_at_scale, deblur_photos sending it there
    with pytest.raises(SettingError, match="engine must be one of ray; got 'spark'"):
        RunSettings(engine="spark")
    # a codec's name had been refused only as the first clip was written
    with pytest.raises(SettingError, match="encoding must be a deblur.video.encode.Encoding, not str 'vp9': Enc"):
        WriteSettings(encoding="vp9")
    assert WriteSettings(encoding=Encoding("vp9")).encoding.codec == "vp9"


@pytest.mark.parametrize(
    "given, said",
    [
        (dict(precision="fp8"), "precision must be one of auto, float32, bfloat16; got 'fp8'"),
        (dict(precision=["float32"]), "precision must be one of auto, float32, bfloat16; got ['float32']"),
        (dict(runtime="onnx"), "runtime must be one of auto, tensorflow, openvino, jax; got 'onnx'"),
        (dict(strength=2.0), "strength must be from 0 to 1.5: 2"),
        (dict(estimates=0), "estimates must be 1 to 3; got 0"),
        (dict(tile=30), "tile must be a multiple of"),
        (dict(overlap=-1), "overlap must be at least 0"),
    ],
)
def test_how_to_deblur_is_refused_by_name_when_the_settings_are_made(given, said):
    # each had been refused only when the model loaded: with an engine, by every worker as it started
    from deblur.settings import DeblurSettings

    with pytest.raises(SettingError) as refused:
        DeblurSettings(**given)
    assert said in str(refused.value)
