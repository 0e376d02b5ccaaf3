"""Which model a command uses: a path, the newest run, or the model shipped with deblur."""

import os
import time
from pathlib import Path

import pytest

from deblur import paths
from deblur.errors import SettingError
from deblur.paths import exported_format


def make_run(runs, name):
    model = runs / name / "model.keras"
    model.parent.mkdir(parents=True)
    model.write_bytes(b"model")
    return model


def test_a_path_is_used_as_given(tmp_path):
    assert paths.choose_model(tmp_path / "m.keras", tmp_path).path == tmp_path / "m.keras"


def test_a_url_is_refused_naming_the_option_that_gave_it(tmp_path):
    # As a Path, s3://b/m.keras is s3:/b/m.keras, which had been called a missing file.
    with pytest.raises(SettingError, match=r"s3://b/m.keras is a URL") as refused:
        paths.choose_model("s3://b/m.keras", tmp_path, setting="init")
    assert refused.value.settings == ("init",)


def test_an_empty_model_path_is_refused_not_taken_for_the_folder_here(tmp_path):
    # `--model $MODEL` with MODEL unset had been ".", called "a folder (a SavedModel export?)"
    with pytest.raises(SettingError, match=r"the model is an empty path: name a model.keras \(or latest\)") as refused:
        paths.choose_model("", tmp_path)
    assert refused.value.settings == ("model",)


def test_a_model_that_is_no_path_is_named_not_paths_type_error(tmp_path):
    with pytest.raises(SettingError, match=r"the model is int 3: give a model.keras path, latest or pretrained"):
        paths.choose_model(3, tmp_path)


def test_no_trained_model_names_the_option_to_give_one_with(tmp_path, monkeypatch):
    monkeypatch.setenv("DEBLUR_HOME", str(tmp_path / "home"))  # no model noted by deblur train
    with pytest.raises(SettingError, match=r"name its file \(--init runs/<time>/model.keras\)") as refused:
        paths.choose_model("latest", tmp_path, setting="init")  # train --init latest had been told of --model
    assert refused.value.settings == ("init",)


def test_latest_is_the_newest_run(tmp_path):
    old, new = make_run(tmp_path, "a"), make_run(tmp_path, "b")
    os.utime(old, (time.time() - 60, time.time() - 60))
    assert paths.choose_model("latest", tmp_path).path == new


def test_default_is_the_shipped_model_even_after_a_run(tmp_path, monkeypatch):
    shipped = make_run(tmp_path / "package", "weights")
    make_run(tmp_path / "runs", "demo")  # a 3-minute demo must not shadow the shipped model
    monkeypatch.setattr(paths, "shipped_model", lambda kernel_aware=False: shipped)
    choice = paths.choose_model(None, tmp_path / "runs")
    assert choice.path == shipped and "pretrained model shipped with deblur" in choice.description
    assert paths.choose_model("pretrained", tmp_path / "runs").path == shipped


def test_without_a_shipped_model(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "shipped_model", lambda kernel_aware=False: None)
    with pytest.raises(SettingError, match="no trained model"):
        paths.choose_model(None, tmp_path)
    run = make_run(tmp_path, "demo")
    assert paths.choose_model(None, tmp_path).path == run
    with pytest.raises(SettingError, match="no pretrained model"):
        paths.choose_model("pretrained", tmp_path)


def test_latest_is_the_model_trained_last_wherever_training_ran(tmp_path, monkeypatch):
    monkeypatch.setenv("DEBLUR_HOME", str(tmp_path / "home"))
    elsewhere = make_run(tmp_path / "project" / "runs", "a")
    paths.record_last_model(elsewhere)
    monkeypatch.chdir(tmp_path)  # no runs/ here
    assert paths.choose_model("latest").path == elsewhere.resolve()
    here = make_run(tmp_path / "runs", "b")  # a newer run under this folder wins
    os.utime(elsewhere, (time.time() - 60, time.time() - 60))
    assert paths.choose_model("latest").path.resolve() == here.resolve()
    here.unlink()
    elsewhere.unlink()  # a recorded model that is gone is not chosen
    assert paths.latest_model() is None


def test_no_model_to_be_found_names_where_it_looked_and_how_to_name_one(tmp_path, monkeypatch):
    monkeypatch.setenv("DEBLUR_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SettingError) as refused:
        paths.choose_model("latest")
    message = str(refused.value)
    assert f"none in {tmp_path / 'runs'}" in message and str(paths.last_model_record()) in message
    assert "--model runs/<time>/model.keras" in message


@pytest.mark.parametrize(
    "name, fmt",
    [("m.tflite", "litert"), ("m.ONNX", "onnx"), ("m.xml", "openvino"), ("m.bin", "openvino"), ("m.keras", None)],
)
def test_the_format_an_exports_name_says(name, fmt):
    assert exported_format(Path(name)) == fmt
