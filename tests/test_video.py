"""`deblur predict` on clips: what comes back intact, resuming after an interruption, and bad input."""

import contextlib
import errno
import json
import os
import subprocess
import sys
import textwrap
from fractions import Fraction

import av
import numpy as np
import pytest
from helpers import Interrupting, make_clip, save_model
from PIL import Image
from typer.testing import CliRunner

from deblur.cli import app
from deblur.imageio import OUTPUTS_MARK
from deblur.inference import load_deblurrer
from deblur.video.clips import frame_times, probe_clip, read_frames
from deblur.video.encode import Encoding
from deblur.video.pixels import frame_to_rgb
from deblur.video.predict import VideoOptions, deblur_clip, work_folder


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return save_model(tmp_path_factory.mktemp("run"), width=4, blocks=1, norm="instance", zero_init_output=False)


def facts(path):
    """What must survive deblurring: frame size, count and timestamps, rotation, streams, audio samples."""
    with av.open(str(path)) as container:
        frames = list(container.decode(video=0))
        video = container.streams.video[0]
        summary = {
            "size": (frames[0].width, frames[0].height),
            "pts": [frame.pts for frame in frames],
            "time_base": video.time_base,
            "rotation": frames[0].rotation,
            "colour": (frames[0].color_primaries, frames[0].color_trc),
            "pixel_aspect": video.sample_aspect_ratio,
            "streams": [stream.type for stream in container.streams],
        }
    if "audio" in summary["streams"]:
        with av.open(str(path)) as container:
            summary["audio_samples"] = sum(frame.samples for frame in container.decode(audio=0))
    return summary


def pixels(path):
    """A clip's frames as deblur reads them (`deblur.video.pixels`), as 0-255 uint8."""
    with av.open(str(path)) as container:
        return [np.round(frame_to_rgb(frame) * 255).astype(np.uint8) for frame in container.decode(video=0)]


def predict(*args, quiet: bool = True):
    return CliRunner().invoke(app, ["predict", *map(str, args), *(["-q"] if quiet else [])])


def test_a_clip_comes_back_with_its_size_frames_timestamps_rotation_and_audio(model, tmp_path):
    source = make_clip(tmp_path / "clip.mp4", frames=6, pts=[0, 3000, 9000, 12000, 21000, 24000], rotation=90)
    result = predict(source, "--model", model, "--out", tmp_path / "out")
    assert result.exit_code == 0, result.output
    assert "clip.mp4: 6 frames in" in result.output and "frames/s" in result.output
    target = tmp_path / "out" / "clip.mp4"
    assert facts(target) == facts(source)  # a variable frame rate is kept, frame by frame
    before, after = pixels(source), pixels(target)
    assert all(a.shape == b.shape for a, b in zip(before, after, strict=True))
    assert any(np.abs(a.astype(int) - b).mean() > 1 for a, b in zip(before, after, strict=True))  # deblurred
    assert sorted(os.listdir(tmp_path / "out")) == [OUTPUTS_MARK, "clip.mp4"]  # no work folder left


def test_an_hdr_clip_keeps_its_colour_primaries_and_transfer_and_says_it_is_8_bits(model, tmp_path):
    # BT.2020 primaries with HLG's transfer, as phones record: untagged, players had shown it washed out and grey
    source = make_clip(tmp_path / "phone.mp4", frames=3, audio=False, colour=(9, 18))
    result = predict(source, "--model", model, "--out", tmp_path / "out", quiet=False)
    assert result.exit_code == 0, result.output
    assert "an HDR clip (HLG): deblurred and written in 8 bits, tagged as HDR as it came" in result.output
    assert facts(tmp_path / "out" / "phone.mp4")["colour"] == (9, 18)


@pytest.mark.parametrize("codec", ["h264", "vp9"])
def test_an_anamorphic_clip_keeps_its_pixel_aspect(model, tmp_path, codec):
    # HDV's 1440x1080 is shown at 16:9 by its 4:3 pixels: written square, it had played squeezed
    source = make_clip(tmp_path / "hdv.mp4", frames=2, audio=False, pixel_aspect=(4, 3))
    result = predict(source, "--model", model, "--out", tmp_path / "out", "--codec", codec)
    assert result.exit_code == 0, result.output
    assert facts(tmp_path / "out" / "hdv.mp4")["pixel_aspect"] == Fraction(4, 3)  # VP9's from the container alone


def test_a_clip_with_transparency_is_said_to_lose_it(model, tmp_path):
    with av.open(str(tmp_path / "title.mov"), "w") as out:  # PNG frames with alpha in MOV, as editors export titles
        video = out.add_stream("png", rate=24)
        video.width, video.height, video.pix_fmt = 32, 24, "rgba"
        for index in range(2):
            out.mux(video.encode(av.VideoFrame.from_ndarray(np.full((24, 32, 4), 60 * index + 40, np.uint8), "rgba")))
        out.mux(video.encode())
    result = predict(tmp_path / "title.mov", "--model", model, "--out", tmp_path / "out", quiet=False)
    assert result.exit_code == 0, result.output
    assert "its transparency (alpha) is left out: written opaque" in result.output  # had been dropped unsaid


def test_a_clips_timecode_and_attachments_are_kept_and_a_data_stream_said_left_out(model, tmp_path):
    make_clip(tmp_path / "camera.mov", frames=3, audio=False, timecode="01:00:00;00", fps=30)
    make_clip(tmp_path / "styled.mkv", frames=3, audio=False, attachment=b"font bytes")
    with av.open(str(tmp_path / "drone.ts"), "w") as out:  # a KLV telemetry stream beside the video
        video, data = out.add_stream("libx264", rate=24), out.add_data_stream("klv")
        video.width, video.height, video.pix_fmt = 64, 48, "yuv420p"
        for index in range(3):
            out.mux(video.encode(av.VideoFrame.from_ndarray(np.full((48, 64, 3), 40 * index, np.uint8))))
            packet = av.Packet(b"\x06\x0e\x2b\x34" + bytes(12))
            packet.stream, packet.pts, packet.dts = data, 3750 * index, 3750 * index
            out.mux(packet)
        out.mux(video.encode())
    clips = [tmp_path / name for name in ("camera.mov", "styled.mkv", "drone.ts")]
    result = predict(*clips, "--model", model, "--out", tmp_path / "out", quiet=False)
    assert result.exit_code == 0, result.output
    assert "left out data 1: a data stream (camera telemetry or metadata)" in result.output
    with av.open(str(tmp_path / "out" / "camera.mov")) as container:  # the timecode track had been dropped
        assert [stream.type for stream in container.streams] == ["video", "data"]
        assert container.streams.data[0].metadata["timecode"] == "01:00:00;00"
    with av.open(str(tmp_path / "out" / "styled.mkv")) as container:  # the fonts its subtitles are styled with
        assert [(a.name, a.data) for a in container.streams.attachments] == [("subtitles.ttf", b"font bytes")]
    with av.open(str(tmp_path / "out" / "drone.mp4")) as container:
        assert [stream.type for stream in container.streams] == ["video"]


