"""The runtime choice, and OpenVINO giving what TensorFlow gives through deblur's own tiling, ensemble and strength."""

import errno
import os
from pathlib import Path
from types import SimpleNamespace

import keras
import numpy as np
import pytest
from helpers import save_model
from PIL import Image
from typer.testing import CliRunner

from deblur import runtime as runtimes
from deblur.cli import app
from deblur.errors import SettingError
from deblur.inference import Deblurrer, load_deblurrer, open_deblurrer
from deblur.losses import image_psnr
from deblur.runtime import choose_runtime
from deblur.runtime import openvino as ov_runtime

pytest.importorskip("openvino")


@pytest.fixture
def model(tmp_path):
    # Instance norms, as the shipped model has: their extra outputs in the IR are what write_ir drops.
    return save_model(tmp_path / "random", zero_init_output=False, width=6, blocks=2, norm="instance")


def image(height=200, width=180, seed=1):
    return np.random.default_rng(seed).random((height, width, 3)).astype("float32")


def test_auto_is_openvino_when_installed_and_tensorflow_with_a_hint_when_not(monkeypatch):
    assert choose_runtime("auto") == ("openvino", None)
    assert choose_runtime("tensorflow") == ("tensorflow", None)
    monkeypatch.setattr(runtimes, "openvino_installed", lambda: False)
    chosen, hint = choose_runtime("auto")
    assert chosen == "tensorflow" and "pip install 'deblur-keras[openvino]'" in hint
    with pytest.raises(SettingError, match="runtime openvino needs OpenVINO: pip install") as caught:
        choose_runtime("openvino")
    assert caught.value.settings == ("runtime",)
    with pytest.raises(SettingError, match="runtime must be one of auto, tensorflow, openvino, jax; got 'onnx'"):
        choose_runtime("onnx")


@pytest.mark.parametrize(
    ("options", "size"),
    [
        ({}, (200, 180)),  # whole
        ({"tile": 128, "overlap": 48, "call_pixels": 1}, (200, 180)),  # four tiles, one a call
        ({"tile": 128, "overlap": 48, "call_pixels": 2 * 128 * 116}, (200, 180)),  # two tiles a call
        ({"ensemble": 8, "strength": 0.5}, (96, 80)),  # turned and mirrored copies, half strength
    ],
)
def test_openvino_float32_matches_tensorflow_through_tiles_ensemble_and_strength(model, options, size):
    tensorflow = load_deblurrer(model, precision="float32")
    openvino = load_deblurrer(model, precision="float32", runtime="openvino", log=lambda _: None)
    assert openvino.runtime.startswith("OpenVINO") and openvino.precision == "float32"
    picture = image(*size)
    expected = Deblurrer(tensorflow.model, **options)(picture)
    result = Deblurrer(openvino.model, **options, runner=openvino.runner, runtime=openvino.runtime)(picture)
    assert image_psnr(np.clip(expected, 0, 1), np.clip(result, 0, 1)) > 60
    assert not np.allclose(result, picture, atol=1e-3)  # the model did something: the comparison means something


@pytest.mark.parametrize("options", [{}, {"tile": 128, "overlap": 48, "call_pixels": 1}, {"ensemble": 8}])
def test_a_kernel_aware_model_gives_its_gate_on_openvino_as_on_tensorflow(tmp_path, options):
    aware = save_model(tmp_path / "aware", kernel_aware=True, zero_init_output=False, width=6, norm="instance")
    tensorflow = load_deblurrer(aware, precision="float32", method="kernel-aware")
    openvino = load_deblurrer(aware, precision="float32", runtime="openvino", method="kernel-aware", log=print)
    stacked = np.concatenate([image(), image(seed=2)], axis=2)
    expected, result = (
        Deblurrer(d.model, **options, runner=d.runner).tiling.ensembled(stacked, options.get("ensemble", 1), d.run)
        for d in (tensorflow, openvino)
    )
    assert expected.shape == result.shape == (200, 180, 4)  # the output, and the gate beside it
    gate = expected[..., 3]
    assert gate.min() >= 0 and gate.max() <= 1 and gate.std() > 0.01  # a gate that varies: the test means something
    np.testing.assert_allclose(result, expected, atol=2e-4)


