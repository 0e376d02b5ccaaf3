import json

import pytest

from deblur.training.errors import StrategyError
from deblur.training.strategy import cluster_role, make_strategy


def test_default_strategy():
    info = make_strategy("auto")
    assert info.name == "default" and info.strategy.num_replicas_in_sync == 1 and info.is_chief


def test_mirrored_over_logical_cpus():
    info = make_strategy("mirrored")
    assert info.strategy.num_replicas_in_sync == 2
    assert "2 device(s)" in info.description


def test_mirrored_with_explicit_devices():
    assert make_strategy("mirrored", ["/cpu:0"]).strategy.num_replicas_in_sync == 1
    for other in ("auto", "default", "multi-worker"):  # each places its replicas itself: they went unused
        said = f"train.devices \\(/cpu:0\\) names the devices of .* the strategy is {other}: set --strategy mirrored"
        with pytest.raises(StrategyError, match=said):
            make_strategy(other, ["/cpu:0"])


def cluster(task_type, index, chief=False):
    spec = {"worker": ["127.0.0.1:1", "127.0.0.1:2"]}
    if chief:
        spec["chief"] = ["127.0.0.1:3"]
    return json.dumps({"cluster": spec, "task": {"type": task_type, "index": index}})


def test_cluster_roles():
    assert cluster_role(None).is_chief and cluster_role(None).workers == 1
    assert cluster_role(cluster("worker", 0)).is_chief
    role = cluster_role(cluster("worker", 1))
    assert not role.is_chief and role.task == "worker-1" and role.workers == 2
    assert not cluster_role(cluster("worker", 0, chief=True)).is_chief
    assert cluster_role(cluster("chief", 0, chief=True)).workers == 3


def test_bad_tf_config():
    with pytest.raises(StrategyError, match="TF_CONFIG is not valid JSON"):
        cluster_role("{nope")
