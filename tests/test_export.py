"""deblur export: each format's output against `deblur predict` on a photo, and what it refuses."""

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from helpers import save_model
from PIL import Image
from skimage import data as skimage_data
from typer.testing import CliRunner

from deblur.cli import app
from deblur.errors import SettingError
from deblur.export.exporter import ExportRequest, export_model
from deblur.export.runtimes import exported_runner
from deblur.inference import load_deblurrer

runner = CliRunner()


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = float(np.mean((np.asarray(a, np.float64) - np.asarray(b, np.float64)) ** 2))
    return float("inf") if mse == 0 else 10 * np.log10(1 / mse)


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """A tiny trained-looking model: instance norm and a random output layer, so the output is not the input."""
    return save_model(tmp_path_factory.mktemp("run"), width=4, blocks=2, norm="instance", zero_init_output=False)


@pytest.fixture(scope="module")
def photo(tmp_path_factory):
    """A real photo at an odd size, off the model's 4-pixel grid."""
    path = tmp_path_factory.mktemp("photos") / "astronaut.png"
    Image.fromarray(skimage_data.astronaut()[100:233, 150:289]).save(path)  # over SMALL_SIDE: not mirrored out
    return path


@pytest.fixture(scope="module")
def predicted(model, photo, tmp_path_factory):
    """`deblur predict` in float32: its PNG, and the float image it was rounded from."""
    out = tmp_path_factory.mktemp("predicted")
    options = ["--model", str(model), "--out", str(out), "--precision", "float32", "-q"]
    result = runner.invoke(app, ["predict", str(photo), *options])
    assert result.exit_code == 0, result.output
    image = np.asarray(Image.open(photo), np.float32) / 255.0
    return np.asarray(Image.open(out / "astronaut.png"), np.float32) / 255.0, load_deblurrer(model)(image)


def export(model, out, *options):
    return runner.invoke(app, ["export", "--model", str(model), "--out", str(out), *options])


def read(photo) -> np.ndarray:
    return np.asarray(Image.open(photo), np.float32) / 255.0


def test_an_exported_model_that_is_missing_or_unreadable_is_named(tmp_path):
    from deblur.errors import DeblurError, MissingFileError

    with pytest.raises(MissingFileError, match="nope.onnx: no such exported model"):
        exported_runner(tmp_path / "nope.onnx")  # had been ONNX Runtime's NO_SUCHFILE
    (tmp_path / "bad.onnx").write_text("not a model")
    (tmp_path / "empty").mkdir()
    said = {"bad.onnx": "is not a model ONNX Runtime can load (InvalidProtobuf", "empty": "is not a model TensorFlow"}
    for name, words in said.items():
        with pytest.raises(DeblurError, match=re.escape(f"{tmp_path / name} {words}")):
            exported_runner(tmp_path / name)


@pytest.mark.parametrize(
    "options, said",
    [
        # each had been reported as a file the runtime cannot load, or ended on a TypeError
        (dict(threads=-1), "threads must be None (all) or a whole number of at least 1; got -1"),
        (dict(threads="2"), "threads must be None (all) or a whole number of at least 1; got '2'"),
        (dict(precision="bf32"), "precision must be one of f32, bf16, f16; got 'bf32'"),
        (dict(uint8="no"), "uint8 must be True or False; got uint8='no'"),
    ],
)
def test_an_exported_runner_names_a_setting_it_cannot_use(tmp_path, options, said):
    from deblur.errors import SettingError

    with pytest.raises(SettingError, match=re.escape(said)):
        exported_runner(tmp_path / "model.onnx", **options)
    with pytest.raises(SettingError, match="the exported model is int: give its path"):
        exported_runner(5)


def test_an_exported_runner_refuses_an_array_a_deblurrer_refuses(model, tmp_path):
    from deblur.image_array import ImageArrayError

    assert export(model, tmp_path / "m.onnx", "--format", "onnx").exit_code == 0
    run = exported_runner(tmp_path / "m.onnx")
    image = np.random.default_rng(0).random((24, 32, 3), np.float32)
    assert run(image).shape == image.shape
    # a batch had met ONNX Runtime's "Invalid rank for input"; uint8 pixels were run as floats of 0-255, without a word
    with pytest.raises(ImageArrayError, match=re.escape("an array of shape (1, 24, 32, 3)")):
        run(image[None])
    with pytest.raises(ImageArrayError, match="uint8 pixels"):
        run((image * 255).astype(np.uint8))