def test_openvino_runs_a_clip_batch_as_tensorflow_does(model):
    frames = [image(64, 96, seed) for seed in range(3)]
    tensorflow = Deblurrer(load_deblurrer(model).model, call_pixels=3 * 64 * 96)
    openvino = load_deblurrer(model, precision="float32", runtime="openvino", log=lambda _: None)
    openvino.call_pixels = 3 * 64 * 96
    assert openvino.frames_per_call(64, 96) == 3
    for expected, result in zip(tensorflow.many(frames), openvino.many(frames), strict=True):
        assert image_psnr(np.clip(expected, 0, 1), np.clip(result, 0, 1)) > 60


def test_bfloat16_on_openvino_stays_close_to_float32(model):
    float32 = load_deblurrer(model, precision="float32")
    bfloat16 = load_deblurrer(model, precision="bfloat16", runtime="openvino", log=lambda _: None)
    assert bfloat16.precision == "bfloat16"  # no config.yaml needed, unlike TensorFlow's bfloat16 rebuild
    picture = image()
    assert image_psnr(np.clip(float32(picture), 0, 1), np.clip(bfloat16(picture), 0, 1)) > 35


def test_the_conversion_is_made_once_per_model_file_and_says_so(model, tmp_path):
    messages: list[str] = []
    first = ov_runtime.cached_ir(load_deblurrer(model).model, model, messages.append, cache=tmp_path / "cache")
    assert len(messages) == 1 and messages[0].startswith("converting model.keras for OpenVINO")
    assert first.is_file() and first.with_suffix(".bin").is_file()
    again = ov_runtime.cached_ir(load_deblurrer(model).model, model, messages.append, cache=tmp_path / "cache")
    assert again == first and len(messages) == 1
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [first.parent.name]  # no temporary folder left
    # Another model in the same place is another key: a stale conversion is never used.
    other = save_model(tmp_path / "other", zero_init_output=False, width=6, blocks=2, norm="instance")
    os.replace(other, model)
    third = ov_runtime.cached_ir(load_deblurrer(model).model, model, messages.append, cache=tmp_path / "cache")
    assert third != first and len(messages) == 2


def test_a_failed_conversion_leaves_nothing_in_the_cache(model, tmp_path, monkeypatch):
    def broken(keras_model, path):
        Path(path).write_text("half")
        raise RuntimeError("converter failed")

    monkeypatch.setattr(ov_runtime, "write_ir", broken)
    with pytest.raises(RuntimeError, match="converter failed"):
        ov_runtime.cached_ir(load_deblurrer(model).model, model, lambda _: None, cache=tmp_path / "cache")
    assert list((tmp_path / "cache").iterdir()) == []


@pytest.mark.parametrize("free, raised", [(0, OSError), (2**30, RuntimeError)])
def test_openvinos_iostream_error_on_a_full_disk_is_the_os_error_naming_the_output(
    model, tmp_path, monkeypatch, free, raised
):
    def iostream_error(*args, **kwargs):
        raise RuntimeError("basic_ios::clear: iostream error")  # what OpenVINO says when the disk fills

    monkeypatch.setattr(keras.Model, "export", iostream_error)
    monkeypatch.setattr(ov_runtime.shutil, "disk_usage", lambda path: SimpleNamespace(total=2**30, free=free))
    keras_model = load_deblurrer(model).model
    with pytest.raises(raised) as caught:
        ov_runtime.write_ir(keras_model, tmp_path / "out" / "model.xml")
    if raised is OSError:  # with room left, it is not the disk: OpenVINO's own words stay
        assert (caught.value.errno, caught.value.filename) == (errno.ENOSPC, str(tmp_path / "out" / "model.xml"))
        messages: list[str] = []
        with pytest.raises(OSError) as caught:  # the cache's, said; then this run's own conversion's, named
            ov_runtime.cached_ir(keras_model, model, messages.append, cache=tmp_path / "cache")
        assert (
            messages[-1] == f"not kept: {tmp_path / 'cache'}: {os.strerror(errno.ENOSPC)}; converting for this run only"
        )
        assert Path(caught.value.filename).parent.name.startswith("deblur-openvino-")
        assert list((tmp_path / "cache").iterdir()) == []
    assert list((tmp_path / "out").iterdir()) == []


