import json
import re

import numpy as np
import pytest
from helpers import make_flat_dataset, smoke_config
from PIL import Image
from skimage.metrics import peak_signal_noise_ratio, structural_similarity
from test_synth import make_photos
from typer.testing import CliRunner

from deblur.cli import app
from deblur.config import SynthConfig
from deblur.data.synth import synthesize_pairs
from deblur.errors import Interrupted, OutputBusyError
from deblur.shake.tries import ESTIMATES
from deblur.training.trainer import train

runner = CliRunner()


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    """Synthetic pairs with kernels, and a smoke model trained on them."""
    base = tmp_path_factory.mktemp("evaluate")
    data = synthesize_pairs(
        make_photos(base / "photos"),
        base / "pairs",
        SynthConfig(pairs_per_photo=1, max_length=7),
        val_fraction=0.4,
        log=lambda _: None,
    ).out
    model = train(
        smoke_config(f"data.root={data}", "train.epochs=1"), base / "run", progress=False, log=lambda _: None
    ).model_path
    return data, model


def test_the_kernel_method_is_named_in_the_table_and_the_json(synthetic, tmp_path):
    data, model = synthetic
    out = tmp_path / "kernel.json"
    args = ["evaluate", "--model", str(model), "--data", str(data), "--out", str(out), "--method", "kernel", "-q"]
    result = runner.invoke(app, [*args, "--no-baselines", "--limit", "1"])
    assert result.exit_code == 0, result.output
    assert "(the model column is --method kernel)" in result.output
    assert json.loads(out.read_text())["method"] == "kernel"


def test_table_and_json_side_by_side(synthetic, tmp_path):
    data, model = synthetic
    out = tmp_path / "results.json"
    result = runner.invoke(
        app, ["evaluate", "--model", str(model), "--data", str(data), "--out", str(out), "--precision", "float32", "-q"]
    )
    assert result.exit_code == 0, result.output
    assert "model vs blurry" in result.output and "richardson-lucy" in result.output
    report = json.loads(out.read_text())
    assert report["methods"] == ["model", "blurry", "richardson-lucy", "wiener"]
    assert report["split"] == "val" and report["mean"]["images"] == 2 == len(report["images"])
    assert report["precision"] == "float32" and report["ensemble"] == 1 and report["method"] == "network"
    assert report["estimates"] == ESTIMATES
    for image in report["images"]:
        assert image["kernel"] is True
        assert set(image["psnr"]) == set(image["ssim"]) == set(report["methods"])
        assert image["width"] == 160 and image["height"] == 120
    psnr_blurry = [image["psnr"]["blurry"] for image in report["images"]]
    assert report["mean"]["psnr"]["blurry"] == pytest.approx(np.mean(psnr_blurry))


def test_blurry_scores_match_scikit_image(synthetic):
    """The blurry column is a plain full-image comparison: it must equal scikit-image's reference figures."""
    data, model = synthetic
    from deblur.evaluation.evaluate import evaluate, evaluation_pairs
    from deblur.inference import load_deblurrer

    pairs = evaluation_pairs(data)
    report = evaluate(
        load_deblurrer(model, precision="float32"),
        pairs,
        model_name="m",
        data_name="d",
        split="val",
        baselines=False,
        progress=False,
    )
    for pair, image in zip(pairs, report.images, strict=True):
        blurry = np.asarray(Image.open(pair.blurry), dtype=np.float64) / 255
        sharp = np.asarray(Image.open(pair.sharp), dtype=np.float64) / 255
        assert image.psnr["blurry"] == pytest.approx(peak_signal_noise_ratio(sharp, blurry, data_range=1), abs=1e-3)
        reference = structural_similarity(
            sharp, blurry, data_range=1, channel_axis=-1, gaussian_weights=True, sigma=1.5, use_sample_covariance=False
        )
        assert image.ssim["blurry"] == pytest.approx(reference, abs=1e-3)
    assert list(report.images[0].psnr) == ["model", "blurry"]