def test_mkv_keeps_its_subtitles(model, tmp_path):
    source = make_clip(tmp_path / "clip.mkv", frames=4, subtitles=True)
    assert facts(source)["streams"] == ["video", "audio", "subtitle"]
    assert predict(source, "--model", model, "--out", tmp_path / "out").exit_code == 0
    assert facts(tmp_path / "out" / "clip.mkv") == facts(source)


def test_audio_mp4_cannot_take_as_it_is_is_reencoded(model, tmp_path):
    """PCM from an AVI: MP4's muxer takes the stream, then fails on its packets; the audio becomes AAC."""
    source = tmp_path / "old.avi"
    with av.open(str(source), "w") as out:
        video = out.add_stream("mpeg4", rate=25)
        video.width, video.height, video.pix_fmt = 64, 48, "yuv420p"
        sound = out.add_stream("pcm_s16le", rate=44100, layout="stereo")
        for index in range(6):
            frame = np.full((48, 64, 3), 40 * index, np.uint8)
            out.mux(video.encode(av.VideoFrame.from_ndarray(frame, format="rgb24")))
        out.mux(video.encode())
        samples = np.random.default_rng(0).integers(-3000, 3000, (1, 2 * 11025)).astype(np.int16)
        frame = av.AudioFrame.from_ndarray(samples, format="s16", layout="stereo")
        frame.sample_rate, frame.pts = 44100, 0
        out.mux(sound.encode(frame))
        out.mux(sound.encode())
    args = ["predict", str(source), "--model", str(model), "--out", str(tmp_path / "out")]
    result = CliRunner().invoke(app, args)  # not quiet: the re-encoding is a note
    assert result.exit_code == 0, result.output
    assert "re-encoding it" in result.output and "-> aac (copying it failed)" in result.output
    written = facts(tmp_path / "out" / "old.mp4")
    assert written["streams"] == ["video", "audio"] and len(written["pts"]) == 6
    assert abs(written["audio_samples"] - 11025) <= 2048  # the encoder's padding, at most two AAC frames


def test_frames_equal_predicts_on_the_same_frames(model, tmp_path):
    # Odd sides: 4:4:4 chroma, so that CRF 0 loses nothing but the RGB <-> YUV rounding.
    source = make_clip(tmp_path / "clip.mkv", frames=3, size=(49, 65), audio=False)
    args = ["--model", model, "--out", tmp_path / "out", "--crf", "0", "--precision", "float32"]
    assert predict(source, *args).exit_code == 0
    deblurrer = load_deblurrer(model, precision="float32")
    for frame, written in zip(pixels(source), pixels(tmp_path / "out" / "clip.mkv"), strict=True):
        expected = np.round(np.clip(deblurrer(frame / 255.0), 0, 1) * 255)
        assert np.abs(written.astype(float) - expected).mean() < 2


def test_clips_under_the_default_go_to_the_network_and_kernel_warns_of_flicker(tmp_path):
    from helpers import save_model
    from test_shake import shaken

    from deblur.paths import shipped_model
    from deblur.timings.photos import write_clip

    _, blurry, _ = shaken(15, seed=4)
    write_clip(tmp_path / "shaken.mp4", [np.round(blurry * 255).astype(np.uint8)] * 3)
    frames = pixels(tmp_path / "shaken.mp4")
    aware = save_model(tmp_path / "aware", kernel_aware=True)  # the default's way: clips go to the shipped network
    args = ["--model", aware, "--crf", "0", "--precision", "float32", "--runtime", "tensorflow", "--out"]
    result = predict(tmp_path / "shaken.mp4", *args, tmp_path / "default", quiet=False)
    assert result.exit_code == 0, result.output
    assert "clips go to the network under --method kernel-aware, the default" in result.output
    network = load_deblurrer(shipped_model(), precision="float32")
    luma = np.array([0.299, 0.587, 0.114])  # compared in luma: 4:2:0 halves the colours
    for frame, written in zip(frames, pixels(tmp_path / "default" / "shaken.mp4"), strict=True):
        expected = np.round(np.clip(network(frame / 255.0), 0, 1) * 255)
        assert np.abs((written - expected) @ luma).mean() < 2
    # one estimate a frame: what is checked is the warning and the frames (with two, 20 s of the suite; with one, 8)
    # no network runs: none of its options (--precision, --runtime) is given, as they would be refused
    kernel = ["--model", aware, "--crf", "0", "--method", "kernel", "--estimates", "1"]
    result = predict(tmp_path / "shaken.mp4", *kernel, "--out", tmp_path / "kernel", quiet=False)
    assert result.exit_code == 0 and "expect flicker" in result.output, result.output
    assert len(pixels(tmp_path / "kernel" / "shaken.mp4")) == 3


def test_odd_sides_keep_their_size(model, tmp_path):
    source = make_clip(tmp_path / "odd.mp4", frames=3, size=(49, 65), audio=False)
    result = predict(source, "--model", model, "--out", tmp_path / "out", quiet=False)
    assert result.exit_code == 0, result.output
    assert "65x49 has an odd side: written with 4:4:4 chroma" in result.output and "--codec av1 keeps" in result.output
    assert facts(tmp_path / "out" / "odd.mp4")["size"] == (65, 49)
    quiet = predict(source, "--model", model, "--out", tmp_path / "quiet")  # -q: results and errors only
    assert quiet.exit_code == 0 and "odd side" not in quiet.output and "odd.mp4: 3 frames" in quiet.output


