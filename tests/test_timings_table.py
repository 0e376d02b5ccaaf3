from deblur.timings.report import LoaderResult, StageResult, TimingsReport
from deblur.timings.table import bottleneck, stage_table


def _report(images_per_second: float, plain: float) -> TimingsReport:
    stage = StageResult("mixed-precision", "", images_per_second, 100.0, 120.0, 0.01, 2.0, None, {}, timed_steps=5)
    skipped = StageResult("multi-gpu", "", None, None, None, None, None, "1 GPU visible: needs 2 or more", {})
    loaders = [LoaderResult("tf.data", plain, 30, 1), LoaderResult("tf.data-optimized", plain * 10, 30, 20)]
    return TimingsReport({}, "quick", {"batch_size": 4}, [stage, skipped], loaders, "1000 steps")


def test_names_the_bottleneck():
    assert bottleneck(_report(3.5, 180.0)).startswith("here the compute is the bottleneck")
    gpu_like = bottleneck(_report(400.0, 180.0))
    assert gpu_like.startswith("here the input pipeline is the bottleneck") and "0.45x" in gpu_like


def test_table_rows_and_equivalent_time():
    table = stage_table(_report(4.0, 180.0))
    assert "1000 s" in table  # 1000 steps x 4 images at 4 img/s
    assert "skipped multi-gpu: 1 GPU visible: needs 2 or more" in table
