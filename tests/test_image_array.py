import numpy as np
import pytest

from deblur.image_array import RANGE_SLACK, ImageArrayError, as_image, as_pixels


def test_an_image_is_taken_as_float32_with_a_callers_rounding_past_its_ends():
    image = np.full((4, 5, 3), 1 + RANGE_SLACK / 2, np.float64)
    assert as_image(image).dtype == np.float32 and as_pixels(-image + 1).dtype == np.float32


def test_any_number_of_channels_where_asked_but_always_hwc():
    assert as_image(np.zeros((4, 5, 1)), channels=None).shape == (4, 5, 1)
    with pytest.raises(ImageArrayError, match=r"shape \(4, 5\), where deblur takes an HWC array.*\[\.\.\., None\]"):
        as_image(np.zeros((4, 5)), channels=None)


def test_pixels_of_any_shape_must_be_float_in_0_1():
    assert as_pixels(np.zeros((4, 5))).shape == (4, 5)
    with pytest.raises(ImageArrayError, match=r"int16 pixels, .*\(from int16: divide by 32767\)"):
        as_pixels(np.zeros((4, 5), np.int16))
    with pytest.raises(ImageArrayError, match="has values from -0.5 to -0.5, where deblur takes values in"):
        as_pixels(np.full((4, 5), -0.5))


def test_a_path_is_told_to_be_read_first():
    from pathlib import Path

    for path in ("photo.png", Path("photo.png")):
        with pytest.raises(
            ImageArrayError, match=r"a path \(photo.png\), where deblur takes the image itself: read it"
        ):
            as_image(path)
