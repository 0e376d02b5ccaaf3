import inspect
import re

import pytest

from deblur.config import SHIPPED, Config, ConfigError, config_from_dict, config_to_dict, load_config
from deblur.model import build_generator


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_configs_load(name):
    assert isinstance(load_config(name), Config)


def test_default_is_demo():
    assert load_config() == load_config("demo")


def test_model_section_is_build_generator_signature():
    parameters = inspect.signature(build_generator).parameters
    keyword = [n for n, p in parameters.items() if p.kind is p.POSITIONAL_OR_KEYWORD]
    assert keyword == list(config_to_dict(Config())["model"])


def test_unknown_key_names_file_and_key(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("train:\n  lr: 0.1\n")
    with pytest.raises(ConfigError, match=r"bad\.yaml.*train\.lr"):
        load_config(path)


def test_unknown_section(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("optimizer:\n  lr: 0.1\n")
    with pytest.raises(ConfigError, match="optimizer"):
        load_config(path)


@pytest.mark.parametrize(
    "override, message",
    [
        ("train.epochs=two", "train.epochs must be a whole number"),
        ("train.epochs=0", "train.epochs must be > 0"),
        ("model.norm=layer", "model.norm must be one of"),
        ("data.synth.max_length=1", "max_length"),
        ("train.nope=1", "train.nope"),
        ("train.epochs", "section.key=value"),
        ("model.width=true", "model.width must be a whole number"),
        ("train.devices=[/cpu:0", r"override 'train.devices=\[/cpu:0': its value is not valid YAML \(line 1, column"),
        # NaN passed every "> 0" check and trained a model of NaN weights
        ("train.learning_rate=nan", "train.learning_rate must be a finite number, got 'nan'"),
        ("data.synth.noise=.inf", "data.synth.noise must be a finite number, got inf"),
        # these had ended in TensorFlow's MirrorPad and SSIM tracebacks at the first step
        ("data.patch_size=7", r"data.patch_size must be at least 8 \(the smallest the model trains on\); got 7"),
        ("data.val_crop=10", r"data.val_crop must be at least 11 \(SSIM's window, which validation scores\)"),
        ("train=3", r"override 'train=3': train is a section: set its keys \(train.<key>=value\)"),
        ("train.epochs.x=3", r"override 'train.epochs.x=3': 'epochs' is not a section"),
        # `--set data.root=$DATA` with DATA unset had trained on the demo data
        ("data.root=", r"override 'data.root=' has no value after '=': give one \(null, for none, says so\)"),
        ("data.root= ", "has no value after '='"),
        # Keras' and NumPy's generators had refused these with a traceback
        ("train.seed=-1", r"train.seed must be between 0 and 4294967295; got -1"),
        ("data.synth.seed=4294967296", r"data.synth.seed must be between 0 and 4294967295; got 4294967296"),
        ("data.synth.holdout_seed=-2", r"data.synth.holdout_seed must be between 0 and 4294967295; got -2"),
    ],
)
def test_bad_overrides(override, message):
    with pytest.raises(ConfigError, match=message):
        load_config("smoke", [override])


def test_overrides_apply_with_yaml_types():
    config = load_config("smoke", ["train.learning_rate=3e-4", "data.val_crop=null", "train.devices=[/cpu:0]"])
    assert config.train.learning_rate == pytest.approx(3e-4)
    assert config.data.val_crop is None
    assert config.train.devices == ["/cpu:0"]


def test_one_override_may_be_given_as_a_string():
    assert load_config("smoke", "train.epochs=2").train.epochs == 2


@pytest.mark.parametrize("overrides", [3, [3], {"train.epochs": 2}])
def test_overrides_that_are_not_strings_are_named(overrides):
    # had been a TypeError ("not iterable") or an AttributeError ("'int' object has no attribute 'partition'")
    with pytest.raises(ConfigError, match="overrides must be strings such as 'train.epochs=3'; got "):
        load_config("smoke", overrides)


def test_int_accepted_for_float():
    assert load_config("smoke", ["train.learning_rate=1"]).train.learning_rate == 1.0


def test_round_trip():
    config = load_config("gopro")
    assert config_from_dict(config_to_dict(config)) == config


def test_missing_file_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="cannot read config file") as raised:
        load_config(tmp_path / "missing.yaml")
    assert raised.value.settings == ("config",)
    with pytest.raises(ConfigError, match=r"pretrianed: No such file or directory; nor is it a shipped config \(demo"):
        load_config("pretrianed")  # a shipped name, mistyped
    # `--config $CONFIG` with CONFIG unset: "." (a folder), or in deblur timings the default config without a word
    with pytest.raises(ConfigError, match=r"the config is an empty path: name a file or a shipped config \(demo,"):
        load_config("")


def test_a_mapping_for_the_config_is_named_with_the_way_to_build_one():
    with pytest.raises(ConfigError, match=r"the config is dict, .*config_from_dict\(mapping\) builds one"):
        load_config({"train": {"epochs": 1}})


def test_shipped_configs_load_where_the_checkout_is_imported_without_its_configs_package(monkeypatch):
    # Python started in the repository after `pip install .` imports the checkout's deblur/, where setuptools has
    # not mapped configs/ to deblur.configs: load_config had ended on "No module named 'deblur.configs'"
    import deblur.config

    real = deblur.config.resources.files

    def files(package):
        if package == "deblur.configs":
            raise ModuleNotFoundError("No module named 'deblur.configs'")
        return real(package)

    monkeypatch.setattr(deblur.config.resources, "files", files)
    assert deblur.config.shipped_config_path("smoke").is_file()
    assert isinstance(load_config("smoke"), Config) and load_config() == load_config("demo")


def test_the_kernel_aware_recipe_builds_the_kernel_aware_network_from_the_shipped_one():
    # a recipe whose model section forgets the key trains a plain network on its pairs, silently but for a line
    config = load_config("kernel-aware")
    assert config.model.kernel_aware and config.data.synth.deconvolve and config.train.init == "pretrained"
    shipped = load_config("pretrained").model
    assert (config.model.width, config.model.blocks, config.model.norm) == (shipped.width, shipped.blocks, shipped.norm)


def test_a_file_that_is_not_yaml_is_named_with_its_line_on_one_line(tmp_path):
    (tmp_path / "broken.yaml").write_text("model:\n  width: 8\n    blocks: 2\n")
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path / "broken.yaml")
    said = str(caught.value)
    assert said.startswith(f"{tmp_path / 'broken.yaml'} is not valid YAML: line 3, column 11: ") and "\n" not in said
    assert "unicode string" not in said  # PyYAML's own name for what it read


