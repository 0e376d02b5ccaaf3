import numpy as np
import pytest
from helpers import make_flat_dataset, noise_image, write_image
from PIL import Image

from deblur.data.pairs import DatasetError, discover, preflight
from deblur.errors import SettingError


def make_gopro(root, sequences=("GOPR0001_11_00", "GOPR0002_11_01"), per=2, size=(40, 40)):
    rng = np.random.default_rng(0)
    for split in ("train", "test"):
        for seq in sequences:
            for i in range(per):
                image = noise_image(rng, *size)
                write_image(root / split / seq / "blur" / f"{i:06d}.png", image)
                write_image(root / split / seq / "sharp" / f"{i:06d}.png", image)
    return root


def test_gopro_layout(tmp_path):
    splits = preflight(make_gopro(tmp_path), 32)
    assert splits.layout == "gopro"
    assert len(splits.train) == 4 and len(splits.val) == 4
    assert splits.train[0].name == "GOPR0001_11_00/000000.png"
    assert all("test" in str(p.blurry) for p in splits.val)


def test_a_sequence_folder_linked_in_from_another_disk_is_read(tmp_path):
    make_gopro(tmp_path / "elsewhere", sequences=("GOPR0003_11_02",))
    root = make_gopro(tmp_path / "data")
    (root / "train" / "GOPR0003_11_02").symlink_to(tmp_path / "elsewhere" / "train" / "GOPR0003_11_02")
    (root / "train" / "again").symlink_to(root / "train" / "GOPR0001_11_00")  # one folder twice: its pairs once
    (root / "train" / "GOPR0001_11_00" / "up").symlink_to(root)  # a link back up is no loop
    splits = preflight(root, 32, progress=False)
    assert len(splits.train) == 6 and len(splits.val) == 4
    assert [pair.name for pair in splits.train][:2] == ["GOPR0001_11_00/000000.png", "GOPR0001_11_00/000001.png"]
    assert {pair.name for pair in splits.train[4:]} == {"GOPR0003_11_02/000000.png", "GOPR0003_11_02/000001.png"}


def test_flat_layout_holds_out_every_tenth(tmp_path):
    splits = preflight(make_flat_dataset(tmp_path, count=20), 32)
    assert splits.layout == "flat"
    assert len(splits.train) == 18 and len(splits.val) == 2
    assert not {p.name for p in splits.train} & {p.name for p in splits.val}


def test_flat_layout_matches_nested_names(tmp_path):
    rng = np.random.default_rng(0)
    for name in ("a/x.png", "b/x.png"):
        write_image(tmp_path / "blur" / name, noise_image(rng, 40, 40))
        write_image(tmp_path / "sharp" / name, noise_image(rng, 40, 40))
    splits, problems = discover(tmp_path)
    assert not problems
    assert sorted(p.name for p in splits.train + splits.val) == ["a/x.png", "b/x.png"]


def test_hidden_files_are_ignored(tmp_path):
    make_flat_dataset(tmp_path, count=2)
    (tmp_path / "blur" / ".DS_Store").write_bytes(b"\0junk")
    deleted = tmp_path / ".Trashes" / "501"  # pairs a Mac moved to its trash on this drive: not data either
    write_image(deleted / "blur" / "x.png", noise_image(np.random.default_rng(0), 40, 40))
    write_image(deleted / "sharp" / "y.png", noise_image(np.random.default_rng(0), 40, 40))
    thumbnail = tmp_path / "blur" / "@eaDir" / "0000.png" / "SYNOPHOTO_THUMB_S.png"  # a Synology NAS's, no partner
    write_image(thumbnail, noise_image(np.random.default_rng(0), 40, 40))
    splits = preflight(tmp_path, 32)
    found = sorted(pair.blurry.name for pair in splits.train + splits.val)
    assert found == sorted(p.name for p in (tmp_path / "blur").iterdir() if p.is_file() and p.name[0] != ".")
    assert len(found) == 2


def problems_of(root, patch=32):
    with pytest.raises(DatasetError) as info:
        preflight(root, patch)
    return str(info.value)


def test_missing_partner(tmp_path):
    make_flat_dataset(tmp_path, count=3)
    (tmp_path / "sharp" / "001.png").unlink()
    message = problems_of(tmp_path)
    assert "blur/001.png: no sharp partner" in message and "nothing was trained" in message


def test_orphan_sharp(tmp_path):
    make_flat_dataset(tmp_path, count=3)
    (tmp_path / "blur" / "002.png").unlink()
    assert "sharp/002.png: no blurry partner" in problems_of(tmp_path)


def test_size_mismatch(tmp_path):
    make_flat_dataset(tmp_path, count=3)
    write_image(tmp_path / "sharp" / "000.png", noise_image(np.random.default_rng(1), 50, 64))
    assert "blur/000.png: size 64x48 differs from its sharp partner" in problems_of(tmp_path)


