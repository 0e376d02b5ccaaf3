"""The arithmetic the generator costs per pixel, and the matmul rate figures are shares of."""

import pytest

from deblur.model import build_generator
from deblur.timings.flops import MatmulRate, achieved, forward_flops_per_pixel, matmul_rate


@pytest.mark.parametrize("width, blocks", [(64, 9), (32, 6), (8, 1)])
def test_flops_per_pixel_match_the_architecture_by_hand(width, blocks):
    # Multiply-adds per input pixel, layer by layer: the 7x7 head and tail (3 <-> width channels) at full
    # resolution, the stride-2 convs at 1/4 and 1/16 of the pixels, 2 convs per block at 1/16, the two
    # upsampling convs at 1/4 and full resolution.
    w = width
    head = tail = 49 * 3 * w
    down = 9 * w * 2 * w / 4 + 9 * 2 * w * 4 * w / 16
    residual = blocks * 2 * 9 * (4 * w) ** 2 / 16
    up = 9 * 4 * w * 2 * w / 4 + 9 * 2 * w * w
    expected = 2 * (head + down + residual + up + tail)
    assert forward_flops_per_pixel(build_generator(width=width, blocks=blocks)) == pytest.approx(expected)


def test_full_size_generator_costs_1_73_mflop_per_pixel():
    assert forward_flops_per_pixel(build_generator()) == pytest.approx(1.733e6, rel=1e-3)


def test_matmul_rate_is_positive_and_finite():
    rate = matmul_rate("float32", size=128, least_seconds=0.01, runs=1)
    assert rate.dtype == "float32" and 0 < rate.gflops < 1e6


def test_achieved_share():
    assert achieved(2e9, 0.5, MatmulRate("float32", 8.0)) == (4.0, 0.5)
    assert achieved(2e9, 0.5, None) == (4.0, None)


def test_kernel_aware_network_adds_its_wider_head_and_its_gate():
    # 3 more input channels into the 7x7 head, and the 7x7 gate conv (width -> 1) beside the tail
    w = 8
    plain = forward_flops_per_pixel(build_generator(width=w, blocks=1))
    aware = forward_flops_per_pixel(build_generator(width=w, blocks=1, kernel_aware=True))
    assert aware - plain == pytest.approx(2 * (49 * 3 * w + 49 * w))
