"""The convolutions' gradient to the weights, three ways, at every stride-1 convolution shape of the generator.

For each shape and precision: the library's kernel (TensorFlow's Conv2DBackpropFilter, which oneDNN runs), one
matmul per kernel tap ("shifts") and one matmul over the taps side by side ("im2col"). Each is a `tf.function`
over fixed tensors; the matmul forms are checked against the library's float32 gradient of the same inputs before
they are timed. The figure is the median of `--runs` timed calls after a warm-up, with the share of the same
dtype's 2048x2048 matmul rate measured in the same process. The table in docs/speed.md comes from this script:
where a matmul form wins, a layer could use it.

    python benchmarks/weight_grad.py [--width 64] [--patch 128] [--batch 4] [--runs 15]
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

import numpy as np
import tensorflow as tf

from deblur.hardware import cpu_bf16_flags, cpu_name
from deblur.timings.flops import matmul_rate


def shifted_views(padded, kernel_size: int, height: int, width: int) -> list:
    """The k*k views of a padded NHWC input that a stride-1 k x k convolution multiplies with each kernel tap."""
    return [padded[:, i : i + height, j : j + width, :] for i in range(kernel_size) for j in range(kernel_size)]


def weight_grad_by_shifts(padded, upstream, kernel_size: int):
    """d(loss)/d(kernel) of a stride-1 'valid' convolution of `padded`, as one matmul per kernel tap."""
    _, height, width, out_channels = upstream.shape
    in_channels = padded.shape[3]
    rows = tf.reshape(upstream, (-1, out_channels))
    taps = [
        tf.linalg.matmul(tf.reshape(view, (-1, in_channels)), rows, transpose_a=True)
        for view in shifted_views(padded, kernel_size, height, width)
    ]
    return tf.reshape(tf.stack(taps), (kernel_size, kernel_size, in_channels, out_channels))


def weight_grad_by_im2col(padded, upstream, kernel_size: int):
    """The same gradient as one matmul over the k*k views side by side."""
    _, height, width, out_channels = upstream.shape
    in_channels = padded.shape[3]
    columns = tf.concat(shifted_views(padded, kernel_size, height, width), axis=-1)
    columns = tf.reshape(columns, (-1, kernel_size * kernel_size * in_channels))
    grad = tf.linalg.matmul(columns, tf.reshape(upstream, (-1, out_channels)), transpose_a=True)
    return tf.reshape(grad, (kernel_size, kernel_size, in_channels, out_channels))


def generator_shapes(width: int, patch: int) -> list[tuple[str, int, int, int, int, str]]:
    """(label, kernel, in channels, out channels, output side, padding) of the generator's stride-1 convs."""
    quarter, half = patch // 4, patch // 2
    return [
        ("head 7x7", 7, 3, width, patch, "valid"),
        ("residual blocks (18)", 3, 4 * width, 4 * width, quarter, "valid"),
        ("up1", 3, 4 * width, 2 * width, half, "same"),
        ("up2", 3, 2 * width, width, patch, "same"),
        ("tail 7x7", 7, width, 3, patch, "valid"),
    ]


def median_seconds(fn, runs: int) -> float:
    np.asarray(fn())  # trace and warm up
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        np.asarray(fn())
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def time_shape(kernel, cin, cout, side, padding, batch, dtype, runs):
    rng = np.random.default_rng(0)
    grow = kernel - 1
    padded = tf.cast(rng.standard_normal((batch, side + grow, side + grow, cin), dtype="float32"), dtype)
    upstream = tf.cast(rng.standard_normal((batch, side, side, cout), dtype="float32"), dtype)
    # "same" convs see the unpadded input; the library pads it inside its kernel, the matmul paths explicitly.
    unpadded = padded[:, grow // 2 : grow // 2 + side, grow // 2 : grow // 2 + side, :]
    library_input = padded if padding == "valid" else unpadded
    half = kernel // 2
    pads = [[0, 0], [half, half], [half, half], [0, 0]]

    def pad(x):
        return x if padding == "valid" else tf.pad(x, pads)

    def library_gradient(inputs, gradient):
        return tf.raw_ops.Conv2DBackpropFilter(
            input=inputs,
            filter_sizes=[kernel, kernel, cin, cout],
            out_backprop=gradient,
            strides=[1, 1, 1, 1],
            padding=padding.upper(),
        )

    library = tf.function(lambda: library_gradient(library_input, upstream))
    shifts = tf.function(lambda: weight_grad_by_shifts(pad(library_input), upstream, kernel))
    im2col = tf.function(lambda: weight_grad_by_im2col(pad(library_input), upstream, kernel))
    # The paths must give the gradient before their times mean anything: each against float32's library gradient of
    # the same inputs. Not against the library in bfloat16: on a CPU without native bfloat16 (a Zen 3) that is the
    # one 2% to 5% off (of the largest value) where the two matmul forms are within 0.7%.
    reference = np.asarray(library_gradient(tf.cast(library_input, "float32"), tf.cast(upstream, "float32")))
    scale = np.abs(reference).max()
    for name, fn in (("shifts", shifts), ("im2col", im2col)):
        error = np.abs(np.asarray(tf.cast(fn(), "float32")) - reference).max() / scale
        if error > (1e-5 if dtype == "float32" else 2e-2):
            raise SystemExit(
                f"{name} is {error:.2%} (of the largest value) off the gradient in {dtype}: its times mean nothing"
            )
    flops = 2 * batch * side * side * kernel * kernel * cin * cout
    return flops, {
        name: median_seconds(fn, runs) for name, fn in [("library", library), ("shifts", shifts), ("im2col", im2col)]
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--patch", type=int, default=128)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()

    print(
        f"{cpu_name()} [{' '.join(cpu_bf16_flags())}]; TensorFlow {tf.__version__}; Python {platform.python_version()}"
    )
    print(f"width {args.width}, patch {args.patch}, batch {args.batch}, median of {args.runs} calls\n")
    print("| shape | dtype | library ms | shifts ms | im2col ms | fastest | its share of the matmul rate |")
    print("| --- | --- | ---: | ---: | ---: | --- | ---: |")
    for dtype in ("float32", "bfloat16"):
        rate = matmul_rate(dtype).gflops
        for label, kernel, cin, cout, side, padding in generator_shapes(args.width, args.patch):
            flops, seconds = time_shape(kernel, cin, cout, side, padding, args.batch, dtype, args.runs)
            best = min(seconds, key=seconds.get)
            shares = {name: flops / s / 1e9 / rate for name, s in seconds.items()}
            shape = f"{label}: {kernel}x{kernel} {cin}->{cout} at {side}x{side}"
            ms = " | ".join(f"{seconds[n] * 1e3:.2f}" for n in ("library", "shifts", "im2col"))
            print(f"| {shape} | {dtype} | {ms} | {best} | {shares[best]:.0%} (library {shares['library']:.0%}) |")
        print(f"\n{dtype} matmul: {rate:.0f} GFLOP/s\n")


if __name__ == "__main__":
    main()