def test_the_library_takes_a_clip_and_its_output_as_strings(model, tmp_path):
    source = make_clip(tmp_path / "clip.mp4", frames=2, size=(16, 24), audio=False)
    target = tmp_path / "out" / "clip.mp4"  # strings had ended on AttributeError: 'str' object has no attribute ...
    report = deblur_clip(str(source), str(target), load_deblurrer(model), log=lambda _: None)
    assert report.frames == 2 and facts(target)["size"] == (24, 16)


def test_a_target_whose_container_cannot_hold_the_codec_is_refused_before_any_work(model, tmp_path):
    from deblur.errors import SettingError
    from deblur.video.encode import Encoding

    source = make_clip(tmp_path / "clip.mp4", frames=2, size=(16, 24), audio=False)
    deblurrer = Interrupting(load_deblurrer(model), calls=0)  # a frame deblurred would raise KeyboardInterrupt
    refused = {  # each had been deblurred whole, then failed to join on FFmpeg's ValueError, its parts left
        ("clip.webm", "h264"): r"clip.webm: a .webm file \(webm to FFmpeg\) cannot hold h264 video: name it .mp4",
        ("clip.mov", "av1"): r"a .mov file \(mov to FFmpeg\) cannot hold av1 video",
        ("clip", "h264"): "FFmpeg writes no video to a file named without a suffix: name it .mp4",
        ("clip.xyz", "h264"): r"FFmpeg writes no video to a file named \*.xyz",
        ("clip.png", "vp9"): r"a .png file \(image2 to FFmpeg\) cannot hold vp9 video",
    }
    for (name, codec), message in refused.items():
        options = VideoOptions(Encoding(codec))
        with pytest.raises(SettingError, match=message):
            deblur_clip(source, tmp_path / "out" / name, deblurrer, options, log=lambda _: None)
    assert not (tmp_path / "out").exists() or list((tmp_path / "out").iterdir()) == []
    # WebM holds VP9, and Opus, not AAC: the clip's AAC had failed its end, every frame deblurred
    source = make_clip(tmp_path / "sound.mp4", frames=2, size=(16, 24), audio=True)
    messages = []
    webm = VideoOptions(Encoding("vp9"))
    deblur_clip(source, tmp_path / "out" / "clip.webm", load_deblurrer(model), webm, log=messages.append)
    with av.open(str(tmp_path / "out" / "clip.webm")) as written:
        assert [stream.codec_context.name for stream in written.streams] == ["vp9", "opus"]
    assert "re-encoded audio 1 (aac) -> opus (.webm cannot hold aac)" in messages, messages


@pytest.mark.parametrize("name", ["clip.avi", "clip.flv", "clip.m4v", "clip.mkv"])
def test_a_clip_with_audio_is_written_into_the_other_containers_that_hold_h264(model, tmp_path, name):
    source = make_clip(tmp_path / "sound.mp4", frames=2, size=(16, 24), audio=True)
    report = deblur_clip(source, tmp_path / "out" / name, load_deblurrer(model), log=lambda _: None)
    assert report.frames == 2
    with av.open(str(tmp_path / "out" / name)) as written:
        assert written.streams.video[0].codec_context.name == "h264" and len(written.streams.audio) == 1
        assert sum(1 for _ in written.decode(video=0)) == 2
    assert sorted(os.listdir(tmp_path / "out")) == [name]  # no work folder left


def test_no_clip_or_a_model_path_for_the_deblurrer_is_named(model, tmp_path):
    from deblur.errors import SettingError

    with pytest.raises(SettingError, match="the clip is NoneType: give its path"):
        deblur_clip(None, tmp_path / "out.mp4", load_deblurrer(model))  # had been Path's TypeError
    source = make_clip(tmp_path / "clip.mp4", frames=2, size=(16, 24), audio=False)
    with pytest.raises(SettingError, match=r"the deblurrer is PosixPath: deblur.load_deblurrer\(model\) opens one"):
        deblur_clip(source, tmp_path / "out.mp4", model)  # had been an AttributeError ... 'method'
    assert not (tmp_path / "out.mp4").exists()


def test_a_clip_is_never_deblurred_over_itself(model, tmp_path):
    from deblur.errors import OutputExistsError

    source = make_clip(tmp_path / "clip.mp4", frames=2, size=(16, 24), audio=False)
    before = source.read_bytes()
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "clip_side_by_side.mp4").hardlink_to(source)  # the clip by another name
    for target, side_by_side in ((source, False), (tmp_path / "out" / "clip.mp4", True)):
        with pytest.raises(OutputExistsError, match=r"is the clip deblurred: give another file for the result"):
            # overwrite is this function's default
            deblur_clip(source, target, load_deblurrer(model), VideoOptions(side_by_side=side_by_side), log=str)
    assert source.read_bytes() == before and not (tmp_path / "out" / "clip.mp4").exists()


def test_a_crf_outside_the_codecs_range_is_refused_before_any_work(tmp_path):
    source = make_clip(tmp_path / "clip.mp4", frames=3)
    result = predict(source, "--codec", "h265", "--crf", "52", "--out", tmp_path / "out")  # x265's: 0 to 51
    assert result.exit_code == 1 and "crf 52 is outside h265's range, 0 to 51 (--crf, --codec)" in result.output
    assert not (tmp_path / "out").exists()
    assert Encoding("vp9", 63).quality == 63 and Encoding("h264").quality == 18


