"""deblur serve's API, in process: the same output as `deblur predict`, and every kind of bad request."""

import errno
import io
import json
import os
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient
from helpers import save_model
from PIL import Image
from skimage import data as skimage_data
from starlette.requests import ClientDisconnect

from deblur.inference import load_deblurrer
from deblur.predict import Input, predict_one
from deblur.serve.app import STATIC, create_app
from deblur.serve.card import model_info
from deblur.serve.limits import Limits
from deblur.serve.service import DeblurService
from deblur.serve.work import NO_ROOM
from deblur.settings import WriteSettings
from deblur.ways import DEFAULT_METHOD


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return save_model(tmp_path_factory.mktemp("run"), width=4, blocks=1, norm="instance", zero_init_output=False)


LIMITS = Limits(max_bytes=2_000_000, max_pixels=1_000_000, waiting=2)


# The name the test client sends as Host: the server answers only the names it was started for (`KnownHost`).
TEST_HOST = ("testserver",)


def make_client(model, limits=LIMITS, method=DEFAULT_METHOD, **options):
    deblurrer = load_deblurrer(model, precision="float32", method=method)  # as `deblur serve` opens it
    info = model_info(model, "a test model", "float32", method=deblurrer.way().name)
    service = DeblurService(deblurrer, info, limits)
    return TestClient(create_app(service, **{"allowed_hosts": TEST_HOST, **options})), service


@pytest.fixture(scope="module")
def client(model):
    client, service = make_client(model)
    with client:  # runs the lifespan: warm-up, then the shutdown of the line
        yield client


def png_bytes(image: Image.Image, fmt: str = "PNG", **options) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format=fmt, **options)
    return buffer.getvalue()


def photo() -> Image.Image:
    return Image.fromarray(skimage_data.astronaut()[:90, :130])


def predicted(model, tmp_path, data: bytes, name: str, fmt: str = "png", method: str = DEFAULT_METHOD) -> Image.Image:
    """What `deblur predict` (float32) writes for the same file."""
    source = tmp_path / name
    source.write_bytes(data)
    target = tmp_path / f"predicted-{Path(name).stem}.{fmt}"
    deblurrer = load_deblurrer(model, precision="float32", method=method)
    predict_one(Input(source, Path(name), "photo", target), deblurrer, WriteSettings(fmt=fmt))
    return Image.open(target)


def assert_same_image(got: Image.Image, expected: Image.Image) -> None:
    """The same image up to rounding: two loads of a model may differ in a float's last bits, so a rare pixel lands
    one level away (8-bit), or a few in a hundred do (16-bit levels are 257 times finer)."""
    assert (got.mode, got.size) == (expected.mode, expected.size)
    a, b = np.asarray(got, np.int64), np.asarray(expected, np.int64)
    assert np.abs(a - b).max() <= 1
    assert np.mean(a != b) < (0.05 if got.mode.startswith("I") else 1e-3)


def post(client, data: bytes, name: str = "photo.png", **params):
    return client.post("/v1/deblur", params=params, files={"image": (name, data, "application/octet-stream")})


# === The same output as predict ===


def test_multipart_and_raw_body_give_predicts_output(client, model, tmp_path):
    data = png_bytes(photo())
    expected = predicted(model, tmp_path, data, "photo.png")
    response = post(client, data)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "image/png"
    assert response.headers["content-disposition"] == 'inline; filename="photo-deblurred.png"'
    assert float(response.headers["x-deblur-seconds"]) > 0
    assert response.headers["x-deblur-way"] == "network"  # the default, kernel-aware, runs a plain model as the network
    assert_same_image(Image.open(io.BytesIO(response.content)), expected)
    raw = client.post("/v1/deblur", content=data, headers={"content-type": "image/png"})
    assert raw.status_code == 200
    assert raw.content == response.content  # the same server: exactly the same


