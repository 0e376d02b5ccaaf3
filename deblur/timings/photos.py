"""Timing `deblur predict` on photos: test photos of any size, and a progress hook that records when each photo
is done (benchmarks/predict_speed.py and benchmarks/serve_latency.py time through them)."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from PIL import Image
from skimage import data as skimage_data


class PhotoTimes:
    """A `predict_files` progress hook that records when each photo is finished."""

    def __init__(self) -> None:
        self.ends: list[float] = []

    def start(self, images: int) -> None:
        self.ends = [time.perf_counter()]

    def image(self, name: str, tiles: int):
        return lambda done: None

    def finished(self) -> None:
        self.ends.append(time.perf_counter())

    def seconds(self) -> list[float]:
        return list(np.diff(self.ends))


def write_photos(folder: Path, height: int, width: int, count: int) -> list[Path]:
    """`count` copies of a real photograph (skimage's astronaut) resized to width x height, as PNG files."""
    folder.mkdir(parents=True)
    photo = Image.fromarray(skimage_data.astronaut()).resize((width, height), Image.Resampling.BICUBIC)
    paths = [folder / f"photo{i}.png" for i in range(count)]
    for path in paths:
        photo.save(path)
    return paths
