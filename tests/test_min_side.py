import pytest

from deblur.imageio import ImageReadError
from deblur.min_side import MIN_SIDE, ImageTooSmallError, check_min_side


def test_the_smallest_side_passes_and_one_less_is_refused_by_name():
    check_min_side(MIN_SIDE, MIN_SIDE, "edge.png")
    for width, height in ((MIN_SIDE - 1, 40), (40, MIN_SIDE - 1)):
        with pytest.raises(ImageTooSmallError, match=rf"^tiny.png: {width}x{height} is too small \(at least 5 px"):
            check_min_side(width, height, "tiny.png")


def test_a_photo_too_small_is_an_image_read_error():
    # predict's loop and the server report ImageReadErrors per photo and go on: a tiny photo must be one of them
    assert issubclass(ImageTooSmallError, ImageReadError)
