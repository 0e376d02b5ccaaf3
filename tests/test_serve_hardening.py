"""deblur serve on loopback against what a hostile client and odd photos send: names in other scripts, photos far
wider than tall, DNS rebinding, a JPEG far shorter than its pixels, unknown file fields and repeated parameters,
tiny photos and a busy line. Each through the real server, as a client would send it."""

import io
import json
import threading
import time
import urllib.parse

import numpy as np
import pytest
from helpers import save_model
from PIL import Image

from deblur.serve.loadtest import multipart, photos, request, running_server


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    model = save_model(tmp_path_factory.mktemp("run"), width=4, blocks=1, norm="instance", zero_init_output=False)
    with running_server("--model", str(model), "--queue", "0", "--allow-host", "photos.lan") as running:
        yield running


def post(server, data: bytes, name: str = "photo.png", query: str = "", headers: dict | None = None):
    body, kind = multipart(name, data)
    return request(
        server.host, server.port, "POST", "/v1/deblur" + query, body, {"Content-Type": kind, **(headers or {})}
    )


def png(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def detail(body: bytes) -> str:
    return json.loads(body)["detail"]


def test_a_name_in_another_script_comes_back_in_utf8(server):
    status, headers, _ = post(server, photos()["small.png"], name="照片.png")
    assert status == 200
    quoted = urllib.parse.quote("照片-deblurred.png")
    assert headers["content-disposition"] == f"inline; filename=\"__-deblurred.png\"; filename*=UTF-8''{quoted}"


@pytest.mark.parametrize("size", [(3000, 8), (8, 3000), (20000, 64)])
def test_photos_far_wider_than_tall_go_through_the_kernel_path(server, size):
    pixels = np.random.default_rng(0).integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)
    status, headers, body = post(server, png(Image.fromarray(pixels)), query="?method=kernel")
    assert status == 200, body[:300]
    assert headers["x-deblur-way"] == "kernel"
    assert Image.open(io.BytesIO(body)).size == size


def test_a_host_name_the_server_was_not_started_for_is_refused(server):
    data = photos()["small.png"]
    evil = f"evil.example:{server.port}"
    status, _, body = post(server, data, headers={"Host": evil, "Origin": f"http://{evil}"})
    assert status == 403 and "evil.example" in detail(body) and "--allow-host" in detail(body)
    assert request(server.host, server.port, "GET", "/", headers={"Host": evil})[0] == 403
    for host in (f"localhost:{server.port}", f"127.0.0.1:{server.port}", "[::1]", "photos.lan", "app.localhost"):
        status, _, body = post(server, data, headers={"Host": host, "Origin": f"http://{host}"})
        assert status == 200, (host, body[:200])


def test_a_jpeg_far_shorter_than_its_pixels_is_refused_at_once(server):
    buffer = io.BytesIO()
    Image.new("RGB", (7000, 7000), (120, 130, 140)).save(buffer, "JPEG", quality=90)
    cut = buffer.getvalue()[:3000] + b"\xff\xd9"  # the header whole, the pixels' data cut, the end marker kept
    assert Image.open(io.BytesIO(cut)).size == (7000, 7000)
    started = time.monotonic()
    status, _, body = post(server, cut, name="cut.jpg")
    assert status == 400 and time.monotonic() - started < 10
    assert (
        detail(body)
        == "cut.jpg: truncated: a 7000x7000 JPEG needs at least 95,703 bytes for its pixels, and the file has 3,002"
    )


def test_a_tiff_of_several_pages_is_refused_as_an_animation_is(server):
    buffer = io.BytesIO()
    pages = [Image.new("RGB", (64, 48), colour) for colour in ("red", "green")]
    pages[0].save(buffer, "TIFF", save_all=True, append_images=pages[1:])
    status, _, body = post(server, buffer.getvalue(), name="scan.tif")
    assert status == 400 and detail(body).startswith("scan.tif: a TIFF of 2 pages; deblur takes one photo a file")


def test_a_file_under_another_field_and_a_parameter_given_twice_are_refused_by_name(server):
    data = photos()["small.png"]
    body, kind = multipart("photo.png", data)
    other = body.replace(b'name="image"', b'name="other"', 1)
    status, _, answer = request(server.host, server.port, "POST", "/v1/deblur", other, {"Content-Type": kind})
    assert status == 400 and detail(answer) == "unknown file field(s): other; the photo goes in 'image'"
    status, _, answer = post(server, data, query="?format=png&format=jpg")
    assert status == 400 and detail(answer) == "given more than once: format"


def test_a_tiny_photo_leaves_the_speed_estimate_alone(server):
    def rate() -> float:
        return json.loads(request(server.host, server.port, "GET", "/healthz")[2])["seconds_per_megapixel"]

    before = rate()
    assert post(server, png(Image.new("RGB", (5, 5), "gray")))[0] == 200
    assert rate() == before  # the 5x5 photo's time is all overhead: it once sent the rate up 350-fold


def test_retry_after_counts_the_work_in_line(server):
    """With the line full, Retry-After says how long the photo being deblurred has left, from its size, not the
    time of the last (tiny) photo."""
    assert post(server, png(Image.new("RGB", (5, 5), "gray")))[0] == 200
    answer = {}

    def slow() -> None:
        started = time.monotonic()
        answer["status"] = post(server, photos()["hd.png"], query="?ensemble=8")[0]
        answer["seconds"] = time.monotonic() - started

    thread = threading.Thread(target=slow)
    thread.start()
    while b'"running":1' not in request(server.host, server.port, "GET", "/healthz")[2]:
        time.sleep(0.01)
    status, headers, _ = post(server, photos()["small.png"])
    thread.join(300)
    assert status == 503 and answer["status"] == 200
    # the estimate is the measured speed times the pixels: about the photo's own time, far from the 1 s it said
    assert int(headers["retry-after"]) >= min(answer["seconds"] / 3, 5), (headers["retry-after"], answer["seconds"])