def test_a_config_in_utf_16_is_read_and_one_in_another_encoding_is_named(tmp_path):
    (tmp_path / "windows.yaml").write_text("train:\n  epochs: 2\n", encoding="utf-16")  # as PowerShell 5 writes
    assert load_config(tmp_path / "windows.yaml").train.epochs == 2
    (tmp_path / "latin.yaml").write_bytes("train:\n  epochs: 2 # café\n".encode("latin-1"))
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path / "latin.yaml")
    assert str(caught.value) == (
        f"{tmp_path / 'latin.yaml'} is not valid YAML: at position 24: not UTF-8 text (invalid continuation byte); "
        "save it as UTF-8"
    )
    (tmp_path / "bell.yaml").write_text("train:\n  epochs: 2\a\n")
    with pytest.raises(ConfigError, match=r"bell.yaml is not valid YAML: at position 18: character #x0007 is not "):
        load_config(tmp_path / "bell.yaml")


def test_a_key_given_twice_is_refused_with_its_lines(tmp_path):
    # PyYAML keeps the last: the second train section had silently dropped the first's epochs
    (tmp_path / "twice.yaml").write_text(
        "train:\n  epochs: 5\ndata:\n  batch_size: 2\ntrain:\n  learning_rate: 0.001\n"
    )
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path / "twice.yaml")
    assert str(caught.value) == (
        f"{tmp_path / 'twice.yaml'} is not valid YAML: line 5, column 1: train is given twice (first on line 1): the "
        "first would be ignored"
    )
    (tmp_path / "inner.yaml").write_text("train:\n  epochs: 5\n  epochs: 6\n")
    with pytest.raises(ConfigError, match=r"line 3, column 3: epochs is given twice \(first on line 2\)"):
        load_config(tmp_path / "inner.yaml")


