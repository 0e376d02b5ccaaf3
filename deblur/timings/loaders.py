"""Pipeline-only timings: how many patches per second each loader delivers with no model attached.

Set beside the images per second the model consumes, this shows which one limits training on this machine.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

from deblur.console import progress_bar
from deblur.data.pairs import Pair
from deblur.data.sequence import PairSequence
from deblur.timings.report import LoaderResult

LOADERS = ("keras-sequence", "tf.data", "tf.data-optimized")


def measure_loader(
    name: str,
    pairs: list[Pair],
    *,
    patch_size: int,
    batch_size: int,
    batches: int,
    min_seconds: float = 2.0,
    seed: int = 0,
    progress: bool = True,
) -> LoaderResult:
    """Time at least `batches` batches and `min_seconds` from loader `name`, after its warm-up (for a cache, a
    full pass over the files). A fast loader is timed for longer, so its figure is not a few milliseconds' worth."""
    if name == "keras-sequence":
        warmup = 1
        sequence = PairSequence(pairs, patch_size, batch_size, 10**9, seed=seed)  # batches are made on demand
        source = (sequence[i] for i in range(len(sequence)))
    else:
        from deblur.data.pipeline import train_dataset  # tf.data: TensorFlow only here, not for JAX's loaders
        from deblur.timings.measure import LOADER_OPTIONS

        options = LOADER_OPTIONS[name]
        # Enough batches to pass every file once (filling the cache) and the patch shuffle buffer behind it.
        warmup = -(-len(pairs) // batch_size) + 9 if options.cache != "none" else 1
        source = iter(train_dataset(pairs, patch_size=patch_size, batch_size=batch_size, seed=seed, options=options))
    return time_batches(
        name, source, batch_size, warmup=warmup, batches=batches, min_seconds=min_seconds, progress=progress
    )


def time_batches(
    name: str, source: Iterator, batch_size: int, *, warmup: int, batches: int, min_seconds: float, progress: bool
) -> LoaderResult:
    """Patches/s from `source` over at least `batches` batches and `min_seconds`, after `warmup` batches."""
    bar = progress_bar(desc=f"loader {name}", unit="batch", leave=False, disable=not progress)
    try:
        for _ in range(warmup):
            next(source)
            bar.update(1)
        started = time.perf_counter()
        timed = 0
        while timed < batches or time.perf_counter() - started < min_seconds:
            next(source)
            timed += 1
            bar.update(1)
        seconds = time.perf_counter() - started
    finally:
        bar.close()
    return LoaderResult(name, batch_size * timed / seconds, timed, warmup)