def test_unreadable_image(tmp_path):
    make_flat_dataset(tmp_path, count=3)
    (tmp_path / "blur" / "001.png").write_bytes(b"this is not a png")
    assert "blur/001.png: not a readable image" in problems_of(tmp_path)


def test_truncated_png(tmp_path):
    make_flat_dataset(tmp_path, count=3)
    path = tmp_path / "sharp" / "002.png"
    path.write_bytes(path.read_bytes()[:200])
    assert "sharp/002.png" in problems_of(tmp_path)


def test_non_image_file(tmp_path):
    make_flat_dataset(tmp_path, count=3)
    (tmp_path / "blur" / "notes.txt").write_text("x")
    (tmp_path / "sharp" / "notes.txt").write_text("x")
    assert "blur/notes.txt: not an image file" in problems_of(tmp_path)
    for suffix in (".tif", ".webp"):  # photos predict reads, which had been called no image
        for kind in ("blur", "sharp"):
            Image.open(tmp_path / kind / "000.png").save(tmp_path / kind / f"photo{suffix}")
    found = problems_of(tmp_path)
    assert "blur/photo.tif: a TIFF photo, which training does not read (PNG, JPEG or BMP expected: convert" in found
    assert "blur/photo.webp: a WEBP photo, which training does not read" in found


def test_a_jpeg_saved_as_jfif_is_a_training_pair(tmp_path):
    make_flat_dataset(tmp_path, count=3)
    for kind in ("blur", "sharp"):
        Image.open(tmp_path / kind / "000.png").convert("RGB").save(tmp_path / kind / "saved.jfif", "JPEG")
    splits = preflight(tmp_path, 32, progress=False)
    assert "saved.jfif" in {pair.blurry.name for pair in splits.train + splits.val}


def test_smaller_than_patch(tmp_path):
    make_flat_dataset(tmp_path, count=3, size=(48, 64))
    assert "64x48 is smaller than the 56x56 patch size" in problems_of(tmp_path, patch=56)


def test_a_validation_pair_under_ssims_window_is_a_problem(tmp_path):
    make_flat_dataset(tmp_path, count=3, size=(10, 12))  # a patch of 8 fits; validation's SSIM had crashed on it
    assert "12x10 is smaller than the 11x11 that validation's SSIM scores" in problems_of(tmp_path, patch=8)


def test_all_problems_listed_at_once(tmp_path):
    make_flat_dataset(tmp_path, count=4)
    (tmp_path / "sharp" / "000.png").unlink()
    (tmp_path / "blur" / "003.png").write_bytes(b"junk")
    message = problems_of(tmp_path)
    assert "2 problem(s)" in message and "000.png" in message and "003.png" in message


def test_partners_of_the_same_name_but_another_extension_pair_where_it_is_clear(tmp_path):
    rng = np.random.default_rng(0)
    for name in ("blur/a.jpg", "sharp/a.png", "blur/b.png", "sharp/b.jpg", "sharp/b.bmp", "blur/c.png", "sharp/c.png"):
        write_image(tmp_path / name, noise_image(rng, 40, 40))
    (tmp_path / "sharp" / "d.txt").write_text("notes")
    write_image(tmp_path / "blur" / "d.png", noise_image(rng, 40, 40))
    splits, problems = discover(tmp_path)
    pairs = {pair.name: pair.sharp.name for pair in splits.every}
    assert pairs == {"a.jpg": "a.png", "c.png": "c.png"}
    assert sorted(problems) == sorted(
        [
            f"{tmp_path / 'blur' / 'b.png'}: no sharp partner (expected {tmp_path / 'sharp' / 'b.png'})",
            f"{tmp_path / 'sharp' / 'b.bmp'}: no blurry partner (expected {tmp_path / 'blur' / 'b.bmp'})",
            f"{tmp_path / 'sharp' / 'b.jpg'}: no blurry partner (expected {tmp_path / 'blur' / 'b.jpg'})",
            f"{tmp_path / 'blur' / 'd.png'}: no sharp partner (expected {tmp_path / 'sharp' / 'd.png'})",
            f"{tmp_path / 'sharp' / 'd.txt'}: no blurry partner (expected {tmp_path / 'blur' / 'd.txt'})",
        ]
    )