@pytest.mark.parametrize(
    "make, said",
    [
        # a codec of another name had been taken, and ended on KeyError 'x' once a crf was given or at the encoder
        (lambda: Encoding("x"), "codec must be one of h264, h265, vp9, av1; got 'x'"),
        (lambda: Encoding(["h264"]), "codec must be one of h264, h265, vp9, av1; got ['h264']"),  # "unhashable type"
        (lambda: Encoding("h264", 18.5), "crf must be a whole number (or None); got 18.5"),  # went to the encoder
        # NaN had ended on "cannot convert float NaN to integer"; 0 and -1 ran as if they meant something
        (lambda: VideoOptions(segment_seconds=float("nan")), "segment_seconds must be a finite number above 0; got na"),
        (lambda: VideoOptions(segment_seconds=0), "got 0"),
        (lambda: VideoOptions(max_pixels=float("nan")), "max_pixels must be a whole number of pixels, at least 1"),
        (lambda: VideoOptions(encoding="vp9"), "encoding is str: give deblur.video.encode.Encoding(codec, crf)"),
        (lambda: VideoOptions(side_by_side="no"), "side_by_side must be True or False; got side_by_side='no'"),
    ],
)
def test_how_a_clip_is_written_is_refused_by_name_where_it_cannot_be_used(make, said):
    from deblur.errors import SettingError

    with pytest.raises(SettingError) as refused:
        make()
    assert said in str(refused.value)


def test_a_mov_clip_in_a_codec_mov_cannot_hold_becomes_mp4(model, tmp_path):
    source = make_clip(tmp_path / "phone.mov", frames=3)
    result = predict(source, "--model", model, "--out", tmp_path / "out", "--codec", "vp9")
    assert result.exit_code == 0, result.output  # FFmpeg's MOV muxer had refused VP9: "Invalid argument"
    assert sorted(os.listdir(tmp_path / "out")) == [OUTPUTS_MARK, "phone.mp4"]
    with av.open(str(tmp_path / "out" / "phone.mp4")) as container:
        assert container.streams.video[0].codec_context.codec.id == av.Codec("vp9").id
    assert facts(tmp_path / "out" / "phone.mp4")["streams"] == ["video", "audio"]


def test_av1_at_an_odd_size_with_its_audio(model, tmp_path):
    # --codec av1 had failed on every clip (the join named the copy's codec by its decoder, libdav1d), and at an odd
    # side on SVT-AV1's refusal of 4:4:4; AV1 keeps odd sides in 4:2:0.
    source = make_clip(tmp_path / "odd.mp4", frames=3, size=(49, 65))
    args = ["--model", model, "--out", tmp_path / "out", "--codec", "av1", "--crf", "1", "--precision", "float32"]
    result = predict(source, *args, quiet=False)
    assert result.exit_code == 0, result.output
    assert "odd side" not in result.output
    target = tmp_path / "out" / "odd.mp4"
    written = facts(target)
    assert written["size"] == (65, 49) and len(written["pts"]) == 3 and written["streams"] == ["video", "audio"]
    with av.open(str(target)) as container:
        assert "AV1" in container.streams.video[0].codec_context.codec.long_name
    deblurrer = load_deblurrer(model, precision="float32")
    # In luma, as 4:2:0 halves the colours; on these noise frames and a random model's saturated output it still
    # leaks 1.4 to 3.1 levels (four models measured), against 41 to 51 from the frames as they were.
    luma = np.array([0.299, 0.587, 0.114])
    for frame, after in zip(pixels(source), pixels(target), strict=True):
        expected = np.round(np.clip(deblurrer(frame / 255.0), 0, 1) * 255)
        assert np.abs((after - expected) @ luma).mean() < 5


def test_an_interrupted_clip_resumes_and_equals_an_uninterrupted_run(model, tmp_path):
    source = make_clip(tmp_path / "clip.mp4", frames=12, fps=10)
    deblurrer = load_deblurrer(model, precision="float32")
    options = VideoOptions(segment_seconds=0.3)  # segments of 3 frames: 4 of them
    whole = deblur_clip(source, tmp_path / "whole" / "clip.mp4", deblurrer, options, log=lambda _: None)
    assert whole.frames == 12 and whole.resumed_frames == 0
    target = tmp_path / "resumed" / "clip.mp4"
    with pytest.raises(KeyboardInterrupt):
        deblur_clip(source, target, Interrupting(deblurrer, calls=2), options, log=lambda _: None)
    assert not target.exists()  # nothing under the final name
    parts = sorted(path.name for path in work_folder(target).iterdir())
    assert parts == ["00000.mp4", "00001.mp4", "job.json"]  # finished segments kept, the half one removed
    messages = []
    report = deblur_clip(source, target, deblurrer, options, log=messages.append)
    assert report.resumed_frames == 6 and any("resuming: 2 finished segment(s)" in m for m in messages)
    whole_facts, resumed_facts = facts(tmp_path / "whole" / "clip.mp4"), facts(target)
    assert resumed_facts == whole_facts  # frame count, timestamps, streams
    # The same frames: byte for byte, but for x264, which on a 2-core Zen 4 (2026-12-05) encoded the same YUV
    # pixels (compared plane by plane) into another first frame in 10 of 186 runs, decoded 1 to 2 levels apart on
    # average (a frame out of place here is 28 levels or more from its neighbour).
    for before, after in zip(pixels(tmp_path / "whole" / "clip.mp4"), pixels(target), strict=True):
        assert np.abs(before.astype(int) - after.astype(int)).mean() < 4
    assert not work_folder(target).exists()


def test_a_clip_another_run_is_writing_is_listed_as_failed_and_the_other_inputs_go_on(model, tmp_path):
    from deblur.files import one_run_at_a_time

    (tmp_path / "in").mkdir()
    first = make_clip(tmp_path / "in" / "a.mp4", frames=4, fps=10, audio=False)
    make_clip(tmp_path / "in" / "b.mp4", frames=4, fps=10, audio=False)
    target = tmp_path / "out" / "a.mp4"
    with one_run_at_a_time(work_folder(target), target, "out"):  # as another predict's of the same clip would
        result = predict(first.parent, "--model", model, "--out", tmp_path / "out")
    assert result.exit_code == 1, result.output
    assert f"another deblur run is writing {target} (its work in {work_folder(target)})" in result.output
    assert sorted(path.name for path in (tmp_path / "out").iterdir()) == [OUTPUTS_MARK, "b.mp4"]


