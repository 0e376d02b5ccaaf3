"""Helpers the tests share: tiny configs and datasets made on the fly."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from PIL import Image

from deblur.config import Config, ModelConfig, config_to_yaml, load_config


def walks_of(folder, monkeypatch) -> list[Path]:
    """A list that each walk of `folder` (os.walk, as the searches for photos walk) is added to."""
    walks, walk = [], os.walk

    def counted(top, *args, **kwargs):
        if Path(top) == Path(folder):
            walks.append(Path(top))
        return walk(top, *args, **kwargs)

    monkeypatch.setattr(os, "walk", counted)
    return walks


def smoke_config(*overrides: str):
    """The smoke config, float32 unless overridden (the test machine's auto choice is bfloat16)."""
    return load_config("smoke", ["train.precision=float32", *overrides])


def write_image(path, array: np.ndarray) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(array).save(path)


def noise_image(rng: np.random.Generator, height: int, width: int) -> np.ndarray:
    return rng.integers(0, 256, (height, width, 3), dtype=np.uint8)


def make_flat_dataset(root, count: int = 4, size: tuple[int, int] = (48, 64), seed: int = 0):
    """A blur/ + sharp/ dataset where sharp = 255 - blurry, pixel for pixel, on random noise: any misaligned
    crop or transform breaks the relation."""
    rng = np.random.default_rng(seed)
    for i in range(count):
        blurry = noise_image(rng, *size)
        write_image(root / "blur" / f"{i:03d}.png", blurry)
        write_image(root / "sharp" / f"{i:03d}.png", 255 - blurry)
    return root


def quiet_train(config, out, messages=None):
    """Train without progress bars, collecting the log lines in `messages` if given."""
    from deblur.training.trainer import train

    return train(config, out, progress=False, log=(messages.append if messages is not None else lambda _: None))


def largest_difference(a, b) -> float:
    """The largest absolute difference between two models' weights."""
    return max(float(np.abs(x - y).max()) for x, y in zip(a.get_weights(), b.get_weights(), strict=True))


def save_model(folder, **model_args):
    """A run folder with model.keras and config.yaml, as `deblur train` leaves it (a tiny model by default)."""
    from deblur.model import build_generator

    folder.mkdir(parents=True, exist_ok=True)
    args = {"width": 4, "blocks": 1, "norm": "none", **model_args}
    build_generator(**args).save(folder / "model.keras")
    (folder / "config.yaml").write_text(config_to_yaml(Config(model=ModelConfig(**args))))
    return folder / "model.keras"


def make_clip(
    path,
    *,
    frames: int = 6,
    size: tuple[int, int] = (48, 64),
    fps: int = 30,
    pts: list[int] | None = None,
    audio: bool = True,
    subtitles: bool = False,
    rotation: int = 0,
    codec: str = "libx264",
    seed: int = 0,
    gop: int | None = None,
    colour: tuple[int, int] | None = None,
    timecode: str | None = None,
    attachment: bytes | None = None,
    pixel_aspect: tuple[int, int] | None = None,
):
    """A small real clip made with PyAV: a textured picture panning a pixel a frame (H.264 by default), with
    `pts` in 1/90000 s for a variable frame rate, a second of stereo AAC, a display rotation if asked, (MKV only)
    a SubRip subtitle track, a key frame every `gop` frames, `colour` tags (FFmpeg's codes for the colour
    primaries and transfer function), a start `timecode`, (MKV only) a font `attachment` and a non-square
    `pixel_aspect` (width, height) if given."""
    import fractions

    import av

    height, width = size
    rng = np.random.default_rng(seed)
    # Smooth texture (noise at a quarter of the size, enlarged): video's 4:2:0 chroma would smear pure noise.
    coarse = rng.integers(0, 256, (height // 4 + 1, (width + frames) // 4 + 1, 3), dtype=np.uint8)
    texture = np.asarray(Image.fromarray(coarse).resize((width + frames, height), Image.Resampling.BILINEAR))
    stamps = pts if pts is not None else [round(i * 90000 / fps) for i in range(frames)]
    with av.open(str(path), "w") as out:
        video = out.add_stream(codec, rate=fps, options={"g": str(gop)} if gop else None)
        video.width, video.height = width, height
        video.pix_fmt = "yuv420p" if width % 2 == 0 and height % 2 == 0 else "yuv444p"
        video.time_base = fractions.Fraction(1, 90000)
        if colour:
            video.codec_context.color_primaries, video.codec_context.color_trc = colour
        if pixel_aspect:
            video.codec_context.sample_aspect_ratio = fractions.Fraction(*pixel_aspect)
        if timecode:
            video.metadata["timecode"] = timecode  # MOV and MP4 write a timecode track from it
        if attachment:
            out.add_attachment("subtitles.ttf", "font/ttf", attachment)
        if rotation:
            video.set_display_rotation(rotation)
        sound = out.add_stream("aac", rate=48000, layout="stereo") if audio else None
        srt = None
        if subtitles:
            srt_path = path.with_suffix(".srt")
            srt_path.write_text("1\n00:00:00,000 --> 00:00:00,500\nhello\n\n")
            srt = av.open(str(srt_path))
            text = out.add_stream_from_template(srt.streams.subtitles[0])
        for index, stamp in enumerate(stamps):
            frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(texture[:, index : index + width]), format="rgb24")
            frame.pts, frame.time_base = stamp, video.time_base
            out.mux(video.encode(frame))
        out.mux(video.encode())
        if sound is not None:
            seconds = np.arange(48000) / 48000
            tone = np.sin(2 * np.pi * 440 * seconds).astype(np.float32) * 0.3
            chunk = 1024
            for start in range(0, len(tone), chunk):
                samples = np.stack([tone[start : start + chunk]] * 2)
                frame = av.AudioFrame.from_ndarray(samples, format="fltp", layout="stereo")
                frame.sample_rate, frame.pts = 48000, start
                out.mux(sound.encode(frame))
            out.mux(sound.encode())
        if srt is not None:
            for packet in srt.demux(srt.streams.subtitles[0]):
                if packet.dts is not None:
                    packet.stream = text
                    out.mux(packet)
            srt.close()
            srt_path.unlink()
    return path


class Interrupting:
    """A Deblurrer whose batches raise KeyboardInterrupt (Ctrl-C) after `calls` of them (small frames: a batch is
    a whole segment)."""

    def __init__(self, deblurrer, calls):
        self.deblurrer, self.calls = deblurrer, calls

    def __getattr__(self, name):
        return getattr(self.deblurrer, name)

    def for_clips(self):
        inner, note = self.deblurrer.for_clips()
        return (self if inner is self.deblurrer else Interrupting(inner, self.calls)), note

    def many(self, images):
        self.calls -= 1
        if self.calls < 0:
            raise KeyboardInterrupt
        return self.deblurrer.many(images)
