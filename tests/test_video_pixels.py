"""RGB in and out of a clip's 4:2:0 frames (`deblur.video.pixels`): no level lost on the way.

FFmpeg's fast YUV 4:2:0 -> RGB conversion rounds down, about 1.1 levels a channel: a clip's frames came out of
deblur darker than the same frames deblurred as photos. These fail on that path."""

from __future__ import annotations

import av
import numpy as np
from helpers import save_model, write_image
from PIL import Image
from typer.testing import CliRunner

from deblur.cli import app
from deblur.video.clips import probe_clip, read_frames
from deblur.video.pixels import frame_to_rgb, rgb_to_frame

runner = CliRunner()


def low_saturation_texture(height: int, width: int, seed: int = 0) -> np.ndarray:
    """A smooth, warm picture whose colour follows its brightness: 4:2:0 chroma loses almost nothing of it, so what
    a round trip changes is the conversion's own rounding."""
    rng = np.random.default_rng(seed)
    coarse = rng.integers(0, 256, (height // 8 + 2, width // 8 + 2), dtype=np.uint8)
    gray = np.asarray(Image.fromarray(coarse).resize((width, height), Image.Resampling.BICUBIC)).astype(float)
    return np.clip(gray[..., None] * np.array([1.0, 0.85, 0.7]) + 20, 0, 255).astype(np.uint8)


def test_rgb_through_4_2_0_and_back_keeps_its_levels():
    rgb = low_saturation_texture(72, 128)
    back = frame_to_rgb(rgb_to_frame(rgb, "yuv420p")) * 255
    assert np.abs((back - rgb).mean(axis=(0, 1))).max() < 0.1


def test_a_clip_gives_the_frames_the_photo_path_gives(tmp_path):
    """The same frames through `deblur predict clip.mp4` and through `deblur predict` as photos: within half a level
    on average and 45 dB (an identity model, CRF 4, 4:2:0)."""
    height, width, count = 96, 128, 6
    texture = low_saturation_texture(height, width + count)
    source = tmp_path / "clip.mp4"
    with av.open(str(source), "w") as out:
        stream = out.add_stream("libx264", rate=30)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        for index in range(count):
            frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(texture[:, index : index + width]), format="rgb24")
            frame.pts = index
            out.mux(stream.encode(frame))
        out.mux(stream.encode())
    model = str(save_model(tmp_path / "run"))  # starts as the identity: what comes out is what went in
    frames = [np.round(frame.rgb * 255).astype(np.uint8) for frame in read_frames(probe_clip(source))]
    for index, frame in enumerate(frames):
        write_image(tmp_path / "photos" / f"{index}.png", frame)
    # --method network: a clip's frames go to the network, while a photo this smooth `auto` would send to the kernel
    common = ["--model", model, "--precision", "float32", "--runtime", "tensorflow", "--method", "network", "-q"]
    result = runner.invoke(app, ["predict", str(source), "--out", str(tmp_path / "clip-out"), "--crf", "4", *common])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["predict", str(tmp_path / "photos"), "--out", str(tmp_path / "photo-out"), *common])
    assert result.exit_code == 0, result.output
    from_clip = np.stack([frame.rgb for frame in read_frames(probe_clip(tmp_path / "clip-out" / "clip.mp4"))])
    from_photos = np.stack(
        [np.asarray(Image.open(tmp_path / "photo-out" / f"{i}.png"), dtype=np.float32) / 255 for i in range(count)]
    )
    levels = (from_clip - from_photos) * 255
    assert np.abs(levels.mean(axis=(0, 1, 2))).max() <= 0.5, levels.mean(axis=(0, 1, 2))
    assert 10 * np.log10(1 / np.mean((from_clip - from_photos) ** 2)) >= 45