def test_a_clip_another_run_finished_while_this_one_read_it_is_skipped_not_done_again(model, tmp_path, monkeypatch):
    import deblur.video.predict as clip_predict

    (tmp_path / "in").mkdir()
    make_clip(tmp_path / "in" / "a.mp4", frames=4, fps=10, audio=False)
    target = tmp_path / "out" / "a.mp4"
    lock = clip_predict.one_run_at_a_time

    @contextlib.contextmanager
    def after_the_other_run(*args, **kwargs):  # it joined the clip and let go of the lock as this run probed it
        target.parent.mkdir(exist_ok=True)
        target.write_bytes(b"the other run's clip")
        with lock(*args, **kwargs):
            yield

    monkeypatch.setattr(clip_predict, "one_run_at_a_time", after_the_other_run)
    result = predict(tmp_path / "in", "--model", model, "--out", tmp_path / "out", quiet=False)
    assert result.exit_code == 0, result.output
    assert "0 written, 0 failed" in result.output and "1 skipped: they exist" in result.output
    assert target.read_bytes() == b"the other run's clip"
    assert sorted(path.name for path in target.parent.iterdir()) == ["a.mp4"]


def test_a_full_disk_mid_clip_names_the_clip_and_keeps_the_finished_segments(model, tmp_path, monkeypatch):
    from deblur.video.encode import SegmentWriter

    source = make_clip(tmp_path / "clip.mp4", frames=6, fps=1)  # segments of 2 s: 2 frames each
    target = tmp_path / "out" / "clip.mp4"
    written = SegmentWriter.write

    def full_in_the_third_segment(self, rgb, pts):
        if self._tmp.name.startswith(".00002."):  # PyAV's own error, naming the segment's temporary file
            raise av.error.OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self._tmp))
        written(self, rgb, pts)

    monkeypatch.setattr(SegmentWriter, "write", full_in_the_third_segment)
    result = predict(source, "--model", model, "--out", target.parent, "--method", "network")
    assert result.exit_code == 1
    assert result.output.strip().splitlines()[-1] == (
        f"error: {target}: {os.strerror(errno.ENOSPC)}: free some space, then run the same command again (what was "
        "finished is kept)"
    )
    assert sorted(path.name for path in work_folder(target).iterdir()) == ["00000.mp4", "00001.mp4", "job.json"]
    monkeypatch.setattr(SegmentWriter, "write", written)
    again = predict(source, "--model", model, "--out", target.parent, "--method", "network")
    assert again.exit_code == 0 and "clip.mp4: 6 frames (4 done before)" in again.output, again.output

    def no_room_for_the_job(path, text):  # the first file written for a clip: its work folder's job.json
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    monkeypatch.setattr("deblur.files.atomic_write_text", no_room_for_the_job)  # as start_work writes it
    other = predict(source, "--model", model, "--out", tmp_path / "other", "--method", "network")
    assert other.exit_code == 1
    assert other.output.strip().splitlines()[-1].startswith(f"error: {tmp_path / 'other' / 'clip.mp4'}: ")


def test_other_settings_start_over(model, tmp_path):
    source = make_clip(tmp_path / "clip.mp4", frames=6, fps=10)
    target = tmp_path / "out" / "clip.mp4"
    options = VideoOptions(segment_seconds=0.3)
    with pytest.raises(KeyboardInterrupt):
        deblur_clip(source, target, Interrupting(load_deblurrer(model), calls=1), options, log=lambda _: None)
    messages = []
    stronger = load_deblurrer(model, strength=0.5)
    report = deblur_clip(source, target, stronger, options, log=messages.append)
    assert report.resumed_frames == 0 and any("other settings; starting over" in m for m in messages)


def test_segments_an_earlier_version_made_are_not_joined_with_new_ones(model, tmp_path):
    source = make_clip(tmp_path / "clip.mp4", frames=6, fps=10)
    target = tmp_path / "out" / "clip.mp4"
    options = VideoOptions(segment_seconds=0.3)
    deblurrer = load_deblurrer(model)
    with pytest.raises(KeyboardInterrupt):
        deblur_clip(source, target, Interrupting(deblurrer, calls=1), options, log=lambda _: None)
    manifest = work_folder(target) / "job.json"
    job = json.loads(manifest.read_text())
    del job["segment_format"]  # as the version before segments carried colour and aspect tags wrote it
    manifest.write_text(json.dumps(job))
    messages = []
    report = deblur_clip(source, target, deblurrer, options, log=messages.append)
    assert report.resumed_frames == 0 and any("another version of deblur; starting over" in m for m in messages)


# Segments of the stopping script and of its finishing run: the same, or the run would start over.
STOPPED_SEGMENT_SECONDS = 0.5


def stopping_script(source, target, model, stop: str, *, as_the_command: bool = False) -> str:
    """A process deblurring `source` in segments of half a second that sends itself `stop` (a signal's name) at its
    third model call (`finished_here` makes the same call again); `as_the_command` installs the deblur command's
    SIGTERM and Ctrl-C handler first."""
    return textwrap.dedent(
        f"""
        import os, signal
        from pathlib import Path
        from deblur.cli import stop_cleanly
        from deblur.inference import load_deblurrer
        from deblur.video.predict import VideoOptions, deblur_clip
        if {as_the_command}:
            stop_cleanly()
        deblurrer = load_deblurrer({str(model)!r})
        calls = []
        many = deblurrer.many
        def stopping(images):
            calls.append(1)
            if len(calls) == 3:
                os.kill(os.getpid(), signal.{stop})
            return many(images)
        deblurrer.many = stopping
        options = VideoOptions(segment_seconds={STOPPED_SEGMENT_SECONDS})
        deblur_clip(Path({str(source)!r}), Path({str(target)!r}), deblurrer, options)
        """
    )


def finished_here(source, target, model) -> tuple[int, int]:
    """The stopped script's call again, in this process (a start of Python and TensorFlow less): frames resumed,
    of how many."""
    options = VideoOptions(segment_seconds=STOPPED_SEGMENT_SECONDS)
    report = deblur_clip(source, target, load_deblurrer(model), options, log=lambda _: None)
    return report.resumed_frames, report.frames


