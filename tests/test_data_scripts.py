"""The thin scripts in data_scripts/, run as a user would, on fake trees."""

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
from helpers import noise_image, write_image

ROOT = Path(__file__).resolve().parents[1]


def run_script(name, *args):
    return subprocess.run(
        [sys.executable, str(ROOT / "data_scripts" / name), *map(str, args)], capture_output=True, text=True
    )


def fake_gopro(root, blur_folders=("blur", "blur_gamma"), sequences=None, frames=2, size=(24, 32)):
    rng = np.random.default_rng(0)
    sequences = sequences or {"train": ["GOPR0372_07_00", "GOPR0374_11_00"], "test": ["GOPR0384_11_00"]}
    for split, names in sequences.items():
        for seq in names:
            for i in range(frames):
                name = f"{i:06d}.png"
                image = noise_image(rng, *size)
                write_image(root / split / seq / "sharp" / name, image)
                for blur in blur_folders:
                    write_image(root / split / seq / blur / name, image // 2)
    return root


def test_make_synthetic_pairs_script(tmp_path):
    write_image(tmp_path / "photos" / "a.png", noise_image(np.random.default_rng(1), 64, 64))
    result = run_script(
        "make_synthetic_pairs.py", "--src", tmp_path / "photos", "--out", tmp_path / "pairs", "--pairs-per-photo", "2"
    )
    assert result.returncode == 0, result.stderr
    assert len(list((tmp_path / "pairs" / "train" / "a" / "blur").iterdir())) == 2


def test_make_synthetic_pairs_script_is_the_command():
    # The script runs `deblur data synth`: the same options and defaults, so the two cannot drift apart.
    script = run_script("make_synthetic_pairs.py", "--help")
    command = subprocess.run(
        [sys.executable, "-m", "deblur", "data", "synth", "--help"], capture_output=True, text=True
    )
    assert script.returncode == 0 and command.returncode == 0

    def options(text):
        return sorted(set(re.findall(r"--[a-z][a-z-]+", text)))

    assert options(script.stdout) == options(command.stdout) and "--max-rotation" in options(script.stdout)


def test_gopro_as_unpacked_is_ready(tmp_path):
    root = fake_gopro(tmp_path / "download" / "GOPRO_Large")  # a zip's extra level above it
    result = run_script("organize_gopro.py", tmp_path / "download", "--quiet")
    assert result.returncode == 0, result.stderr
    assert "4 train, 2 test pairs, no problems" in result.stdout
    assert "the published GOPRO_Large has 2103" in result.stdout
    assert f"deblur train --config gopro --data {root}" in result.stdout


def test_gopro_blur_gamma_is_arranged_as_links(tmp_path):
    root = fake_gopro(tmp_path / "GOPRO_Large")
    out = tmp_path / "arranged"
    result = run_script("organize_gopro.py", root, "--blur", "blur_gamma", "--out", out, "--quiet")
    assert result.returncode == 0, result.stderr
    link = out / "train" / "GOPR0372_07_00" / "blur"
    assert link.is_symlink() and link.resolve() == (root / "train" / "GOPR0372_07_00" / "blur_gamma").resolve()
    assert "4 for training, 2 for validation" in result.stdout and "no problems found" in result.stdout


def test_input_target_copies_are_arranged(tmp_path):
    rng = np.random.default_rng(2)
    for split in ("train", "test"):
        for i in range(2):
            image = noise_image(rng, 24, 32)
            write_image(tmp_path / "GoPro" / split / "input" / f"{i}.png", image)
            write_image(tmp_path / "GoPro" / split / "target" / f"{i}.png", image)
    result = run_script("organize_gopro.py", tmp_path / "GoPro", "--quiet")
    assert result.returncode == 1 and "pass --out" in result.stderr
    result = run_script("organize_gopro.py", tmp_path / "GoPro", "--out", tmp_path / "arranged", "--quiet")
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "arranged" / "train" / "all" / "sharp").is_symlink()


def test_broken_gopro_tree_is_rejected_with_every_problem(tmp_path):
    root = fake_gopro(tmp_path / "GOPRO_Large", blur_folders=("blur",))
    (root / "train" / "GOPR0372_07_00" / "sharp" / "000001.png").unlink()
    write_image(root / "train" / "GOPR0374_11_00" / "blur" / "000000.png", np.zeros((10, 10, 3), np.uint8))
    (root / "test" / "GOPR0384_11_00" / "sharp").rename(root / "test" / "GOPR0384_11_00" / "sharpened")
    out = tmp_path / "arranged"
    result = run_script("organize_gopro.py", root, "--out", out, "--quiet")
    assert result.returncode == 1
    assert "3 problem(s)" in result.stderr
    assert "GOPR0372_07_00/blur/000001.png: no sharp partner" in result.stderr
    assert "GOPR0374_11_00/blur/000000.png: size 10x10 differs" in result.stderr
    assert "GOPR0384_11_00: no sharp/ folder" in result.stderr
    assert not out.exists()


def test_not_gopro_at_all(tmp_path):
    (tmp_path / "photos").mkdir()
    result = run_script("organize_gopro.py", tmp_path / "photos")
    assert result.returncode == 1 and "no train/ and test/ folders" in result.stderr
