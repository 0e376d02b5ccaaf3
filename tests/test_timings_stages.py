import pytest

from deblur.timings.stages import STAGE_NAMES, plan_stages, select_stages
from deblur.training.precision import PrecisionChoice

BF16 = PrecisionChoice("mixed_bfloat16", "no GPU; the CPU has avx512_bf16")


def test_all_stages_in_order_with_reasons_for_the_skipped():
    stages = plan_stages(BF16, [])
    assert [s.name for s in stages] == list(STAGE_NAMES)
    skipped = {s.name: s.skipped for s in stages if s.skipped}
    assert skipped == {"multi-gpu": "0 GPUs visible: needs 2 or more"}
    assert plan_stages(BF16, ["/gpu:0"])[4].skipped == "1 GPU visible: needs 2 or more"


def test_each_stage_adds_one_optimization():
    stages = {s.name: s.setup for s in plan_stages(BF16, ["/gpu:0", "/gpu:1"], steps_per_call=4)}
    assert stages["keras-sequence"].loader == "keras-sequence" and stages["keras-sequence"].policy == "float32"
    assert stages["tf.data"].loader == "tf.data"
    assert stages["tf.data-optimized"].loader == "tf.data-optimized" and stages["tf.data-optimized"].policy == "float32"
    assert stages["mixed-precision"].policy == "mixed_bfloat16" and stages["mixed-precision"].devices == ()
    assert stages["multi-gpu"].devices == ("/gpu:0", "/gpu:1") and stages["multi-gpu"].policy == "mixed_bfloat16"
    assert stages["xla"].jit_compile and stages["xla"].devices == ("/gpu:0", "/gpu:1")
    assert stages["steps-per-call"].steps_per_call == 4 and stages["steps-per-call"].jit_compile


def test_later_stages_build_on_the_last_one_that_runs():
    no_mixed = PrecisionChoice("float32", "mixed precision unavailable: no GPU, and the CPU has neither ...")
    stages = {s.name: s for s in plan_stages(no_mixed, [])}
    assert stages["mixed-precision"].skipped == no_mixed.reason
    assert stages["xla"].setup.policy == "float32" and not stages["xla"].skipped


def test_multi_devices_replace_the_gpus():
    stages = {s.name: s for s in plan_stages(BF16, [], multi_devices=["/cpu:0", "/cpu:1"])}
    assert stages["multi-gpu"].skipped is None and stages["multi-gpu"].setup.devices == ("/cpu:0", "/cpu:1")


def test_select_keeps_canonical_order_and_refuses_unknown_names():
    stages = plan_stages(BF16, [])
    assert [s.name for s in select_stages(stages, ["xla", "tf.data"])] == ["tf.data", "xla"]
    assert select_stages(stages, ["xla"])[0].setup.policy == "mixed_bfloat16"  # keeps what came before
    with pytest.raises(ValueError, match="unknown stage.*tf-data.*choose from keras-sequence"):
        select_stages(stages, ["tf-data"])
    with pytest.raises(ValueError, match="list of stages is empty.*choose from keras-sequence"):
        select_stages(stages, [])  # `--stages ""`: not a reason to time every stage
    assert select_stages(stages, None) == stages