def test_a_photo_may_ask_for_a_method_and_the_answer_names_its_way(client, model, tmp_path):
    from test_shake import shaken

    _, blurry, _ = shaken(15, seed=4)  # blurred all over by a shake the kernel path estimates
    data = png_bytes(Image.fromarray((blurry * 255).round().astype(np.uint8)))
    expected = predicted(model, tmp_path, data, "shaken.png", "png", "kernel")
    for ask in ("query", "field"):
        if ask == "query":
            kernel = post(client, data, name="shaken.png", method="kernel")
        else:
            files = {"image": ("shaken.png", data, "application/octet-stream")}
            kernel = client.post("/v1/deblur", files=files, data={"method": "kernel"})
        assert kernel.status_code == 200 and kernel.headers["x-deblur-way"] == "kernel", kernel.text
        assert_same_image(Image.open(io.BytesIO(kernel.content)), expected)
    assert "x-deblur-maybe-shaken" not in kernel.headers  # it named what auto, retired, left to the network
    network = post(client, data, method="network")
    assert network.headers["x-deblur-way"] == "network" and network.content != kernel.content
    wrong = post(client, data, method="blind")
    assert (
        wrong.status_code == 422
        and wrong.json()["detail"] == "method must be one of kernel-aware, network, kernel; got 'blind'"
    )
    files = {"image": ("shaken.png", data, "application/octet-stream")}
    retired = client.post("/v1/deblur", files=files, data={"method": "auto"})
    assert retired.status_code == 422 and "use the default, kernel-aware" in retired.json()["detail"]


def test_a_server_without_the_model_refuses_a_method_that_needs_it(model):
    deblurrer = load_deblurrer(model, precision="float32", method="kernel")
    service = DeblurService(deblurrer, model_info(model, "a test model", "float32", method="kernel"), LIMITS)
    with TestClient(create_app(service, allowed_hosts=TEST_HOST)) as kernel_only:
        data = png_bytes(photo())
        for method in ("network", "kernel-aware"):
            refused = post(kernel_only, data, method=method)
            assert refused.status_code == 422, refused.text
            detail = f"method {method} needs the model, and this runs without one (method kernel)"
            assert refused.json()["detail"] == detail
        assert post(kernel_only, data, method="kernel").headers["x-deblur-way"] == "kernel"
        said = kernel_only.get("/v1/model").json()  # no model runs: no precision to name
        assert said["method"] == "kernel" and said["precision"] is None
        # The ensemble averages the network's outputs: asked of the kernel way, refused before any work is queued.
        for params in ({"ensemble": "2"}, {"ensemble": "4", "method": "kernel"}):
            refused = post(kernel_only, data, **params)
            assert refused.status_code == 422, refused.text
            assert "and the kernel way runs no network" in refused.json()["detail"]


@pytest.mark.parametrize(
    "name, make",
    [
        ("gray.png", lambda: png_bytes(photo().convert("L"))),
        ("alpha.png", lambda: png_bytes(photo().convert("RGBA"))),
        ("sixteen.png", lambda: png_bytes(Image.fromarray(np.asarray(photo().convert("L")).astype(np.uint16) * 257))),
        ("turned.jpg", lambda: _exif_rotated_jpeg()),
        ("deep.png", lambda: _deep_colour_png()),  # had failed on read_bytes, which an upload has not
        ("float.tif", lambda: _float_tiff()),
    ],
)
def test_kinds_of_photo_come_back_as_predict_gives_them(client, model, tmp_path, name, make):
    data = make()
    expected = predicted(model, tmp_path, data, name)
    response = post(client, data, name)
    assert response.status_code == 200, response.text
    assert_same_image(Image.open(io.BytesIO(response.content)), expected)


def _deep_colour_png() -> bytes:
    from deblur.photo16 import encode_png16

    return encode_png16(np.asarray(photo().convert("RGB")).astype(np.uint16) * 257)


def _float_tiff() -> bytes:
    import tifffile

    buffer = io.BytesIO()
    tifffile.imwrite(buffer, np.asarray(photo().convert("RGB"), np.float32) / 255, photometric="rgb")
    return buffer.getvalue()


def _exif_rotated_jpeg() -> bytes:
    exif = Image.Exif()
    exif[0x0112] = 6  # orientation: turned 90 degrees
    return png_bytes(photo().convert("RGB"), "JPEG", exif=exif, quality=95)


def test_format_and_ensemble_options(client, model, tmp_path):
    data = png_bytes(photo())
    response = post(client, data, format="jpg", ensemble="4")
    assert response.status_code == 200 and response.headers["content-type"] == "image/jpeg"
    source = tmp_path / "photo.png"
    source.write_bytes(data)
    deblurrer = load_deblurrer(model, precision="float32", ensemble=4)
    predict_one(Input(source, Path("photo.png"), "photo", tmp_path / "p.jpg"), deblurrer, WriteSettings(fmt="jpg"))
    got, expected = (np.asarray(Image.open(f), np.float64) for f in (io.BytesIO(response.content), tmp_path / "p.jpg"))
    assert got.shape == expected.shape and np.abs(got - expected).mean() < 0.05
    assert post(client, data, ensemble="3").status_code == 422
    assert post(client, data, format="gif").status_code == 422