def test_without_kernels_the_baseline_is_unsharp_masking(synthetic, tmp_path):
    _, model = synthetic
    data = make_flat_dataset(tmp_path / "flat", count=10, size=(40, 48))
    out = tmp_path / "r.json"
    result = runner.invoke(
        app,
        [
            "evaluate",
            "--model",
            str(model),
            "--data",
            str(data),
            "--out",
            str(out),
            "--split",
            "all",
            "--limit",
            "3",
            "--ensemble",
            "2",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "averaged over 2 mirrored/turned copies" in result.output
    report = json.loads(out.read_text())
    assert report["methods"] == ["model", "blurry", "unsharp-mask"] and len(report["images"]) == 3
    assert report["ensemble"] == 2


def test_existing_results_are_kept(synthetic, tmp_path):
    data, model = synthetic
    out = tmp_path / "results.json"
    out.write_text("mine")
    args = ["evaluate", "--model", str(model), "--data", str(data), "--out", str(out)]
    result = runner.invoke(app, args)
    assert result.exit_code == 1 and "--overwrite" in result.output
    assert out.read_text() == "mine"
    # nor replaced with --overwrite where it holds no results (a photo, the model): it had been, by the scores
    result = runner.invoke(app, [*args, "--overwrite"])
    assert result.exit_code == 1 and f"{out} exists and is not a results file (JSON): not replacing it" in result.output
    assert out.read_text() == "mine"
    out.unlink()
    assert runner.invoke(app, [*args, "-q"]).exit_code == 0
    written = out.stat().st_mtime_ns
    again = runner.invoke(app, args)  # had said only that the file exists
    mean = json.loads(out.read_text())["mean"]["psnr"]
    assert again.exit_code == 1 and again.output.strip() == (
        f"error: {out} holds the results of a finished evaluation (2 pair(s), mean PSNR {mean['model']:.2f} dB "
        f"against the blurry photos' {mean['blurry']:.2f}): read them there, or give --overwrite to evaluate again, "
        "replacing them (--out, --overwrite)"
    )
    assert out.stat().st_mtime_ns == written
    assert runner.invoke(app, [*args, "-q", "--overwrite"]).exit_code == 0  # results are replaced
    assert out.stat().st_mtime_ns != written and json.loads(out.read_text())["mean"]["images"] == 2


def test_options_that_would_go_unused_are_refused_by_name(synthetic, tmp_path):
    data, model = synthetic
    args = ["evaluate", "--model", str(model), "--data", str(data), "-q"]
    result = runner.invoke(app, [*args, "--overwrite"])  # no --out: nothing to replace
    assert result.exit_code == 1
    assert result.output.strip() == (
        "error: overwrite replaces a results file, and none is named: give the file too (--overwrite, --out)"
    )
    result = runner.invoke(app, [*args, "--method", "network", "--estimates", "3"])
    assert result.exit_code == 1
    assert "the network estimates no camera shake" in result.output and "(--estimates, --method)" in result.output


def test_bad_data_is_named_and_nothing_written(synthetic, tmp_path):
    _, model = synthetic
    data = make_flat_dataset(tmp_path / "flat", count=3)
    (data / "sharp" / "001.png").unlink()
    out = tmp_path / "results.json"
    result = runner.invoke(app, ["evaluate", "--model", str(model), "--data", str(data), "--out", str(out)])
    assert result.exit_code == 1 and "001.png: no sharp partner" in result.output
    assert not out.exists()


def test_not_a_model(synthetic, tmp_path):
    data, _ = synthetic
    (tmp_path / "model.keras").write_text("nope")
    result = runner.invoke(app, ["evaluate", "--model", str(tmp_path / "model.keras"), "--data", str(data)])
    assert result.exit_code == 1 and "model.keras" in result.output


def test_a_truncated_image_is_named(synthetic, tmp_path):
    """A truncated JPEG passes the header check; decoding it during the evaluation must still name it."""
    _, model = synthetic
    data = make_flat_dataset(tmp_path / "flat", count=1, size=(40, 48))
    image = np.random.default_rng(0).integers(0, 256, (40, 48, 3), dtype=np.uint8)
    for side in ("blur", "sharp"):
        Image.fromarray(image).save(data / side / "001.jpg", quality=95)
    path = data / "blur" / "001.jpg"
    path.write_bytes(path.read_bytes()[:-400])
    out = tmp_path / "results.json"
    result = runner.invoke(
        app, ["evaluate", "--model", str(model), "--data", str(data), "--out", str(out), "--split", "all", "-q"]
    )
    assert result.exit_code == 1 and "001.jpg: not a readable image" in result.output, result.output
    assert not out.exists()


def test_a_flat_folder_is_evaluated_whole_by_default_and_the_output_says_so(tmp_path):
    from helpers import make_flat_dataset, save_model

    data = make_flat_dataset(tmp_path / "flat", count=11)
    model = save_model(tmp_path / "run")
    args = ["evaluate", "--model", str(model), "--data", str(data), "--no-baselines", "--precision", "float32"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "11 all pair(s)" in result.output and "no split of its own" in result.output
    result = runner.invoke(app, [*args, "--split", "val"])
    assert result.exit_code == 0, result.output
    assert "1 val pair(s)" in result.output and "no split of its own" not in result.output


def test_the_data_folder_is_an_argument_and_align_scores_at_the_best_shift(synthetic, tmp_path):
    data, model = synthetic
    out = tmp_path / "aligned.json"
    args = ["evaluate", str(data), "--model", str(model), "--method", "network", "--no-baselines", "--align"]
    result = runner.invoke(app, [*args, "--out", str(out), "-q"])
    assert result.exit_code == 0, result.output
    assert (
        "at each one's best shift within 5 px" in result.output
        and "model vs blurry at the best shifts" in result.output
    )
    report = json.loads(out.read_text())
    image = report["images"][0]
    assert set(image["aligned_psnr"]) == {"model", "blurry"} and len(image["shift"]["model"]) == 2
    # the best shift can only do better than none, on the same window or a slightly smaller one
    assert report["mean"]["aligned_psnr"]["blurry"] >= report["mean"]["psnr"]["blurry"] - 0.5
    twice = runner.invoke(app, ["evaluate", str(data), "--data", str(data), "--model", str(model)])
    assert twice.exit_code != 0 and "give the dataset folder once" in twice.output
    none = runner.invoke(app, ["evaluate", "--model", str(model)])  # had said 'give the dataset folder once' too
    assert none.exit_code == 2 and "DATA: give the folder of pairs to score" in none.output


def test_images_too_small_to_score_are_named_before_any_work(tmp_path):
    from deblur.data.pairs import DatasetError
    from deblur.evaluation.evaluate import evaluation_pairs

    data = make_flat_dataset(tmp_path / "flat", count=2, size=(40, 60))
    write = Image.fromarray(np.zeros((8, 8, 3), np.uint8))
    write.save(data / "blur" / "002.png")
    write.save(data / "sharp" / "002.png")
    with pytest.raises(DatasetError, match=r"002\.png: 8x8 is smaller than the 11x11 that SSIM scores"):
        evaluation_pairs(data)
    (data / "blur" / "002.png").unlink()
    (data / "sharp" / "002.png").unlink()
    assert len(evaluation_pairs(data)) == 2
    with pytest.raises(DatasetError, match=r"60x40 is smaller than the 52x52 that --align scores"):
        evaluation_pairs(data, align=True)
    from deblur.errors import SettingError

    with pytest.raises(SettingError, match="align must be True or False; got align='no'"):
        evaluation_pairs(data, align="no")  # had held the pairs to --align's sizes: a string is true


def test_a_folder_of_one_pair_is_scored_once(tmp_path):
    from deblur.evaluation.evaluate import evaluation_pairs

    data = make_flat_dataset(tmp_path / "flat", count=1)
    assert [pair.name for pair in evaluation_pairs(data)] == ["000.png"]


@pytest.mark.parametrize("limit", [0, -1, "3"])  # "3" had been a TypeError
def test_a_limit_below_one_is_named_not_read_as_every_pair_or_all_but_the_last(tmp_path, limit):
    from deblur.errors import SettingError
    from deblur.evaluation.evaluate import evaluation_pairs

    data = make_flat_dataset(tmp_path / "flat", count=3)
    with pytest.raises(SettingError, match=f"limit must be a whole number of at least 1 .*: {limit!r}") as refused:
        evaluation_pairs(data, limit=limit)
    assert refused.value.settings == ("limit",)


def test_no_pairs_to_evaluate_is_refused_not_an_empty_report():
    from deblur.data.pairs import DatasetError
    from deblur.evaluation.evaluate import evaluate
    from deblur.inference import Deblurrer

    with pytest.raises(DatasetError, match="no pairs to evaluate"):
        evaluate(Deblurrer(None, method="kernel"), [], model_name="m", data_name="d", split="all")


def test_a_model_path_for_the_deblurrer_is_named_with_the_way_to_open_one(tmp_path):
    from deblur.errors import SettingError
    from deblur.evaluation.evaluate import evaluate, evaluation_pairs

    pairs = evaluation_pairs(make_flat_dataset(tmp_path / "flat", count=1))
    with pytest.raises(SettingError, match="deblurrer must be a Deblurrer, not str: deblur.load_deblurrer"):
        evaluate("runs/mine/model.keras", pairs, model_name="m", data_name="d", split="all")


def test_a_folder_or_anything_but_pairs_for_the_pairs_is_named(tmp_path):
    from deblur.data.pairs import DatasetError
    from deblur.errors import SettingError
    from deblur.evaluation.evaluate import evaluate, evaluation_pairs
    from deblur.inference import Deblurrer

    root = make_flat_dataset(tmp_path / "flat", count=1)
    pair = evaluation_pairs(root)[0]
    kernel_way = Deblurrer(None, method="kernel")
    for pairs, said in [
        (str(root), f"pairs is {str(root)!r}: give the pairs, as deblur.evaluation_pairs(root) lists"),  # letters
        (root, "pairs is PosixPath("),  # had been "'PosixPath' object is not iterable"
        ([(pair.blurry, pair.sharp)], "not a Pair: deblur.evaluation_pairs(root) lists a dataset's"),
    ]:
        with pytest.raises(SettingError, match=re.escape(said)):
            evaluate(kernel_way, pairs, model_name="m", data_name="d", split="all", progress=False)
    with pytest.raises(DatasetError, match="no pairs to evaluate"):  # a generator of none had passed as some
        evaluate(kernel_way, (p for p in []), model_name="m", data_name="d", split="all", progress=False)
    report = evaluate(kernel_way, iter([pair]), model_name="m", data_name="d", split="all", progress=False)
    assert [image.name for image in report.images] == [pair.name]


def test_a_results_file_that_is_no_path_is_named():
    from deblur.errors import SettingError
    from deblur.evaluation.evaluate import evaluate_model

    with pytest.raises(SettingError, match="the results file is int: give its path, as a str or Path"):
        evaluate_model(None, "data", out=5)  # had been Path's TypeError


def test_a_folder_as_the_results_file_is_refused(synthetic, tmp_path):
    data, model = synthetic
    args = ["evaluate", str(data), "--model", str(model), "--out", str(tmp_path), "--overwrite", "-q"]
    result = runner.invoke(app, args)
    assert result.exit_code == 1 and f"{tmp_path} is a folder: give a file for the results" in result.output


def stopped_then_run_again(monkeypatch, first, second):
    import deblur.evaluation.evaluate as evaluation

    read, real = [], evaluation._read

    def reading(path):
        if len(read) == 5:
            raise KeyboardInterrupt
        read.append(path)
        return real(path)

    monkeypatch.setattr(evaluation, "_read", reading)
    with pytest.raises(Interrupted, match=r"stopped: the scores of 2 of 5 pair\(s\) are kept in .*parts.jsonl; the"):
        first()
    read.clear()
    monkeypatch.setattr(evaluation, "_read", lambda path: read.append(path) or real(path))
    said = []
    report = second(said.append)
    return report, said, len(read) // 2


EVALUATION = {"split": "all", "baselines": False, "precision": "float32", "progress": False}


def test_a_stopped_evaluation_goes_on_from_the_pairs_it_scored(synthetic, tmp_path, monkeypatch):
    from deblur.evaluation.evaluate import evaluate_model

    data, model = synthetic
    whole = evaluate_model(model, data, out=tmp_path / "whole.json", log=print, **EVALUATION).to_json()
    out, parts = tmp_path / "results.json", tmp_path / ".results.json.parts.jsonl"

    def first():
        evaluate_model(model, data, out=out, log=print, **EVALUATION)

    def second(log):
        assert not out.exists()
        assert len(parts.read_text().splitlines()) == 3  # what the scores depend on, and two pairs
        return evaluate_model(model, data, out=out, log=log, **EVALUATION).to_json()

    resumed, said, scored = stopped_then_run_again(monkeypatch, first, second)
    assert any("2 of 5 pair(s) were scored before" in line for line in said)
    assert scored == 3  # only the pairs left were read
    for image in (*resumed["images"], *whole["images"]):
        image.pop("seconds")
    assert resumed["images"] == whole["images"] and resumed["mean"] == whole["mean"]
    assert json.loads(out.read_text())["mean"] == whole["mean"]
    assert not parts.exists()


def test_other_settings_start_over_and_a_changed_pair_is_scored_again(synthetic, tmp_path, monkeypatch):
    import os

    from deblur.evaluation.evaluate import evaluate_model, evaluation_pairs

    data, model = synthetic
    out = tmp_path / "results.json"

    def first():
        evaluate_model(model, data, out=out, log=print, **EVALUATION)

    def with_baselines(log):
        return evaluate_model(model, data, out=out, log=log, **{**EVALUATION, "baselines": True})

    _, said, scored = stopped_then_run_again(monkeypatch, first, with_baselines)
    assert scored == 5 and not any("scored before" in line for line in said)

    out.unlink()
    touched = evaluation_pairs(data, "all")[0].blurry
    stat = touched.stat()

    def after_a_change(log):
        os.utime(touched, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
        return evaluate_model(model, data, out=out, log=log, **EVALUATION)

    _, said, scored = stopped_then_run_again(monkeypatch, first, after_a_change)
    assert any("1 of 5 pair(s) were scored before" in line for line in said)
    assert scored == 4


def test_a_second_evaluation_to_the_same_out_is_refused_while_the_first_goes_on(synthetic, tmp_path):
    from deblur.evaluation.evaluate import evaluate_model
    from deblur.evaluation.resume import parts_file
    from deblur.files import one_run_at_a_time

    data, model = synthetic
    out = tmp_path / "results.json"
    with (
        one_run_at_a_time(parts_file(out), out, "out"),
        pytest.raises(OutputBusyError, match=r"another deblur run is writing .*results\.json \(its work in"),
    ):
        evaluate_model(model, data, out=out, log=print, **EVALUATION)
    assert list(tmp_path.iterdir()) == []


def test_a_stopped_evaluation_without_out_says_how_to_keep_its_scores(synthetic, monkeypatch):
    import deblur.evaluation.evaluate as evaluation

    data, model = synthetic
    monkeypatch.setattr(evaluation, "_read", lambda path: (_ for _ in ()).throw(KeyboardInterrupt))
    result = runner.invoke(app, ["evaluate", str(data), "--model", str(model), "--split", "all", "-q"])
    assert result.exit_code == 130
    assert "stopped: nothing was kept; with --out FILE, a stopped evaluation goes on" in result.output


def test_a_full_disk_while_a_score_is_kept_names_the_results_file(tmp_path, monkeypatch):
    import errno
    import os

    import deblur.evaluation.resume as resume
    from deblur.data.pairs import Pair
    from deblur.evaluation.report import ImageResult

    def no_room(fd):  # as a write of the file's own says it: with no file name
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    pair = make_flat_dataset(tmp_path / "pairs", count=1) / "blur" / "000.png"
    scored = resume.ScoredSoFar(tmp_path / "results.json", {"data": "pairs"})
    monkeypatch.setattr(resume.os, "fsync", no_room)
    result = ImageResult("000.png", 16, 16, psnr={}, ssim={}, kernel=False, seconds={})
    with pytest.raises(OSError) as caught:
        scored.add(Pair(pair, pair.parent.parent / "sharp" / "000.png", "000.png"), result)
    assert (caught.value.errno, caught.value.filename) == (errno.ENOSPC, str(tmp_path / "results.json"))