def test_a_bad_value_is_blamed_on_whoever_set_it(tmp_path):
    with pytest.raises(ConfigError, match=r"^override 'train.epochs=two': train.epochs must be a whole number"):
        load_config("smoke", ["train.seed=3", "train.epochs=two"])  # not on configs/smoke.yaml
    (tmp_path / "mine.yaml").write_text("model:\n  widht: 8\n")
    with pytest.raises(ConfigError, match=rf"^{re.escape(str(tmp_path / 'mine.yaml'))}: unknown key\(s\) model.widht"):
        load_config(tmp_path / "mine.yaml", ["model.width=8"])  # named among the known keys: still the file's


@pytest.mark.parametrize("text", [b"", b"# my settings, to come\n", b"\xef\xbb\xbf", b"---\n"])
def test_a_config_with_no_settings_is_refused_not_trained_on_defaults(tmp_path, text):
    path = tmp_path / "mine.yaml"
    path.write_bytes(text)
    with pytest.raises(ConfigError, match=r"mine\.yaml holds no settings \(it is empty, or only comments\)"):
        load_config(path)
    (tmp_path / "braces.yaml").write_text("{}\n")  # an explicit empty mapping says "the defaults" on purpose
    assert load_config(tmp_path / "braces.yaml") == Config()


def test_a_path_from_the_home_folder_is_read_as_a_shell_reads_it(tmp_path, monkeypatch):
    # `root: ~/data/gopro` in a config had been a folder named ~, not there
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "mine.yaml").write_text("data:\n  root: ~/data/gopro\n  cache: ~/cache/gopro\n")
    config = load_config(tmp_path / "mine.yaml", ["train.init=~/runs/a/model.keras", "train.vgg_weights=~/vgg.h5"])
    assert config.data.root == str(tmp_path / "data" / "gopro") and config.data.cache == str(tmp_path / "cache/gopro")
    assert config.train.init == str(tmp_path / "runs/a/model.keras")
    assert config.train.vgg_weights == str(tmp_path / "vgg.h5")
    assert load_config("demo", ["train.init=latest"]).train.init == "latest"


@pytest.mark.parametrize(
    "section, given, said",
    [
        # a string is true: kernel_aware="no" had built a kernel-aware model, augment="no" augmented
        ("ModelConfig", dict(kernel_aware="no"), "model.kernel_aware must be true or false, got 'no'"),
        ("DataConfig", dict(augment="no"), "data.augment must be true or false, got 'no'"),
        ("SynthConfig", dict(deconvolve="no"), "data.synth.deconvolve must be true or false, got 'no'"),
        # taken as they were, to fail far away or not at all
        ("DataConfig", dict(batch_size=2.5), "data.batch_size must be a whole number, got 2.5"),
        ("SynthConfig", dict(pairs_per_photo=2.5), "data.synth.pairs_per_photo must be a whole number, got 2.5"),
        ("TrainConfig", dict(seed=1.5), "train.seed must be a whole number, got 1.5"),
        ("TrainConfig", dict(learning_rate=[1e-4]), r"train.learning_rate must be a number, got \[0.0001\]"),
        ("DataConfig", dict(patch_size="256"), "data.patch_size must be a whole number, got '256'"),  # a TypeError
        ("Config", dict(model=5), "model must be a mapping"),
    ],
)
def test_sections_built_in_python_are_checked_as_a_files_keys_are(section, given, said):
    import deblur.config

    with pytest.raises(ConfigError, match=said):
        getattr(deblur.config, section)(**given)


def test_sections_built_in_python_are_converted_as_a_files_keys_are():
    import numpy as np

    from deblur.config import Config, DataConfig, ModelConfig, SynthConfig, config_to_yaml

    # NumPy's numbers as Python's (a saved config holds them), a section as a mapping, a tuple of devices as a list
    config = Config(
        ModelConfig(width=np.int64(8), kernel_aware=np.bool_(False)),
        DataConfig(batch_size=np.int64(2), synth={"noise": 0.02}),
        {"devices": ("/cpu:0",), "learning_rate": np.float32(0.5)},
    )
    assert (config.model.width, config.data.batch_size, config.train.devices) == (8, 2, ["/cpu:0"])
    assert type(config.model.width) is int and type(config.model.kernel_aware) is bool
    assert config.data.synth == SynthConfig(noise=0.02) and config.train.learning_rate == 0.5
    assert "width: 8" in config_to_yaml(config)
