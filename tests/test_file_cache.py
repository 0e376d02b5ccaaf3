import contextlib
import os
from pathlib import Path

import pytest
from helpers import make_flat_dataset

from deblur.data.file_cache import check_file_cache, claim_file_cache, pairs_fingerprint
from deblur.data.pairs import find_pairs
from deblur.data.pipeline import PipelineOptions, decoded_pairs
from deblur.errors import OutputBusyError, SettingError


def pairs_in(root):
    pairs, _ = find_pairs(root)
    return pairs


def first_pixels(pairs, cache: str) -> list[int]:
    """One full pass through tf.data's cache in files (which finishes it): each blurry photo's first value."""
    return sorted(int(blurry[0, 0, 0]) for blurry, _ in decoded_pairs(pairs, PipelineOptions(cache=cache)))


def test_other_pairs_get_a_cache_of_their_own(tmp_path):
    # tf.data reads a finished cache whatever it is given: under one prefix, the second set trained on the first.
    one, other = pairs_in(make_flat_dataset(tmp_path / "a")), pairs_in(make_flat_dataset(tmp_path / "b", seed=1))
    prefix = str(tmp_path / "cache" / "pairs")
    with contextlib.ExitStack() as held:
        first = claim_file_cache(prefix, one, held)
        assert first_pixels(one, first) == first_pixels(one, "none")
        second = claim_file_cache(prefix, other, held)
        assert second != first and Path(f"{first}.index").is_file()
        assert first_pixels(other, second) == first_pixels(other, "none") != first_pixels(one, "none")


def test_the_fingerprint_follows_the_files_not_their_order(tmp_path):
    pairs = pairs_in(make_flat_dataset(tmp_path))
    assert pairs_fingerprint(pairs) == pairs_fingerprint(pairs[::-1])
    assert pairs_fingerprint(pairs) != pairs_fingerprint(pairs[1:])
    before = pairs_fingerprint(pairs)
    stat = os.stat(pairs[0].sharp)
    os.utime(pairs[0].sharp, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))  # the photo replaced since
    assert pairs_fingerprint(pairs) != before


def test_what_a_killed_run_left_is_cleared_and_a_live_writer_is_named(tmp_path):
    pairs = pairs_in(make_flat_dataset(tmp_path / "data"))
    prefix = str(tmp_path / "cache")
    with contextlib.ExitStack() as held:
        named = claim_file_cache(prefix, pairs, held)
        with pytest.raises(OutputBusyError, match=f"another deblur run is writing the cache {named} \\(data.cache\\)"):
            claim_file_cache(prefix, pairs, contextlib.ExitStack())
    Path(f"{named}_0.lockfile").write_text("Created at: 0")  # left by a run killed (-9) while writing
    Path(f"{named}_0.data-00000-of-00001.tempstate1").write_bytes(b"\0" * 64)
    with contextlib.ExitStack() as held:  # tf.data took the lockfile for a live writer and failed
        assert first_pixels(pairs, claim_file_cache(prefix, pairs, held)) == first_pixels(pairs, "none")
        # finished: read by any run, with no lock to wait for
        assert claim_file_cache(prefix, pairs, contextlib.ExitStack()) == named
    assert sorted(path.name for path in tmp_path.iterdir() if path.name.startswith("cache")) == [
        f"{Path(named).name}.data-00000-of-00001",
        f"{Path(named).name}.index",
    ]


def test_memory_and_none_are_no_files(tmp_path):
    pairs = pairs_in(make_flat_dataset(tmp_path))
    for choice in ("memory", "none"):
        check_file_cache(choice)
        assert claim_file_cache(choice, pairs, contextlib.ExitStack()) == choice


def test_a_cache_folder_that_cannot_be_made_is_named_before_the_work(tmp_path):
    (tmp_path / "taken").write_bytes(b"x")
    with pytest.raises(SettingError, match=f"^data.cache: {tmp_path / 'taken' / 'c'}: .*taken is a file"):
        check_file_cache(str(tmp_path / "taken" / "c"))
    check_file_cache(str(tmp_path / "new" / "c"))  # made by the run
    assert not (tmp_path / "new").exists()