def test_a_killed_run_resumes(model, tmp_path):
    """SIGKILL mid-clip, as a reboot would: the same call again finishes it."""
    source = make_clip(tmp_path / "clip.mp4", frames=30, fps=10)
    target = tmp_path / "out" / "clip.mp4"
    script = stopping_script(source, target, model, "SIGKILL")
    died = subprocess.run([sys.executable, "-c", script], capture_output=True)
    assert died.returncode == -9 and not target.exists()
    assert finished_here(source, target, model) == (10, 30)
    assert facts(target) == facts(source)


def test_sigterm_mid_clip_leaves_no_temporary_file_and_the_run_resumes(model, tmp_path):
    """SIGTERM, as `kill` or a container's stop sends: the segment in progress is abandoned whole."""
    source = make_clip(tmp_path / "clip.mp4", frames=30, fps=10)
    target = tmp_path / "out" / "clip.mp4"
    script = stopping_script(source, target, model, "SIGTERM", as_the_command=True)
    stopped = subprocess.run([sys.executable, "-c", script], capture_output=True)
    assert stopped.returncode != 0 and not target.exists()
    parts = work_folder(target)
    left = [path.name for path in parts.iterdir()]
    assert left and not [name for name in left if name.startswith(".") or ".tmp" in name], left
    assert all(path.stat().st_size > 0 for path in parts.iterdir())
    assert finished_here(source, target, model) == (10, 30) and facts(target) == facts(source)


def tagged_clip(path, tags: dict, chapters: int = 0, options: dict | None = None, languages: tuple[str, ...] = ()):
    """A clip of 6 frames with container `tags` (as a phone writes its recording time and place), `chapters`, and
    an audio track for each of `languages`, tagged with it and titled."""
    import fractions

    with av.open(str(path), "w", options=options or {}) as out:
        out.metadata.update(tags)
        stream = out.add_stream("libx264", rate=30)
        stream.width, stream.height, stream.pix_fmt = 64, 48, "yuv420p"
        tracks = [out.add_stream("aac", rate=48000) for _ in languages]
        for audio, language in zip(tracks, languages, strict=True):
            audio.metadata.update({"language": language, "title": f"{language} commentary"})
        if chapters:
            time_base = fractions.Fraction(1, 30)
            out.set_chapters(
                [
                    {"id": n + 1, "start": n * 2, "end": n * 2 + 2, "time_base": time_base, "metadata": {}}
                    for n in range(chapters)
                ]
            )
        for index in range(6):
            frame = av.VideoFrame.from_ndarray(np.full((48, 64, 3), 40 * index, np.uint8), format="rgb24")
            frame.pts = index
            out.mux(stream.encode(frame))
        out.mux(stream.encode())
        for audio in tracks:
            sound = av.AudioFrame.from_ndarray(np.zeros((1, 1024), np.float32), format="fltp", layout="mono")
            sound.sample_rate, sound.pts = 48000, 0
            out.mux([*audio.encode(sound), *audio.encode()])
    return path


def test_a_clips_tags_and_chapters_are_kept_and_strip_metadata_leaves_out_the_tags(model, tmp_path):
    # a phone's recording time and place (which a photo library sorts and maps clips by) had been dropped
    when, place = "2026-07-14T18:22:05.000000Z", "+48.8584+002.2945/"
    phone = {"creation_time": when, "location": place, "title": "tower"}
    iphone = {"com.apple.quicktime.location.ISO6709": place, "com.apple.quicktime.make": "Apple"}  # QuickTime keys
    (tmp_path / "in").mkdir()
    tagged_clip(tmp_path / "in" / "phone.mp4", phone)
    tagged_clip(tmp_path / "in" / "iphone.mov", iphone, options={"movflags": "use_metadata_tags"})
    tagged_clip(tmp_path / "in" / "talk.mkv", {"title": "a talk"}, chapters=3, languages=("eng", "fra"))

    def tags(path, keys):
        with av.open(str(path)) as container:
            audio = [(s.metadata.get("language"), s.metadata.get("title")) for s in container.streams.audio]
            return {key: container.metadata.get(key) for key in keys}, len(container.chapters()), audio

    for strip in ([], ["--strip-metadata"]):
        out = tmp_path / f"out{len(strip)}"
        result = predict(tmp_path / "in", "--model", model, "--out", out, *strip)
        assert result.exit_code == 0, result.output
        kept = [tags(out / "phone.mp4", phone), tags(out / "iphone.mov", iphone), tags(out / "talk.mkv", ["title"])]
        # the chapters and each track's language say how the clip is made, not who made it: kept either way
        if strip:
            languages = [("eng", None), ("fra", None)]
            assert kept == [
                (dict.fromkeys(phone), 0, []),
                (dict.fromkeys(iphone), 0, []),
                ({"title": None}, 3, languages),
            ]
        else:
            languages = [("eng", "eng commentary"), ("fra", "fra commentary")]  # which track is which: had been lost
            assert kept == [(phone, 0, []), (iphone, 0, []), ({"title": "a talk"}, 3, languages)]


def add_cover(out) -> None:
    """A cover picture in the container `out`, as music files and downloaders carry one: a JPEG still as a video
    stream marked "attached picture"."""
    cover = out.add_stream("mjpeg", rate=1)
    cover.width, cover.height, cover.pix_fmt = 32, 32, "yuvj420p"
    cover.disposition = av.stream.Disposition.attached_pic
    still = av.VideoFrame.from_ndarray(np.full((32, 32, 3), 200, np.uint8), format="rgb24")
    still.pts = 0
    out.mux([*cover.encode(still), *cover.encode()])