def test_the_ir_has_only_the_image_output(model, tmp_path):
    import openvino

    xml = ov_runtime.write_ir(load_deblurrer(model).model, tmp_path / "m.xml")
    outputs = openvino.Core().read_model(xml).outputs
    assert len(outputs) == 1 and str(outputs[0].get_partial_shape()) == "[?,?,?,3]"


def test_open_deblurrer_says_the_runtime_and_how_to_get_openvino(model, monkeypatch):
    messages: list[str] = []
    deblurrer, _ = open_deblurrer(model, precision="float32", method="network", log=messages.append)
    assert deblurrer.runtime.startswith("OpenVINO") and "float32 on OpenVINO" in messages[-1]
    monkeypatch.setattr(runtimes, "openvino_installed", lambda: False)
    messages.clear()
    deblurrer, _ = open_deblurrer(model, precision="float32", method="network", log=messages.append)
    assert deblurrer.runtime == "tensorflow" and "float32 on tensorflow" in messages[0]
    assert messages[1].startswith("OpenVINO is faster on CPUs: pip install 'deblur-keras[openvino]'")


def test_predict_with_each_runtime_writes_the_same_photo(model, tmp_path):
    source = tmp_path / "in.png"
    Image.fromarray((image(72, 88) * 255).astype(np.uint8)).save(source)
    outputs = {}
    for runtime in ("tensorflow", "openvino"):
        out = tmp_path / runtime
        args = ["predict", str(source), "--model", str(model), "--out", str(out), "--runtime", runtime]
        result = CliRunner().invoke(app, [*args, "--precision", "float32"])
        assert result.exit_code == 0, result.output
        assert f"float32 on {'OpenVINO' if runtime == 'openvino' else 'tensorflow'}" in result.output
        outputs[runtime] = np.asarray(Image.open(out / "in.png"), np.int16)
    assert np.abs(outputs["tensorflow"] - outputs["openvino"]).max() <= 1
    bad = CliRunner().invoke(app, ["predict", str(source), "--model", str(model), "--runtime", "onnx"])
    assert bad.exit_code == 2 and "'onnx' is not one of 'auto', 'tensorflow', 'openvino'" in bad.output


def test_a_cache_that_cannot_be_written_converts_for_this_run_only(model, tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    messages: list[str] = []
    at_exit = []
    monkeypatch.setattr(ov_runtime.atexit, "register", lambda *call, **options: at_exit.append((call, options)))
    xml = ov_runtime.cached_ir(load_deblurrer(model).model, model, messages.append, cache=blocker / "cache")
    assert xml.is_file() and "not kept" in messages[0] and str(blocker) in messages[0]
    [((remove, *args), options)] = at_exit  # as the process ends: not left in the temporary folder
    remove(*args, **options)
    assert not xml.parent.exists()


def test_a_cache_on_a_full_disk_converts_for_this_run_only(model, tmp_path, monkeypatch):
    # DEBLUR_HOME on a full disk, the outputs on another: the run had stopped on the cache, naming it
    write_ir, cache = ov_runtime.write_ir, tmp_path / "cache"

    def full_in_the_cache(keras_model, path):
        if Path(path).is_relative_to(cache):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        return write_ir(keras_model, path)

    monkeypatch.setattr(ov_runtime, "write_ir", full_in_the_cache)
    messages: list[str] = []
    xml = ov_runtime.cached_ir(load_deblurrer(model).model, model, messages.append, cache=cache)
    assert xml.is_file() and not xml.is_relative_to(cache) and list(cache.iterdir()) == []
    assert messages[-1] == f"not kept: {cache}: {os.strerror(errno.ENOSPC)}; converting for this run only"


def test_a_cache_folder_there_but_not_writable_converts_for_this_run_only(model, unwritable_folder):
    # Another user's data home, say: before, the conversion failed on the OS's PermissionError.
    messages: list[str] = []
    xml = ov_runtime.cached_ir(load_deblurrer(model).model, model, messages.append, cache=unwritable_folder)
    assert xml.is_file() and "not kept" in messages[0] and f"(not kept: {unwritable_folder}: " in messages[0]
