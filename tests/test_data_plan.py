"""What a training run reads and for how long, and its epoch line (`deblur.training.data_plan`)."""

import re

import pytest
from helpers import make_flat_dataset, smoke_config
from typer.testing import CliRunner

from deblur.cli import app
from deblur.data.pairs import DatasetError
from deblur.errors import SettingError
from deblur.training.data_plan import epoch_line, plan_data


def test_the_plan_sizes_the_run_for_the_replicas(tmp_path):
    data = make_flat_dataset(tmp_path / "data", count=10)
    checked, messages = [], []
    config = smoke_config(f"data.root={data}", "train.steps_per_epoch=null", "train.epochs=3")
    plan = plan_data(config, 2, progress=False, log=messages.append, on_checked=lambda: checked.append(True))
    assert checked == [True] and (len(plan.train_pairs), len(plan.val_pairs)) == (9, 1)
    assert plan.global_batch == 4 and plan.steps_per_epoch == 2 and plan.total_steps == 6
    assert "global batch 4 = 2 per replica x 2 replica(s)" in messages[-1]


def test_an_epoch_without_a_timed_step_says_so_rather_than_0_img_s():
    row = {"epoch": 1, "loss": 0.1, "val_psnr": 30.0, "val_psnr_blurry": 29.0, "val_ssim": 0.9, "val_ssim_blurry": 0.8}
    assert epoch_line({**row, "images_per_second": 12.34}).endswith(", 12.3 img/s")
    untimed = epoch_line({**row, "images_per_second": None})
    assert "0.0 img/s" not in untimed and "not timed" in untimed


def test_a_held_out_split_without_train_beside_it_is_not_trained_on(tmp_path):
    # GOPRO's test/ alone had been read as a flat folder: its held-out pairs trained on, and validated on again.
    make_flat_dataset(tmp_path / "data" / "test" / "GOPR0384_11_00", count=3)
    checked = []
    config = smoke_config(f"data.root={tmp_path / 'data'}")
    with pytest.raises(DatasetError, match="data holds test/ but no train/: in GOPRO's layout test/ is held out"):
        plan_data(config, 1, progress=False, log=print, on_checked=lambda: checked.append(True))
    assert not checked
    result = CliRunner().invoke(app, ["data", "check", str(tmp_path / "data"), "-q"])  # as deblur train would
    assert result.exit_code == 1 and "1 problem(s)" in result.output and "holds test/ but no train/" in result.output


@pytest.mark.parametrize("step", [0, 7])
def test_a_profile_step_the_run_never_reaches_is_refused_before_the_run_folder(tmp_path, step):
    # It was never traced, without a word; with steps_per_epoch unset the last step is known only from the pairs.
    data = make_flat_dataset(tmp_path / "data", count=10)
    checked = []
    sets = (f"data.root={data}", "train.steps_per_epoch=null", "train.epochs=3", f"train.profile_batch={step}")
    said = re.escape(f"train.profile_batch {step} is no step of this run (1 to 6: 3 epoch(s) of 2 steps)")
    with pytest.raises(SettingError, match=said):
        plan_data(smoke_config(*sets), 2, progress=False, log=print, on_checked=lambda: checked.append(True))
    assert not checked
    last = smoke_config(*sets[:-1], "train.profile_batch=6")
    plan = plan_data(last, 2, progress=False, log=print, on_checked=lambda: checked.append(True))
    assert checked == [True] and plan.total_steps == 6


def test_a_held_out_pair_training_has_too_is_warned_of(tmp_path):
    import shutil

    data = make_flat_dataset(tmp_path / "data", count=10)
    for kind in ("blur", "sharp"):  # the held-out 10th pair, a copy of the first
        shutil.copy(data / kind / "000.png", data / kind / "009.png")
    messages = []
    plan_data(smoke_config(f"data.root={data}"), 1, progress=False, log=messages.append, on_checked=lambda: None)
    assert messages[-1] == (
        "warning: 1 held-out pair(s) have a training pair's sharp photo, so validation scores what training saw: "
        f"{data / 'sharp' / '009.png'} is {data / 'sharp' / '000.png'}; keep each photo's pairs on one side of the "
        "split (deblur data synth --val-fraction holds photos out in test/)"
    )


def test_a_warm_up_as_long_as_the_run_is_said_to_be_shortened(tmp_path):
    # `build_optimizer` shortens it to the run's steps less one without a word: the peak rate came only at the end.
    data = make_flat_dataset(tmp_path / "data", count=10)
    sets = (f"data.root={data}", "train.steps_per_epoch=null", "train.epochs=3")
    for warmup, said in ((5, False), (6, True), (50, True)):
        messages = []
        config = smoke_config(*sets, f"train.warmup_steps={warmup}")
        plan_data(config, 2, progress=False, log=messages.append, on_checked=lambda: None)
        shortened = f"train.warmup_steps {warmup} is as long as this run (6 steps): the warm-up is shortened to 5"
        assert any(message.startswith(shortened) for message in messages) == said, messages