def test_what_the_format_cannot_hold_is_said_in_a_header(client):
    rgb = np.asarray(photo())
    data = png_bytes(Image.fromarray(np.dstack([rgb, np.full(rgb.shape[:2], 128, np.uint8)])))
    assert post(client, data, format="jpg").headers["x-deblur-lost"] == "transparency"
    assert "x-deblur-lost" not in post(client, data, format="webp").headers  # webp keeps it


def test_a_small_photo_a_network_deblurred_is_said_in_a_header(client):
    data = png_bytes(photo())  # 130x90: a crop, deblurred alone
    assert post(client, data).headers["x-deblur-small"] == "384"
    assert "x-deblur-small" not in post(client, data, method="kernel").headers  # no network ran
    assert "x-deblur-small" not in post(client, data, strength="0").headers  # the photo as it came
    large = png_bytes(Image.fromarray(skimage_data.astronaut()[:400, :384]))
    assert "x-deblur-small" not in post(client, large).headers


def test_strength_blends_the_photo_and_predicts_output(client, model, tmp_path):
    data = png_bytes(photo())
    source = tmp_path / "photo.png"
    source.write_bytes(data)
    back = np.asarray(Image.open(io.BytesIO(post(client, data, strength="0").content)))
    assert np.array_equal(back, np.asarray(photo()))  # 0%: the photo itself
    half = post(client, data, strength="50")
    assert half.status_code == 200
    item = Input(source, Path("photo.png"), "photo", tmp_path / "half.png")
    predict_one(item, load_deblurrer(model, precision="float32", strength=0.5), WriteSettings())
    assert_same_image(Image.open(io.BytesIO(half.content)), Image.open(tmp_path / "half.png"))
    assert post(client, data, strength="151").status_code == 422
    assert post(client, data, strength="-1").status_code == 422


def test_every_error_has_one_shape_naming_the_option(client):
    data = png_bytes(photo())
    for query, option in (
        ({"strength": "lots"}, "strength"),
        ({"ensemble": "3"}, "ensemble"),
        ({"format": "gif"}, "format"),
    ):
        refused = post(client, data, **query)
        assert refused.status_code == 422
        detail = refused.json()["detail"]
        assert isinstance(detail, str) and detail.startswith(f"{option}: ") and repr(query[option]) in detail


def test_options_as_multipart_fields_and_unknown_ones_refused_by_name(client):
    data = png_bytes(photo())

    def send(fields: dict, **params):
        files = {"image": ("photo.png", data, "application/octet-stream")}
        return client.post("/v1/deblur", params=params, data=fields, files=files)

    # What multipart clients send: the options as form fields, taken as the query parameters are.
    as_fields = send({"strength": "0", "format": "jpg"})
    as_params = post(client, data, strength="0", format="jpg")
    assert as_fields.status_code == 200 and as_fields.headers["content-type"] == "image/jpeg"
    assert as_fields.content == as_params.content != post(client, data).content
    assert send({"strength": "151"}).status_code == 422
    assert "ensemble must be one of" in send({"ensemble": "3"}).json()["detail"]
    for answer, name in (
        (post(client, data, strenght="50"), "unknown parameter(s): strenght"),
        (send({"strenght": "50"}), "unknown field(s): strenght"),
        (send({"strength": "50"}, strength="60"), "given both as a parameter and as a field: strength"),
    ):
        assert answer.status_code == 400 and name in answer.json()["detail"], answer.text


# === Bad input ===