@pytest.mark.slow
@pytest.mark.parametrize(
    "name, options, least_psnr",
    [
        ("model.tflite", ["--format", "litert"], 80),
        ("half.tflite", ["--format", "litert", "--float16"], 50),
        ("model.onnx", ["--format", "onnx"], 80),
    ],
)
def test_float_formats_match_predict(model, photo, predicted, tmp_path, name, options, least_psnr):
    result = export(model, tmp_path / name, *options)
    assert result.exit_code == 0, result.output
    assert f"wrote {tmp_path / name}" in result.output
    output = exported_runner(tmp_path / name)(read(photo))
    assert output.shape == read(photo).shape
    assert psnr(output, predicted[1]) >= least_psnr


@pytest.mark.slow
def test_openvino_ir_runs_without_deblur_and_matches_predict(model, photo, predicted, tmp_path):
    out = tmp_path / "ir" / "deblur.xml"
    result = export(model, out, "--format", "openvino")
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.parent.iterdir()) == ["deblur.bin", "deblur.xml"]  # no temporary left
    np.save(tmp_path / "photo.npy", read(photo)[None])
    # A process that does not import deblur, as a deployment has none of it; f32 and bf16 precision hints.
    script = textwrap.dedent(
        f"""
        import sys, numpy as np, openvino
        compiled = {{hint: openvino.Core().compile_model({str(out)!r}, "CPU", {{"INFERENCE_PRECISION_HINT": hint}})
                    for hint in ("f32", "bf16")}}
        photo = np.load({str(tmp_path / "photo.npy")!r})
        for hint, model in compiled.items():
            np.save({str(tmp_path)!r} + f"/{{hint}}.npy", model(photo)[0][0])
        print("deblur imported:", any(name.split(".")[0] == "deblur" for name in sys.modules))
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "deblur imported: False" in done.stdout
    assert psnr(np.load(tmp_path / "f32.npy"), predicted[1]) >= 80
    assert psnr(np.load(tmp_path / "bf16.npy"), predicted[1]) >= 30  # random weights: bfloat16 errors grow
    for given in (out, out.with_suffix(".BIN")):  # deblur's own runner, given either file of the IR
        assert psnr(exported_runner(given)(read(photo)), predicted[1]) >= 80
    again = export(model, out, "--format", "openvino")
    assert again.exit_code == 1 and "exists; allow overwriting" in again.output


@pytest.mark.slow
def test_the_shipped_model_in_openvino_bfloat16_agrees_with_predict(photo, tmp_path):
    from deblur.paths import shipped_model

    out = tmp_path / "deblur.xml"
    assert export(shipped_model(), out, "--format", "openvino").exit_code == 0
    image = read(photo)
    expected = load_deblurrer(shipped_model(), precision="float32")(image)
    assert psnr(exported_runner(out, precision="bf16")(image), expected) >= 45


def test_an_existing_openvino_bin_is_not_replaced(model, tmp_path):
    (tmp_path / "m.bin").write_bytes(b"the user's weights")
    line = one_error_line(export(model, tmp_path / "m.xml", "--format", "openvino"))
    assert "m.bin exists; allow overwriting to replace it" in line
    assert (tmp_path / "m.bin").read_bytes() == b"the user's weights" and not (tmp_path / "m.xml").exists()


@pytest.fixture(scope="module")
def savedmodel(model, tmp_path_factory):
    """The model exported once as a SavedModel, laid out as TensorFlow Serving reads it, for the tests that only
    read it."""
    out = tmp_path_factory.mktemp("serving") / "deblur" / "1"
    result = export(model, out, "--format", "savedmodel")
    assert result.exit_code == 0, result.output
    return out


@pytest.mark.slow
def test_savedmodel_signatures_match_predict(savedmodel, photo, predicted):
    # uint8 in, uint8 out: rounded as predict rounds its PNG; float32: the model's own output.
    as_uint8 = exported_runner(savedmodel, uint8=True)(read(photo))
    assert psnr(as_uint8, predicted[0]) >= 50
    assert psnr(exported_runner(savedmodel)(read(photo)), predicted[1]) >= 80


@pytest.mark.slow
def test_savedmodel_runs_without_deblur_and_in_saved_model_cli(savedmodel, photo, predicted, tmp_path):
    out = savedmodel
    batch = np.asarray(Image.open(photo))[None]
    np.save(tmp_path / "batch.npy", batch)
    # A process that does not import deblur, as a model server has none of it.
    script = textwrap.dedent(
        f"""
        import sys, numpy as np, tensorflow as tf
        loaded = tf.saved_model.load({str(out)!r})
        result = loaded.signatures["serving_default"](images=tf.constant(np.load({str(tmp_path / "batch.npy")!r})))
        np.save({str(tmp_path / "plain.npy")!r}, result["images"].numpy())
        print("deblur imported:", any(name.split(".")[0] == "deblur" for name in sys.modules))
        """
    )
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    cli = Path(sys.executable).with_name("saved_model_cli")
    run_by_cli = [cli, "run", "--dir", out, "--tag_set", "serve", "--signature_def", "serving_default"]
    run_by_cli += ["--inputs", f"images={tmp_path / 'batch.npy'}", "--outdir", tmp_path / "cli"]
    # The three side by side: one after another they took 23 s of the suite, most of it importing TensorFlow.
    started = [
        subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
        for command in ([sys.executable, "-c", script], [cli, "show", "--dir", out, "--all"], run_by_cli)
    ]
    script_run, shown, ran = started
    (printed, script_errors), (listed, show_errors), (_, run_errors) = [process.communicate() for process in started]
    assert script_run.returncode == 0, script_errors[-2000:]
    assert "deblur imported: False" in printed
    plain = np.load(tmp_path / "plain.npy")
    assert plain.dtype == np.uint8 and plain.shape == batch.shape
    assert psnr(plain[0] / 255.0, predicted[0]) >= 50

    assert shown.returncode == 0, show_errors[-2000:]
    serving = listed.split("signature_def['serving_default']")[1]
    assert "inputs['images']" in serving and "DT_UINT8" in serving and "(-1, -1, -1, 3)" in serving
    assert "signature_def['deblur_float32']" in listed
    assert ran.returncode == 0, run_errors[-2000:]
    np.testing.assert_array_equal(np.load(tmp_path / "cli" / "images.npy"), plain)


@pytest.mark.slow
def test_onnx_int8_quantizes_the_residual_blocks_only(model, photo, predicted, tmp_path):
    import onnx

    calibration = tmp_path / "calibration"
    calibration.mkdir()
    Image.fromarray(skimage_data.chelsea()).save(calibration / "chelsea.jpg")
    result = export(model, tmp_path / "q.onnx", "--format", "onnx", "--quantize", "int8", "--calibration", calibration)
    assert result.exit_code == 0, result.output
    assert f"calibrating int8 on 64 patches of {calibration}" in result.output
    assert re.search(r"calibrating: +100%.* 64/64", result.output), result.output  # a bar: most of the export's time
    graph = onnx.load(tmp_path / "q.onnx").graph
    quantized = {node.output[0] for node in graph.node if node.op_type == "DequantizeLinear"}
    convs = {node.name: node for node in graph.node if node.op_type == "Conv"}
    int8_convs = sorted(name.split("/")[1] for name, node in convs.items() if node.input[0] in quantized)
    assert int8_convs == ["block1_conv1_1", "block1_conv2_1", "block2_conv1_1", "block2_conv2_1"]
    output = exported_runner(tmp_path / "q.onnx")(read(photo))
    # int8 is close, not exact; its cost in quality is measured on real blur in the docs, not here.
    assert 25 <= psnr(output, predicted[1]) < 80


@pytest.mark.slow
def test_litert_int8_weights(model, photo, predicted, tmp_path):
    result = export(model, tmp_path / "q.tflite", "--format", "litert", "--quantize", "int8")
    assert result.exit_code == 0, result.output
    assert "int8 weights" in result.output
    assert psnr(exported_runner(tmp_path / "q.tflite")(read(photo)), predicted[1]) >= 30


@pytest.mark.slow
def test_litert_takes_any_size_in_one_interpreter(model, tmp_path):
    assert export(model, tmp_path / "m.tflite", "--format", "litert").exit_code == 0
    run, deblurrer = exported_runner(tmp_path / "m.tflite"), load_deblurrer(model)
    rng = np.random.default_rng(0)
    for shape in [(5, 7, 3), (64, 48, 3), (37, 101, 3)]:
        image = rng.random(shape, dtype=np.float32)
        # the model itself: a photo under SMALL_SIDE goes through `deblurrer(image)` mirrored out first
        assert psnr(run(image), np.asarray(deblurrer.run(image[None]))[0]) >= 80


# === What it refuses ===


def one_error_line(result) -> str:
    assert result.exit_code == 1, result.output
    lines = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, result.output
    return lines[0]


def test_unknown_format(model, tmp_path):
    # The library says so to Python callers; the CLI offers the same choices (ExportFormat) and refuses others
    # as it refuses every unknown choice, before anything runs.
    with pytest.raises(SettingError) as caught:
        ExportRequest(fmt="tflite", out=tmp_path / "m.pb")
    assert "format must be one of savedmodel, litert, onnx, openvino; got 'tflite'" in str(caught.value)
    assert caught.value.settings == ("format",)
    result = export(model, tmp_path / "m.pb", "--format", "tflite")
    assert (
        result.exit_code == 2 and "'tflite' is not one of 'savedmodel', 'litert', 'onnx', 'openvino'" in result.output
    )
    assert not (tmp_path / "m.pb").exists()


def test_not_a_deblur_model(tmp_path):
    (tmp_path / "junk.keras").write_bytes(b"not a zip")
    line = one_error_line(export(tmp_path / "junk.keras", tmp_path / "m.onnx", "--format", "onnx"))
    assert "junk.keras is not a deblur model" in line
    assert sorted(os.listdir(tmp_path)) == ["junk.keras"]


def test_existing_out_needs_overwrite_and_is_replaced_whole(model, tmp_path, monkeypatch):
    out = tmp_path / "m.tflite"
    out.write_bytes(b"the user's file")
    line = one_error_line(export(model, out, "--format", "litert"))
    assert "m.tflite exists; allow overwriting to replace it (--out, --overwrite)" in line
    assert out.read_bytes() == b"the user's file"

    def broken(*args, **kwargs):
        Path(args[1]).write_bytes(b"half")
        raise RuntimeError("converter crashed")

    monkeypatch.setattr("deblur.export.litert.export_litert", broken)
    with pytest.raises(RuntimeError, match="converter crashed"):
        runner.invoke(
            app,
            ["export", "--model", str(model), "--out", str(out), "--format", "litert", "--overwrite"],
            catch_exceptions=False,
        )
    assert out.read_bytes() == b"the user's file"  # a failed write leaves the old file, and no temporary one
    assert sorted(os.listdir(tmp_path)) == ["m.tflite"]


def test_savedmodel_overwrite_only_replaces_a_savedmodel(model, tmp_path):
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "mine.txt").write_text("keep")
    line = one_error_line(export(model, folder, "--format", "savedmodel", "--overwrite"))
    assert "is not a SavedModel folder: not replacing it" in line
    assert (folder / "mine.txt").read_text() == "keep"


@pytest.mark.slow
def test_savedmodel_overwrite_replaces_the_old_export(model, tmp_path):
    out = tmp_path / "sm"
    assert export(model, out, "--format", "savedmodel").exit_code == 0
    (out / "stale.txt").write_text("from the first export")
    assert export(model, out, "--format", "savedmodel", "--overwrite").exit_code == 0
    assert (out / "saved_model.pb").is_file() and not (out / "stale.txt").exists()
    assert sorted(os.listdir(tmp_path)) == ["sm"]


def test_never_over_the_model_itself(model):
    line = one_error_line(export(model, model.parent, "--format", "savedmodel", "--overwrite"))
    assert "would overwrite the model being exported" in line


@pytest.mark.parametrize(
    "options, message",
    [
        (["--format", "onnx", "--float16"], "float16 weights are offered for litert only (--float16, --format)"),
        (["--format", "savedmodel", "--quantize", "int8"], "int8 is offered for litert and onnx, not savedmodel"),
        (["--format", "litert", "--quantize", "int8", "--calibration", "x"], "calibration photos are used by onnx"),
        (["--format", "onnx"], "onnx files are named *.onnx: "),
        (["--format", "savedmodel"], "m.tflite is named as a file for litert (--out, --format)"),  # had been a folder
    ],
)
def test_bad_combinations(model, tmp_path, options, message):
    assert message in one_error_line(export(model, tmp_path / "m.tflite", *options))


def test_unknown_quantization(model, tmp_path):
    with pytest.raises(SettingError, match="quantize must be int8; got 'int4'"):
        ExportRequest(fmt="onnx", out=tmp_path / "m.onnx", quantize="int4")
    result = export(model, tmp_path / "m.onnx", "--format", "onnx", "--quantize", "int4")
    assert result.exit_code == 2 and "'int4' is not one of 'int8'" in result.output


def test_calibration_folder_checked_before_the_slow_part(model, tmp_path):
    line = one_error_line(
        export(model, tmp_path / "q.onnx", "--format", "onnx", "--quantize", "int8", "--calibration", tmp_path / "no")
    )
    assert "calibration folder" in line and "not found (--calibration)" in line
    (tmp_path / "photo.png").write_bytes(b"")
    int8 = ["--format", "onnx", "--quantize", "int8"]
    line = one_error_line(export(model, tmp_path / "q.onnx", *int8, "--calibration", tmp_path / "photo.png"))
    assert line.endswith("photo.png is a file: give a folder of blurry photos to calibrate on (--calibration)")
    (tmp_path / "empty").mkdir()
    line = one_error_line(
        export(
            model, tmp_path / "q.onnx", "--format", "onnx", "--quantize", "int8", "--calibration", tmp_path / "empty"
        )
    )
    assert "holds no photos to calibrate on" in line


def test_request_is_checked_on_construction(tmp_path):
    with pytest.raises(SettingError, match="format must be one of"):
        ExportRequest("pb", tmp_path / "m")


def test_paths_as_strings_are_taken_as_every_other_function_takes_them():
    request = ExportRequest("onnx", "m.onnx", quantize="int8", calibration="blurry")
    assert (request.out, request.calibration) == (Path("m.onnx"), Path("blurry"))
    with pytest.raises(SettingError, match=r"onnx files are named \*.onnx: m.tflite"):
        ExportRequest("onnx", "m.tflite")
    with pytest.raises(SettingError, match="the export's out is NoneType: give its path"):
        ExportRequest("onnx", None)  # had been Path's TypeError


def test_a_format_given_for_the_request_is_named_with_how_to_make_one():
    with pytest.raises(
        SettingError, match=r"request must be an ExportRequest, not str: deblur.ExportRequest\(format, out"
    ):
        export_model("onnx")


def test_onnx_names_its_output_and_dimensions(model, tmp_path):
    import onnxruntime

    result = export(model, tmp_path / "m.onnx", "--format", "onnx")
    assert result.exit_code == 0, result.output
    session = onnxruntime.InferenceSession(str(tmp_path / "m.onnx"), providers=["CPUExecutionProvider"])
    (blurry,), (sharp,) = session.get_inputs(), session.get_outputs()
    assert (blurry.name, sharp.name) == ("blurry", "sharp")
    assert blurry.shape == sharp.shape == ["batch", "height", "width", 3]
    image = np.random.default_rng(0).random((1, 21, 30, 3), dtype=np.float32)
    assert session.run(["sharp"], {"blurry": image})[0].shape == (1, 21, 30, 3)


def test_export_speaks_of_the_model_only_and_a_kernel_aware_one_takes_six_channels(model, tmp_path):
    result = export(model, tmp_path / "m.onnx", "--format", "onnx")
    assert result.exit_code == 0, result.output
    assert "kernel path" not in result.output and "kernel-aware" not in result.output
    aware = save_model(tmp_path / "aware", width=4, blocks=1, kernel_aware=True)
    result = export(aware, tmp_path / "aware.onnx", "--format", "onnx")
    assert result.exit_code == 0, result.output
    assert "a kernel-aware model takes 6 channels" in result.output
    image = np.random.default_rng(0).random((1, 24, 32, 6)).astype(np.float32)
    import onnxruntime

    session = onnxruntime.InferenceSession(str(tmp_path / "aware.onnx"))
    expected = load_deblurrer(aware).model.predict_on_batch(image)
    assert psnr(session.run(None, {"blurry": image})[0], expected) > 80
    refused = export(aware, tmp_path / "aware8.onnx", "--format", "onnx", "--quantize", "int8")
    assert refused.exit_code == 1 and "is kernel-aware: int8 calibrates on photos alone" in refused.output


def test_calibration_reads_each_photo_once(tmp_path, monkeypatch):
    import deblur.export.calibration as calibration

    rng = np.random.default_rng(0)
    for name, size in (("a.png", (300, 400)), ("b.png", (90, 120))):
        Image.fromarray(rng.integers(0, 256, (*size, 3), dtype=np.uint8)).save(tmp_path / name)
    read, real = [], calibration.read_photo
    monkeypatch.setattr(calibration, "read_photo", lambda path: read.append(path.name) or real(path))
    patches = calibration.calibration_patches(tmp_path, count=64)
    assert sorted(read) == ["a.png", "b.png"]  # not 32 reads of each
    assert len(patches) == 64
    assert all(patch.shape == (calibration.PATCH, calibration.PATCH, 3) for patch in patches[0::2])
    assert all(patch.shape == (90, 120, 3) for patch in patches[1::2])  # the small photo whole
    assert len({patch.tobytes() for patch in patches[0::2]}) > 1  # crops from other places
    again = calibration.calibration_patches(tmp_path, count=64)
    assert all(np.array_equal(x, y) for x, y in zip(patches, again, strict=True))