def test_missing_root_and_empty_root(tmp_path):
    with pytest.raises(DatasetError, match="does not exist"):
        preflight(tmp_path / "nope", 32)
    with pytest.raises(DatasetError, match="no image pairs"):
        preflight(tmp_path, 32)
    (tmp_path / "photo.png").write_bytes(b"")
    with pytest.raises(DatasetError, match="photo.png is a file: give the folder that holds blur/ and sharp/"):
        preflight(tmp_path / "photo.png", 32)
    with pytest.raises(SettingError, match="the data folder is NoneType: give its path, as a str or Path"):
        discover(None)  # had been Path's TypeError
    with pytest.raises(SettingError, match="preflight's patch_size must be a whole number of at least 8; got '32'"):
        preflight(tmp_path, "32")  # had been a TypeError from a comparison
    with pytest.raises(SettingError, match="skip_unreadable must be True or False; got skip_unreadable='no'"):
        preflight(tmp_path, 32, skip_unreadable="no")  # had left unreadable pairs out: a string is true


def test_empty_blur_and_sharp_folders_are_said_to_be_empty_not_missing(tmp_path):
    for sequence in ("a", "b"):
        for side in ("blur", "sharp"):
            (tmp_path / "train" / sequence / side).mkdir(parents=True)
    message = (
        rf"no image pairs under {tmp_path}: its blur/ and sharp/ folders are empty \({tmp_path}/train/a/blur and 1"
    )
    with pytest.raises(DatasetError, match=message):
        preflight(tmp_path, 32)


def test_a_folder_of_photos_without_pairs_is_pointed_to_data_synth(tmp_path):
    rng = np.random.default_rng(0)
    for name in ("holiday/a.png", "b.png"):
        write_image(tmp_path / name, noise_image(rng, 40, 40))
    with pytest.raises(DatasetError, match=r"holds 2 photo\(s\) and no pairs.*deblur data synth --src "):
        preflight(tmp_path, 32)


def test_skip_unreadable_leaves_out_and_lists(tmp_path):
    make_flat_dataset(tmp_path, count=12)
    (tmp_path / "blur" / "003.png").write_bytes(b"junk")
    splits = preflight(tmp_path, 32, skip_unreadable=True)
    assert "003.png" not in {p.name for p in splits.train + splits.val}
    assert len(splits.train) + len(splits.val) == 11
    assert len(splits.skipped) == 1 and "blur/003.png: not a readable image" in splits.skipped[0]


def test_skip_unreadable_still_stops_on_layout_problems(tmp_path):
    make_flat_dataset(tmp_path, count=4)
    (tmp_path / "sharp" / "001.png").unlink()
    with pytest.raises(DatasetError, match="no sharp partner"):
        preflight(tmp_path, 32, skip_unreadable=True)


def make_deconvolved(root, count=3, size=(40, 40)):
    make_flat_dataset(root, count, size)
    rng = np.random.default_rng(1)
    for i in range(count):
        write_image(root / "deconvolved" / f"{i:03d}.png", noise_image(rng, *size))
    return root


def test_a_deconvolved_folder_gives_each_pair_its_deconvolution(tmp_path):
    splits = preflight(make_deconvolved(tmp_path), 32)
    for pair in splits.train + splits.val:
        assert pair.deconvolved == tmp_path / "deconvolved" / pair.blurry.name


def test_a_missing_or_mismatched_deconvolution_is_named(tmp_path):
    make_deconvolved(tmp_path)
    (tmp_path / "deconvolved" / "001.png").unlink()
    write_image(tmp_path / "deconvolved" / "002.png", noise_image(np.random.default_rng(2), 30, 40))
    problems = problems_of(tmp_path)
    assert "001.png: no deconvolution beside it" in problems
    assert "deconvolved/002.png: size 40x30 differs from its blurry photo" in problems


def test_the_kernel_aware_network_refuses_data_without_deconvolutions(tmp_path):
    from deblur.data.pairs import check_deconvolved

    splits = preflight(make_flat_dataset(tmp_path, 3, (40, 40)), 32)
    with pytest.raises(DatasetError, match="needs each pair's deconvolution in a deconvolved/ folder"):
        check_deconvolved(splits.train, tmp_path)


def test_a_folder_of_one_pair_lists_its_problem_once(tmp_path):
    make_flat_dataset(tmp_path, count=1)
    (tmp_path / "sharp" / "000.png").write_bytes(b"not an image")
    with pytest.raises(DatasetError, match=r"has 1 problem\(s\)"):
        preflight(tmp_path, 32)


def test_a_share_of_a_few_holds_out_one_and_leaves_one_to_train_on():
    from deblur.data.pairs import held_out_count

    # rounded alone, 0.1 of 2 to 5 photos held out none, and validation scored another blur of a trained photo
    assert [held_out_count(items, 0.1) for items in (1, 2, 5, 6, 14, 15, 100)] == [0, 1, 1, 1, 1, 2, 10]
    assert held_out_count(5, 0.0) == 0  # none asked for
    assert held_out_count(2, 0.99) == 1 and held_out_count(3, 0.99, fewest=3) == 1  # training keeps its share
