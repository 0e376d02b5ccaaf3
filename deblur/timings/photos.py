"""Timing `deblur predict`: test photos and clips of any size made from real photographs, and a progress hook
that records when each photo is done (the benchmarks time through them)."""

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

    def image(self, name: str, tiles: int, waiting: str | None = None):
        return lambda done: None

    def finished(self) -> None:
        self.ends.append(time.perf_counter())

    def seconds(self) -> list[float]:
        return list(np.diff(self.ends))


def sample_photo(width: int, height: int) -> np.ndarray:
    """A real photograph (skimage's astronaut) resized to width x height: HWC RGB float32 in [0, 1]."""
    picture = Image.fromarray(skimage_data.astronaut()).resize((width, height), Image.Resampling.BICUBIC)
    return np.asarray(picture, np.float32) / np.float32(255)


def write_photos(folder: Path, height: int, width: int, count: int) -> list[Path]:
    """`count` copies of `sample_photo(width, height)` as PNG files."""
    folder.mkdir(parents=True)
    photo = Image.fromarray(np.round(sample_photo(width, height) * 255).astype(np.uint8))
    paths = [folder / f"photo{i}.png" for i in range(count)]
    for path in paths:
        photo.save(path)
    return paths


def panned_frames(photo: np.ndarray, height: int, width: int, count: int) -> list[np.ndarray]:
    """`count` crops of `photo` (enlarged to cover the frame) moving 4 px a frame to the right."""
    scale = max(height / photo.shape[0], (width + 4 * count) / photo.shape[1])
    size = (int(np.ceil(photo.shape[1] * scale)), int(np.ceil(photo.shape[0] * scale)))
    big = np.asarray(Image.fromarray(photo).resize(size, Image.Resampling.BICUBIC))
    return [np.ascontiguousarray(big[:height, 4 * i : 4 * i + width]) for i in range(count)]


def write_clip(path: Path, frames: list[np.ndarray], fps: int = 30) -> None:
    import av

    with av.open(str(path), "w") as out:
        stream = out.add_stream("libx264", rate=fps, options={"crf": "12"})
        stream.width, stream.height = frames[0].shape[1], frames[0].shape[0]
        stream.pix_fmt = "yuv420p"
        for frame in frames:
            out.mux(stream.encode(av.VideoFrame.from_ndarray(frame, format="rgb24")))
        out.mux(stream.encode())