def write_bad_inputs(folder):
    folder.mkdir()
    (folder / "text.mp4").write_text("not a video at all\n")
    good = make_clip(folder / "good.mp4", frames=40)
    (folder / "truncated.mp4").write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    with av.open(str(folder / "sound.m4a"), "w") as out:  # audio only
        stream = out.add_stream("aac", rate=48000)
        frame = av.AudioFrame.from_ndarray(np.zeros((1, 1024), np.float32), format="fltp", layout="mono")
        frame.sample_rate, frame.pts = 48000, 0
        out.mux(stream.encode(frame))
        out.mux(stream.encode())
    with av.open(str(folder / "song.m4a"), "w", format="mp4") as out:  # audio, and a cover picture as video
        stream = out.add_stream("aac", rate=48000)
        add_cover(out)
        frame = av.AudioFrame.from_ndarray(np.zeros((1, 1024), np.float32), format="fltp", layout="mono")
        frame.sample_rate, frame.pts = 48000, 0
        out.mux(stream.encode(frame))
        out.mux(stream.encode())
    with av.open(str(folder / "empty.mp4"), "w") as out:  # a video track with no frames (FFmpeg then shows none)
        stream = out.add_stream("libx264", rate=30)
        stream.width, stream.height = 64, 48
        out.start_encoding()  # the header, with no frame after it
    Image.fromarray(np.full((32, 32, 3), 128, np.uint8)).save(folder / "photo.png")
    (folder / "nothing.mp4").write_bytes(b"")  # a copy that never began
    return good


@pytest.mark.parametrize(
    "name, reason",
    [
        ("text.mp4", "text.mp4: not a readable video"),
        ("sound.m4a", "sound.m4a: no video stream"),
        ("empty.mp4", "empty.mp4: no video stream"),
        ("nothing.mp4", "nothing.mp4: an empty file (0 bytes), not a video"),  # had been "not a readable video"
        ("song.m4a", "song.m4a: no video stream (a mov,mp4,m4a,3gp,3g2,mj2 file with a cover picture)"),  # had been
        # deblurred as a clip of one frame, the cover
        # a recording cut off before the camera wrote its index (moov), last: had been "not a readable video (Invalid
        # data found when processing input)"
        ("truncated.mp4", "truncated.mp4: an MP4 or MOV without its index (moov): a recording that was never finished"),
    ],
)
def test_bad_clips_get_one_line_and_the_others_go_on(model, tmp_path, name, reason):
    write_bad_inputs(tmp_path / "in")
    out = tmp_path / "out"
    result = predict(
        tmp_path / "in" / name,
        tmp_path / "in" / "good.mp4",
        tmp_path / "in" / "photo.png",
        "--model",
        model,
        "--out",
        out,
    )
    assert result.exit_code == 1
    failed = [line for line in result.output.splitlines() if line.startswith("failed:")]
    assert len(failed) == 1 and reason in failed[0], result.output
    assert sorted(os.listdir(out)) == [OUTPUTS_MARK, "good.mp4", "photo.png"]  # nothing for the bad one, no work folder


def spliced(path, second_size=(60, 80), frames=4):
    """An MPEG-TS clip of two pieces, the second at `second_size` (height, width): two encoders into one stream,
    time going on, as a recorder that changes resolution writes it."""
    import fractions

    time_base = fractions.Fraction(1, 30)
    with av.open(str(path), "w", format="mpegts") as out:
        stream = out.add_stream("libx264", rate=30)
        stream.width, stream.height, stream.codec_context.time_base = 64, 48, time_base
        other = av.CodecContext.create("libx264", "w")
        other.height, other.width = second_size
        other.pix_fmt, other.time_base, other.framerate = "yuv420p", time_base, 30
        other.open()
        for piece, encoder in enumerate((stream.codec_context, other)):
            for i in range(frames):
                rgb = np.full((encoder.height, encoder.width, 3), 40 * (i + 1), np.uint8)
                frame = av.VideoFrame.from_ndarray(rgb, format="rgb24")
                frame.pts, frame.time_base = i + piece * frames, time_base
                for packet in [*encoder.encode(frame), *(encoder.encode() if i == frames - 1 else [])]:
                    packet.stream = stream
                    out.mux(packet)
    return path


def test_a_clip_whose_frame_size_changes_midway_keeps_its_first_size_and_every_frame(model, tmp_path):
    source = spliced(tmp_path / "clip.ts")  # had been a traceback: frames of two sizes in one model call
    result = predict(source, "--model", model, "--method", "network", "--out", tmp_path / "out", quiet=False)
    assert result.exit_code == 0, result.output
    assert "from frame 5 the clip's frames are 80x60: scaled to its first frames' 64x48" in result.output
    with av.open(str(tmp_path / "out" / "clip.mp4")) as container:
        sizes = [(frame.width, frame.height) for frame in container.decode(video=0)]
    assert sizes == [(64, 48)] * 8


def test_a_clip_whose_timestamps_go_back_is_refused_naming_the_frame(model, tmp_path):
    piece = make_clip(tmp_path / "piece.ts", frames=4, audio=False)
    source = tmp_path / "joined.ts"
    source.write_bytes(piece.read_bytes() * 2)  # `cat piece.ts piece.ts`: had been the muxer's 'Invalid argument'
    result = predict(source, "--model", model, "--out", tmp_path / "out")
    assert result.exit_code == 1
    assert "joined.ts: its timestamps go back at frame 5 (0.07 s after 0.17 s)" in result.output, result.output
    assert not (tmp_path / "out").exists() or os.listdir(tmp_path / "out") == []


def test_a_clips_cover_picture_is_left_out_and_said(model, tmp_path):
    source = tmp_path / "clip.mp4"
    with av.open(str(source), "w") as out:  # as downloaders write a clip with its thumbnail: a still as video 1
        video = out.add_stream("libx264", rate=30)
        video.width, video.height, video.pix_fmt = 64, 48, "yuv420p"
        add_cover(out)
        for index in range(3):
            frame = av.VideoFrame.from_ndarray(np.full((48, 64, 3), 60 * index, np.uint8), format="rgb24")
            frame.pts = index
            out.mux(video.encode(frame))
        out.mux(video.encode())
    result = predict(source, "--model", model, "--out", tmp_path / "out", quiet=False)
    assert result.exit_code == 0 and "left out video 1 (mjpeg): the clip's cover picture" in result.output
    assert facts(tmp_path / "out" / "clip.mp4")["streams"] == ["video"]


