import pytest
from helpers import quiet_train, smoke_config

from deblur.model import build_generator
from deblur.training import memory
from deblur.training.memory import activation_bytes, batch_too_large


@pytest.fixture(scope="module")
def model():
    return build_generator(width=4, blocks=1)


def test_a_patchs_activations_grow_with_its_pixels_and_are_fewer_bytes_under_a_mixed_policy(model):
    small, large = activation_bytes(model, 32), activation_bytes(model, 64)
    assert large == pytest.approx(4 * small, rel=0.05)
    assert activation_bytes(model, 32, "bfloat16") < small


def test_jaxs_loop_keeps_more_of_a_patch_than_tensorflows_and_the_bound_says_so(model):
    for compute in ("float32", "bfloat16"):  # measured: 1.5 to 3.6 times as much
        jax, tensorflow = (activation_bytes(model, 32, compute, backend) for backend in ("jax", "tensorflow"))
        assert jax > 1.5 * tensorflow


def test_a_batch_beyond_the_memory_is_said_with_one_that_may_fit(model):
    per_patch = activation_bytes(model, 32)
    assert batch_too_large(model, 32, 10, memory=10 * per_patch, free=0) is None
    said = batch_too_large(model, 32, 1000, memory=100 * per_patch, free=0)
    assert said.startswith("a training step of 1000 patches of 32 px needs at least ")
    assert "at most about 80 patches a step may fit (data.batch_size is per replica)" in said
    assert "lower data.patch_size" in batch_too_large(model, 32, 2, memory=per_patch // 2, free=0)
    assert batch_too_large(model, 32, 1000, memory=0, free=0) is None  # not known: nothing said


def test_a_batch_beyond_what_other_programs_leave_free_is_said(model):
    per_patch = activation_bytes(model, 32)
    # a run beside other large programs had been killed with no word
    said = batch_too_large(model, 32, 100, memory=1000 * per_patch, free=50 * per_patch)
    assert said.startswith("a training step of 100 patches of 32 px needs at least ")
    assert "free now (of its " in said and "unless other programs let go" in said
    assert "at most about 40 patches a step may fit" in said
    assert batch_too_large(model, 32, 10, memory=1000 * per_patch, free=50 * per_patch) is None
    assert "free now: it" in batch_too_large(model, 32, 100, memory=0, free=50 * per_patch)  # no machine's size


def test_training_says_a_batch_its_cpu_memory_cannot_hold_before_the_first_step(tmp_path, monkeypatch):
    monkeypatch.setattr(memory, "physical_memory", lambda: 2**10)  # a kilobyte: no step fits
    messages = []
    quiet_train(smoke_config("train.epochs=1", "train.steps_per_epoch=1"), tmp_path / "run", messages)
    said = [line for line in messages if line.startswith("warning: a training step of")]
    assert len(said) == 1 and "this machine has 1 KiB: it will likely be killed for memory" in said[0]
    assert messages.index(said[0]) < next(i for i, line in enumerate(messages) if line.startswith("epoch"))