def huge_png_header(width: int, height: int) -> bytes:
    """A PNG that declares width x height but holds a few bytes: decoding it would allocate gigabytes."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b"")
    )


@pytest.mark.parametrize(
    "data, status, reason",
    [
        (b"hello, not a photo", 415, "not.png: not a readable image (not in a format Pillow reads)"),
        (png_bytes(photo())[:2000], 400, "not.png: not a readable image (image file is truncated)"),
        (huge_png_header(100_000, 100_000), 400, "10,000,000,000 pixels, over the limit of 1,000,000"),
        (png_bytes(Image.new("RGB", (4, 40))), 400, "4x40 is too small"),
    ],
)
def test_bad_photos_are_refused_with_the_reason(client, data, status, reason):
    response = post(client, data, "not.png")
    assert response.status_code == status
    assert reason in response.json()["detail"]


def test_no_photo(client):
    response = client.post("/v1/deblur", files={"note": (None, "a form with no file in it")})
    assert response.status_code == 400 and "no photo" in response.json()["detail"]
    response = client.post("/v1/deblur", content=b"")
    assert response.status_code == 400 and "no photo" in response.json()["detail"]


def test_body_over_the_limit(client):
    response = post(client, b"\0" * 2_100_000)
    assert response.status_code == 413
    assert response.json()["detail"] == "the upload is over the limit of 2,000,000 bytes"

    def chunks():  # no Content-Length: refused as the body grows past the limit
        for _ in range(30):
            yield b"\0" * 100_000

    response = client.post("/v1/deblur", content=chunks(), headers={"content-type": "image/png"})
    assert response.status_code == 413


def test_an_error_inside_inference_answers_500_and_the_server_goes_on(model, monkeypatch):
    client, service = make_client(model)
    with client:
        real = service.deblurrer

        def broken(*args, **kwargs):
            raise RuntimeError("out of memory, say")

        broken.way = real.way  # asked by the route before the job is queued
        service.deblurrer = broken
        response = post(client, png_bytes(photo()))
        assert response.status_code == 500
        assert "photo.png failed: RuntimeError: out of memory, say" in response.json()["detail"]
        service.deblurrer = real
        assert post(client, png_bytes(photo())).status_code == 200
        assert client.get("/healthz").json()["status"] == "ok"


def test_a_failure_outside_inference_answers_500_in_json(model, monkeypatch):
    """A name Latin-1 could not hold once failed as the answer was built, in plain text; any such bug answers as
    every other error does."""
    import deblur.serve.routes

    def broken(name):
        raise UnicodeEncodeError("latin-1", name, 0, 1, "ordinal not in range(256)")

    monkeypatch.setattr(deblur.serve.routes, "content_disposition", broken)
    deblurrer = load_deblurrer(model, precision="float32")
    service = DeblurService(deblurrer, model_info(model, "a test model", "float32"), LIMITS)
    with TestClient(create_app(service, allowed_hosts=TEST_HOST), raise_server_exceptions=False) as client:
        response = post(client, png_bytes(photo()))
    assert response.status_code == 500
    assert response.json() == {"detail": "the server failed: UnicodeEncodeError"}


def test_no_file_is_left_on_disk(client, tmp_path, monkeypatch):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    # Over a megabyte: the multipart parser spools it to a temporary file.
    data = png_bytes(Image.fromarray(np.random.default_rng(0).integers(0, 256, (700, 800, 3), dtype=np.uint8)))
    assert len(data) > 1_100_000
    assert post(client, data).status_code == 200
    assert os.listdir(tmp_path) == []


# === Safety ===


def test_cross_origin_requests_are_refused_unless_allowed(client, model):
    data = png_bytes(photo())
    refused = client.post("/v1/deblur", content=data, headers={"origin": "http://elsewhere.example"})
    assert refused.status_code == 403 and "http://elsewhere.example" in refused.json()["detail"]
    same = client.post("/v1/deblur", content=data, headers={"origin": "http://testserver"})
    assert same.status_code == 200
    allowed, _ = make_client(model, cors_origins=("http://elsewhere.example",))
    with allowed:
        response = allowed.post("/v1/deblur", content=data, headers={"origin": "http://elsewhere.example"})
        assert response.status_code == 200
        assert response.headers["access-control-allow-origin"] == "http://elsewhere.example"
        exposed = response.headers["access-control-expose-headers"].lower()
        read = ("X-Deblur-Way", "X-Deblur-Seconds", "X-Deblur-Lost", "X-Deblur-Small")
        assert all(name.lower() in exposed for name in read)  # a script reads them
        preflight = allowed.options(
            "/v1/jobs/any",
            headers={"origin": "http://elsewhere.example", "access-control-request-method": "DELETE"},
        )
        assert preflight.status_code == 200 and "DELETE" in preflight.headers["access-control-allow-methods"]


def test_the_page_sends_as_clips_the_files_predict_takes_as_clips():
    # A file the browser gives no type sends by its name: the page's suffixes are predict's.
    import re

    from deblur.imageio import READ_SUFFIXES
    from deblur.video.clips import VIDEO_SUFFIXES

    pattern = re.search(r"const VIDEO_SUFFIX = /(.+)/i;", (STATIC / "app.js").read_text()).group(1)
    page = re.compile(pattern, re.IGNORECASE)
    assert [suffix for suffix in sorted(VIDEO_SUFFIXES) if not page.search(f"clip{suffix}")] == []
    assert [suffix for suffix in sorted(READ_SUFFIXES) if page.search(f"photo{suffix}")] == []


def test_the_page_and_its_assets_need_no_internet(client):
    page = client.get("/")
    assert page.status_code == 200 and "<title>deblur</title>" in page.text
    for asset in sorted(STATIC.iterdir()):
        text = asset.read_text().replace('xmlns="http://www.w3.org/2000/svg"', "")  # a name, not a download
        assert "http://" not in text and "https://" not in text, asset.name
        assert client.get(f"/static/{asset.name}").status_code == 200
    docs = client.get("/docs").text
    assert "swagger-ui-bundle.js" in docs and "cdn" not in docs.lower()
    for url in ("/static-offline-docs/swagger-ui-bundle.js", "/static-offline-docs/swagger-ui.css"):
        assert client.get(url).status_code == 200
    spec = client.get("/openapi.json").json()
    assert {"/v1/deblur", "/v1/model", "/healthz"} <= set(spec["paths"])
    body = spec["paths"]["/v1/deblur"]["post"]["requestBody"]["content"]
    assert "multipart/form-data" in body and "image/*" in body


# === What it says about itself ===


def test_model_and_health(client):
    info = client.get("/v1/model").json()
    # a plain model under the default method runs as the network, and the server says so
    assert info["description"] == "a test model" and info["precision"] == "float32" and info["method"] == "network"
    assert info["architecture"]["width"] == 4
    assert info["limits"] == {"max_bytes": 2_000_000, "max_pixels": 1_000_000, "line": 3}
    health = client.get("/healthz").json()
    assert health["status"] == "ok" and health["running"] == 0 and health["capacity"] == 3
    assert health["seconds_per_megapixel"] > 0


def test_no_server_path_unless_asked_for(client, model):
    text = client.get("/v1/model").text
    assert str(model.parent) not in text and "path" not in client.get("/v1/model").json()
    assert model_info(model, "a test model", "float32", show_path=True)["path"] == str(model.resolve())


def test_card_figures_of_the_shipped_model_and_of_a_run(model):
    from deblur.paths import shipped_model

    card = model_info(shipped_model(), "shipped", "float32")["card"]
    assert card["title"].startswith("Figures") and card["source"] == "MODEL_CARD.md"
    assert card["columns"][:4] == ["data", "blurry PSNR / SSIM", "model PSNR / SSIM", "gain"]
    assert any("11 real motion-blur pairs" in row[0] and row[3] == "+0.41 dB" for row in card["rows"])
    # One table: the card's second table (the pairs one by one, other columns) is not appended to the first.
    assert all(len(row) == len(card["columns"]) for row in card["rows"])
    lines = [
        {"epoch": 1, "val_psnr": 25.0, "val_psnr_blurry": 24.5},
        {"epoch": 2, "val_psnr": 26.0, "val_psnr_blurry": 25.0},
    ]
    (model.parent / "metrics.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    try:
        card = model_info(model, "run", "float32")["card"]
    finally:
        (model.parent / "metrics.jsonl").unlink()
    assert card["rows"] == [["2", "25.00", "26.00", "+1.00 dB"]]


@pytest.mark.parametrize(
    "raised, status, body",
    [
        (OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)), 507, {"detail": NO_ROOM}),
        (ClientDisconnect(), 499, None),  # hung up halfway: not the server's error, no traceback in its log
    ],
)
def test_an_upload_that_finds_the_disk_full_or_the_client_gone(client, monkeypatch, raised, status, body):
    async def reading_fails(request):  # a multipart part over 1 MiB is spooled to the server's disk
        raise raised

    monkeypatch.setattr("deblur.serve.routes._read_photo", reading_fails)
    answer = client.post("/v1/deblur", files={"image": ("p.png", png_bytes(photo()), "image/png")})
    assert answer.status_code == status
    assert body is None or answer.json() == body


def test_a_service_is_refused_a_deblurrer_or_limits_of_another_kind(model):
    # a model's path had ended on AttributeError in the first request, a dict of limits on "... 'waiting'"
    from deblur.errors import SettingError

    info = model_info(model, "a test model", "float32")
    with pytest.raises(SettingError, match="deblurrer must be a Deblurrer, not PosixPath: deblur.load_deblurrer"):
        DeblurService(model, info)
    with pytest.raises(SettingError, match="limits must be a deblur.serve.limits.Limits, not dict: Limits"):
        DeblurService(load_deblurrer(model, precision="float32"), info, {"waiting": 2})
    assert DeblurService(load_deblurrer(model, precision="float32"), info).limits == Limits()
