from pathlib import Path

import pytest

from deblur.errors import SettingError
from deblur.settings import ReadSettings


@pytest.mark.parametrize("one", ["photo.jpg", Path("photo.jpg")])
def test_one_input_given_alone_is_one_input_not_its_letters(one):
    assert ReadSettings(one).inputs == ("photo.jpg",)


def test_inputs_as_a_list_of_paths_are_kept_in_order_as_strings():
    assert ReadSettings([Path("b.jpg"), "a.jpg"]).inputs == ("b.jpg", "a.jpg")


def test_no_inputs_are_refused_not_a_run_that_does_nothing():
    with pytest.raises(SettingError, match="no inputs: name a photo, clip or folder"):
        ReadSettings(())