def test_a_clip_over_the_pixel_limit(model, tmp_path):
    source = make_clip(tmp_path / "clip.mp4", frames=2)
    result = predict(source, "--model", model, "--out", tmp_path / "out", "--max-pixels", "1000")
    assert result.exit_code == 1 and "64x48 = 3,072 pixels a frame, over the limit of 1,000" in result.output
    assert not (tmp_path / "out").exists() or os.listdir(tmp_path / "out") == []


def test_clips_are_known_by_content_found_in_folders(model, tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    make_clip(folder / "a.mov", frames=2, audio=False)
    make_clip(folder / "clip.mp4", frames=2, audio=False).rename(folder / "nameless")  # only its content says so
    assert probe_clip(folder / "nameless").frames == 2
    result = predict(folder, folder / "nameless", "--model", model, "--out", tmp_path / "out")
    assert result.exit_code == 0, result.output
    assert sorted(os.listdir(tmp_path / "out")) == [OUTPUTS_MARK, "a.mov", "nameless.mp4"]


def test_a_clips_side_by_side_is_blurry_beside_deblurred_as_a_player_shows_it_with_its_audio(model, tmp_path):
    # a phone's upright clip is stored on its side and turned by the player: its halves are stacked in storage
    source = make_clip(tmp_path / "clip.mp4", frames=6, fps=10, rotation=90)
    result = predict(source, "--model", model, "--out", tmp_path / "out", "--side-by-side", quiet=False)
    assert result.exit_code == 0, result.output
    assert sorted(os.listdir(tmp_path / "out")) == [
        OUTPUTS_MARK,
        "clip.mp4",
        "clip_side_by_side.mp4",
    ]  # no work folder left
    pair, alone = facts(tmp_path / "out" / "clip_side_by_side.mp4"), facts(tmp_path / "out" / "clip.mp4")
    width, height = alone["size"]
    assert pair == {**alone, "size": (width, 2 * height)}  # frames, timestamps, rotation, audio
    for blurry, deblurred, both in zip(
        pixels(source),
        pixels(tmp_path / "out" / "clip.mp4"),
        pixels(tmp_path / "out" / "clip_side_by_side.mp4"),
        strict=True,
    ):
        top, bottom = both[:height].astype(int), both[height:].astype(int)  # left and right, turned
        # encoded once more (noise encodes poorly: 2 to 7 levels); this model changes the frames by 60 levels
        assert np.abs(top - blurry).mean() < 10 and np.abs(bottom - deblurred).mean() < 10
        assert np.abs(top - deblurred).mean() > 30
    again = predict(source, "--model", model, "--out", tmp_path / "out", "--side-by-side")
    assert again.exit_code == 0 and "1 skipped" in again.output  # both there: done
    # The clip there without its side-by-side (a run stopped between the two, or one without --side-by-side): the
    # clip had failed as existing at each run. It is kept, and the side-by-side made beside it.
    (tmp_path / "out" / "clip_side_by_side.mp4").unlink()
    kept = (tmp_path / "out" / "clip.mp4").stat().st_ino
    again = predict(source, "--model", model, "--out", tmp_path / "out", "--side-by-side")
    assert again.exit_code == 0 and "wrote " in again.output and "clip_side_by_side.mp4" in again.output, again.output
    assert sorted(os.listdir(tmp_path / "out")) == [OUTPUTS_MARK, "clip.mp4", "clip_side_by_side.mp4"]
    assert (tmp_path / "out" / "clip.mp4").stat().st_ino == kept
    assert facts(tmp_path / "out" / "clip_side_by_side.mp4") == pair


def test_a_side_by_side_frame_shows_blurry_on_the_left_however_the_player_turns_the_clip():
    from deblur.video.predict import side_by_side_frame

    blurry, deblurred = np.zeros((2, 3, 3)), np.ones((2, 3, 3))
    for rotation in (0, 90, 180, 270, -90):
        both = side_by_side_frame(blurry, deblurred, rotation)
        shown = np.rot90(both, rotation // 90)  # as the player turns it, counter-clockwise
        assert shown.shape == (2, 6, 3) if rotation % 180 == 0 else (3, 4, 3)
        half = shown.shape[1] // 2
        assert (shown[:, :half] == 0).all() and (shown[:, half:] == 1).all(), rotation


def test_a_side_by_side_stopped_midway_resumes_with_its_clip(model, tmp_path):
    source = make_clip(tmp_path / "clip.mp4", frames=12, fps=10, audio=False)
    deblurrer = load_deblurrer(model, precision="float32")
    options = VideoOptions(segment_seconds=0.3, side_by_side=True)  # segments of 3 frames: 4 of them
    target = tmp_path / "out" / "clip.mp4"
    with pytest.raises(KeyboardInterrupt):
        deblur_clip(source, target, Interrupting(deblurrer, calls=2), options, log=lambda _: None)
    pair = tmp_path / "out" / "clip_side_by_side.mp4"
    assert not target.exists() and not pair.exists()
    assert sorted(path.name for path in work_folder(pair).iterdir()) == ["00000.mp4", "00001.mp4", "job.json"]
    (work_folder(pair) / "00001.mp4").unlink()  # as if stopped between a segment and its side-by-side
    report = deblur_clip(source, target, deblurrer, options, log=lambda _: None)
    assert report.resumed_frames == 3  # the segment whose side-by-side is missing is made again
    assert len(pixels(pair)) == 12 and facts(pair)["size"] == (2 * 64, 48)
    assert not work_folder(target).exists() and not work_folder(pair).exists()


@pytest.mark.parametrize("gop", [7, None])
def test_a_segment_read_from_its_key_frame_is_the_same_frames_as_read_from_the_start(tmp_path, gop):
    clip = probe_clip(make_clip(tmp_path / "keys.mp4", frames=40, gop=gop, audio=False))
    times = frame_times(clip)
    assert len(times) == 40 and times == sorted(times)
    every = list(read_frames(clip))
    for first, stop in [(0, 9), (9, 18), (17, 40), (39, 40)]:
        part = list(read_frames(clip, first, stop, times))
        assert [f.index for f in part] == list(range(first, stop))
        assert [f.pts for f in part] == [f.pts for f in every[first:stop]]
        assert all(np.array_equal(a.rgb, b.rgb) for a, b in zip(part, every[first:stop], strict=True))
