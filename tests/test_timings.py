"""`deblur timings` end to end on the smoke model: JSON schema, chart, skip reasons, refusal to overwrite."""

import json
from dataclasses import replace

import pytest
from helpers import make_flat_dataset
from PIL import Image
from typer.testing import CliRunner

from deblur.cli import app
from deblur.config import load_config
from deblur.errors import SettingError
from deblur.model import GRADIENTS
from deblur.timings.run import PRESETS, Preset, run_timings, timings
from deblur.timings.stages import STAGE_NAMES

runner = CliRunner()
SMOKE = ["--config", "smoke", "--steps", "2", "--warmup", "1", "--patch-size", "32", "-q"]
STAGE_KEYS = {
    "name",
    "images_per_second",
    "step_ms_median",
    "step_ms_p90",
    "input_wait_fraction",
    "speedup",
    "skipped",
}


@pytest.fixture(scope="module", autouse=True)
def loaders_timed_briefly():
    """The quick preset times each loader for 30 batches and 2 s at least: real use's figures, and a third of each
    run's time here, where only that each loader is timed matters."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(PRESETS, "quick", replace(PRESETS["quick"], loader_batches=4, loader_seconds=0))
        yield


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("timings")
    result = runner.invoke(app, ["timings", *SMOKE, "--out", str(out)])
    return out, result


def test_writes_json_and_chart(smoke_run):
    out, result = smoke_run
    assert result.exit_code == 0, result.output
    report = json.loads((out / "timings.json").read_text())
    assert {"device", "preset", "stages"} <= report.keys()
    assert report["preset"] == "quick"
    assert {"cpu", "cpu_cores", "gpus", "tensorflow", "keras"} <= report["device"].keys()
    assert [stage["name"] for stage in report["stages"]] == list(STAGE_NAMES)
    for stage in report["stages"]:
        assert stage.keys() >= STAGE_KEYS
        if stage["skipped"] is None:
            assert stage["images_per_second"] > 0 and stage["step_ms_p90"] >= stage["step_ms_median"] > 0
            assert stage["gflops"] > 0 and 0 < stage["matmul_share"] < 5
            assert stage["timed_steps"] == 2 or stage["name"] == "steps-per-call"
        else:
            assert isinstance(stage["skipped"], str) and stage["skipped"].strip()
            assert stage["images_per_second"] is None and stage["speedup"] is None
    assert report["matmul_gflops"]["float32"] > 0  # measured in the same run
    assert report["settings"]["gradients"] == GRADIENTS  # so charts from before and after can be told apart
    first = report["stages"][0]
    assert first["speedup"] == pytest.approx(1.0)
    assert [loader["name"] for loader in report["pipeline"]] == ["keras-sequence", "tf.data", "tf.data-optimized"]
    with Image.open(out / "timings.png") as chart:
        assert chart.format == "PNG" and chart.width > 800


def test_no_gpu_here_so_multi_gpu_is_skipped_with_a_reason(smoke_run):
    out, result = smoke_run
    stages = {stage["name"]: stage for stage in json.loads((out / "timings.json").read_text())["stages"]}
    assert stages["multi-gpu"]["skipped"] == "0 GPUs visible: needs 2 or more"
    assert "skipped multi-gpu: 0 GPUs visible" in result.output


def test_prints_the_table(smoke_run):
    _, result = smoke_run
    assert "speedup" in result.output and "5x200 time" in result.output and "patches/s" in result.output
    assert "GFLOP/s" in result.output and "of matmul" in result.output


def test_refuses_to_overwrite_earlier_results(smoke_run, tmp_path):
    out, _ = smoke_run
    before = (out / "timings.json").read_bytes()
    result = runner.invoke(app, ["timings", *SMOKE, "--out", str(out), "--stages", "tf.data"])
    assert result.exit_code == 1
    assert f"{out / 'timings.json'} and {out / 'timings.png'} already exist:" in result.output
    assert "--overwrite" in result.output
    assert (out / "timings.json").read_bytes() == before
    (tmp_path / "timings.json").write_bytes(before)  # one of the two
    result = runner.invoke(app, ["timings", *SMOKE, "--out", str(tmp_path), "--stages", "tf.data"])
    assert result.exit_code == 1 and f"{tmp_path / 'timings.json'} already exists:" in result.output
    (tmp_path / "timings.png").mkdir()  # had been found after the timing, where overwriting was allowed
    result = runner.invoke(app, ["timings", *SMOKE, "--out", str(tmp_path), "--stages", "tf.data", "--overwrite"])
    assert result.exit_code == 1 and "timings.png is a folder, where an output file goes" in result.output
    assert "stage tf.data" not in result.output  # refused before any stage was timed


def test_unknown_stage_is_an_error(tmp_path):
    result = runner.invoke(app, ["timings", *SMOKE, "--out", str(tmp_path / "t"), "--stages", "tf.data,fp16"])
    assert result.exit_code == 1 and "unknown stage(s) fp16" in result.output
    assert not (tmp_path / "t").exists()


def test_the_library_takes_a_preset_by_name_and_stages_and_out_as_strings(tmp_path):
    out = str(tmp_path / "t")  # each had ended on a TypeError or AttributeError, the stages on their letters
    with pytest.raises(SettingError, match=r"unknown stage\(s\) fp16"):
        run_timings(load_config("smoke"), "quick", out, stages="tf.data, fp16", progress=False, log=str)
    with pytest.raises(SettingError, match="preset must be one of paper, quick; got 'fast'"):
        run_timings(load_config("smoke"), "fast", out, progress=False, log=str)
    with pytest.raises(SettingError, match=r"preset must be one of paper, quick; got \['quick'\]"):
        run_timings(load_config("smoke"), ["quick"], out, progress=False, log=str)  # "unhashable type: 'list'"
    with pytest.raises(SettingError, match="the timings' folder is NoneType: give its path"):
        run_timings(load_config("smoke"), "quick", None, progress=False, log=str)  # had been Path's TypeError
    assert not (tmp_path / "t").exists()


def test_an_empty_config_is_refused_not_taken_for_the_default(tmp_path):
    # `--config $CONFIG` with CONFIG unset had timed the gopro config's stages without a word
    args = ["timings", "--config", "", *SMOKE[2:], "--out", str(tmp_path / "t")]
    result = runner.invoke(app, args)
    assert result.exit_code == 1 and "the config is an empty path" in result.output, result.output
    assert "stage" not in result.output and not (tmp_path / "t").exists()


@pytest.mark.parametrize(
    "given, said",
    [
        ({"patch_size": 4}, "patch_size must be at least 8; got 4"),  # had been a MirrorPad traceback
        ({"steps": 0}, "steps must be at least 1; got 0"),  # a ZeroDivisionError
        ({"batch_size": 0}, "batch_size must be at least 1; got 0"),  # numpy's "need at least one array"
        ({"warmup": -1}, "warmup must be at least 1; got -1"),  # went by as none
    ],
)
def test_a_workload_the_cli_refuses_is_refused_by_the_library_too(tmp_path, given, said):
    with pytest.raises(SettingError, match=said) as refused:
        timings(**given, out=tmp_path / "t")
    assert refused.value.settings == (next(iter(given)),)
    assert not (tmp_path / "t").exists()


def test_pipeline_only(tmp_path):
    result = runner.invoke(app, ["timings", *SMOKE, "--out", str(tmp_path), "--pipeline-only"])
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "timings.json").read_text())
    assert report["stages"] == []
    assert all(loader["patches_per_second"] > 0 for loader in report["pipeline"])
    optimized = report["pipeline"][2]
    assert optimized["warmup_batches"] > report["settings"]["training_pairs"] / 4  # a full pass fills the cache


def test_stages_and_devices_that_are_no_list_of_names_are_refused_before_any_work(tmp_path):
    config = load_config("smoke", ["data.root=null"])
    with pytest.raises(SettingError, match="stages must be a list of stage names, or one string separated by co"):
        run_timings(config, "quick", tmp_path / "t", stages=5)  # had been "'int' object is not iterable"
    # one name had been read letter by letter, and failed on 'c' after the loaders' timings
    with pytest.raises(SettingError, match=r"multi_devices must be a list of device names, such as \['/gpu:0'"):
        run_timings(config, "quick", tmp_path / "t", multi_devices="/cpu:0")
    assert not (tmp_path / "t").exists()


def test_stages_are_refused_beside_pipeline_only_which_times_no_stage(tmp_path):
    given = ["timings", *SMOKE, "--out", str(tmp_path / "t"), "--pipeline-only", "--stages", "xla"]
    result = runner.invoke(app, given)
    assert result.exit_code == 1 and not (tmp_path / "t").exists(), result.output
    assert "pipeline_only times the loaders alone" in result.output and "(--stages, --pipeline-only)" in result.output


def test_multi_gpu_stage_runs_over_logical_cpus(tmp_path):
    """The GPU path, on the two logical CPU devices conftest makes: global batch = batch x replicas."""
    config = load_config("smoke", ["data.root=null"])
    preset = Preset("test", 32, 2, warmup_steps=1, steps=2, loader_batches=2, steps_per_call=2, loader_seconds=0)
    report = run_timings(
        config,
        preset,
        tmp_path,
        stages=["multi-gpu", "xla"],
        multi_devices=["/cpu:0", "/cpu:1"],
        progress=False,
        log=lambda _: None,
    )
    multi, xla = report.stages
    assert multi.name == "multi-gpu" and multi.skipped is None and multi.replicas == 2
    assert tuple(multi.settings["devices"]) == ("/cpu:0", "/cpu:1")
    # XLA cannot reach variables on a second logical CPU device (TensorFlow's known issue "tf.Variable on a
    # different device"); real GPUs each compile their own. Either way the run goes on and says what happened.
    if xla.skipped:
        assert xla.skipped.startswith("failed on this machine: Trying to access resource")
    else:
        assert xla.replicas == 2 and xla.images_per_second > 0


def test_steps_per_call_stage_times_steps_taken_in_the_graph(tmp_path):
    config = load_config("smoke", ["data.root=null"])
    preset = Preset("test", 32, 2, warmup_steps=1, steps=4, loader_batches=2, steps_per_call=2, loader_seconds=0)
    report = run_timings(config, preset, tmp_path, stages=["steps-per-call"], progress=False, log=lambda _: None)
    (stage,) = report.stages
    assert stage.skipped is None and stage.input_wait_fraction is None
    assert stage.timed_steps == 4 and stage.settings["steps_per_call"] == 2


def test_own_data_and_a_subset_of_stages(tmp_path):
    data = make_flat_dataset(tmp_path / "flat", count=6)
    out = tmp_path / "t"
    result = runner.invoke(app, ["timings", *SMOKE, "--data", str(data), "--out", str(out), "--stages", "tf.data"])
    assert result.exit_code == 0, result.output
    report = json.loads((out / "timings.json").read_text())
    assert report["settings"]["data"] == str(data) and report["settings"]["training_pairs"] == 5
    assert [stage["name"] for stage in report["stages"]] == ["tf.data"]


def test_bad_data_is_named_and_nothing_written(tmp_path):
    data = make_flat_dataset(tmp_path / "flat", count=3)
    (data / "sharp" / "001.png").unlink()
    result = runner.invoke(app, ["timings", *SMOKE, "--data", str(data), "--out", str(tmp_path / "t")])
    assert result.exit_code == 1 and "001.png: no sharp partner" in result.output
    assert "nothing was timed" in result.output
    assert not (tmp_path / "t").exists()


def test_a_stopped_run_says_how_far_it_got_and_that_nothing_was_written(tmp_path, monkeypatch):
    import deblur.timings.run as timings_run

    real, calls = timings_run._time_stage, []

    def stopped_in_the_second(*args, **kwargs):
        calls.append(args[1].name)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(timings_run, "_time_stage", stopped_in_the_second)
    out = tmp_path / "t"
    result = runner.invoke(app, ["timings", *SMOKE, "--out", str(out), "--stages", "tf.data,mixed-precision"])
    assert result.exit_code == 130, result.output
    assert f"stopped after 1 of 2 stage(s): nothing was written to {out}." in result.output
    assert "the same command measures them again" in result.output
    assert not out.exists()


def test_a_stopped_pipeline_only_run_speaks_of_its_loaders(tmp_path, monkeypatch):
    import deblur.timings.run as timings_run

    monkeypatch.setattr(timings_run, "_time_loader", lambda *args, **kwargs: (_ for _ in ()).throw(KeyboardInterrupt))
    result = runner.invoke(app, ["timings", *SMOKE, "--out", str(tmp_path / "t"), "--pipeline-only"])
    assert result.exit_code == 130, result.output
    assert f"stopped: nothing was written to {tmp_path / 't'}. The loaders are compared within one run" in result.output
