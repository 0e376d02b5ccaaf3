"""deblur serve's page in a real browser: Debian's Chromium, driven by Playwright, against a real server.

In CI (CI=true, where `.ci/run` installs Chromium) the browser must start, or the test fails. Elsewhere, without a
Chromium on the PATH or one Playwright has already downloaded, it is skipped, saying how to get one: a fresh
machine's README test command must pass, and Playwright's own download needs the internet. With
DEBLUR_SCREENSHOTS=folder the screenshot of the page is also kept there (the docs' picture comes from this test).
"""

import base64
import contextlib
import io
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from skimage import data as skimage_data

from deblur.serve.loadtest import multipart, request, running_server

# Without the background-networking flags Chromium keeps trying hosts a closed network refuses.
FLAGS = ["--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update"]
FLAGS += ["--disable-sync", "--disable-quic"]


NO_BROWSER = (
    "no Chromium here: install one (Debian and Ubuntu: apt-get install -y chromium) or let Playwright fetch its "
    "own (python -m playwright install chromium); CI (CI=true) requires it"
)


def chromium(playwright) -> str | None:
    """The system's Chromium (Debian's package, as `.ci/run` installs it), else the one Playwright has already
    downloaded (None: Playwright's own path). Without either: a failure in CI, a skip elsewhere."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    if not Path(playwright.chromium.executable_path).exists():
        if os.environ.get("DEBLUR_TESTS_IN_CI"):
            pytest.fail(NO_BROWSER)
        pytest.skip(NO_BROWSER)
    return None


def blurry_photo(path: Path) -> Path:
    """A real photograph with camera shake, the kind of photo the page is for."""
    from deblur.config import SynthConfig
    from deblur.data.degrade import degrade

    sharp = skimage_data.coffee()  # 600x400
    blurry, _ = degrade(sharp, np.random.default_rng(3), SynthConfig(min_length=9, max_length=11, noise=0.005))
    Image.fromarray(blurry).save(path)
    return path


@pytest.fixture(scope="module")
def server():
    """One `deblur serve` with the model shipped with deblur for the page's tests: each start and stop takes about
    15 s of the suite, and no test here leaves the server other than it found it."""
    with running_server() as started:
        yield started


@contextlib.contextmanager
def opened_page(**options):
    """A page in Chromium (headless, 900x900, `options` as Playwright's `new_page` takes them) and the list its
    script errors go to."""
    from playwright.sync_api import sync_playwright

    flags = FLAGS + (["--no-sandbox"] if os.geteuid() == 0 else [])
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium(playwright), args=flags, headless=True)
        page = browser.new_page(viewport={"width": 900, "height": 900}, **options)
        errors = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        yield page, errors
        browser.close()


@pytest.mark.slow
def test_page_deblurs_a_dropped_and_a_picked_photo(server, tmp_path):
    picked = blurry_photo(tmp_path / "coffee.png")
    dropped = tmp_path / "coffee-dropped.png"
    dropped.write_bytes(picked.read_bytes())
    with opened_page(accept_downloads=True) as (page, errors):
        served = []  # every request the page sends to the server
        page.on("request", lambda sent: served.append(sent.url) if sent.url.startswith(server.url) else None)
        page.goto(server.url + "/")
        page.wait_for_function("document.querySelector('#model').textContent.startsWith('Model: ')")
        assert "the pretrained kernel-aware network shipped with deblur" in page.inner_text("#model")
        assert "the model, given both, keeps the deconvolution where it is right" in page.inner_text("#model")
        assert page.locator("#ensemble").is_enabled()  # a server that runs the network offers its ensemble
        assert re.search(r", running in (b?float16|float32)\.", page.inner_text("#model"))  # the model's precision
        from deblur.paths import shipped_model

        assert str(shipped_model().parent) not in page.content()  # no path on the server reaches a visitor
        assert page.locator("#card-table tr").count() >= 4  # the model card's figures

        page.set_input_files("#files", str(picked))
        # The second photo arrives as a drop on the drop zone, as a file dragged from the desktop would.
        page.evaluate(
            """([name, data]) => {
                const bytes = Uint8Array.from(atob(data), (c) => c.charCodeAt(0));
                const transfer = new DataTransfer();
                transfer.items.add(new File([bytes], name, { type: "image/png" }));
                document.querySelector("#drop").dispatchEvent(new DragEvent("drop", { dataTransfer: transfer }));
            }""",
            [dropped.name, base64.b64encode(dropped.read_bytes()).decode()],
        )
        page.wait_for_function(
            "document.querySelectorAll('.photo[data-state=done]').length === 2", timeout=120_000, polling=200
        )
        card = page.locator(".photo", has_text="coffee.png").first
        sizes = card.evaluate(
            "(c) => [...c.querySelectorAll('.stage img')].map((i) => [i.complete, i.naturalWidth, i.naturalHeight])"
        )
        assert sizes == [[True, 600, 400], [True, 600, 400]]  # blurry and deblurred, both shown whole
        assert not card.locator(".videos").is_visible()  # a photo's card shows no video players
        way = card.locator(".timing").inner_text()  # which way the photo went
        assert way.startswith("deblurred by the kernel-aware network in "), way  # the default

        slider = card.locator(".slider")
        slider.evaluate("(s) => { s.value = 30; s.dispatchEvent(new Event('input')); }")
        assert card.locator(".after").evaluate("(i) => i.style.clipPath") == "inset(0px 0px 0px 30%)"
        assert card.locator(".divider").evaluate("(d) => d.style.left") == "30%"
        screenshot = page.screenshot(full_page=True)
        if os.environ.get("DEBLUR_SCREENSHOTS"):
            Path(os.environ["DEBLUR_SCREENSHOTS"], "serve-page.png").write_bytes(screenshot)
        page.set_viewport_size({"width": 480, "height": 900})  # narrower than the photo: fit shrinks it
        width = "(i) => i.getBoundingClientRect().width"
        assert card.locator(".after").evaluate(width) < 480
        card.locator(".zoom").click()  # full resolution: one image pixel per screen pixel, scrolled
        assert card.locator(".after").evaluate(width) == card.locator(".before").evaluate(width) == 600
        assert card.locator(".viewport").evaluate("(v) => v.scrollWidth > v.clientWidth")

        # Strength: blended in the browser, no new request; 0% is the blurry photo, 150% goes past the result.
        # Read back from the middle 120x160 of the shown result: the whole photo took 17 s of the suite, all of it in
        # moving pixels between the browser and Python.
        requests_before = len(served)
        strength = card.locator(".strength")
        top, left, rows, columns = 140, 220, 120, 160
        shown_pixels = f"""(c) => new Promise((resolve) => {{
            const image = c.querySelector('.after');
            const read = () => {{
                const canvas = new OffscreenCanvas(image.naturalWidth, image.naturalHeight);
                const context = canvas.getContext('2d');
                context.drawImage(image, 0, 0);
                resolve(Array.from(context.getImageData({left}, {top}, {columns}, {rows}).data));
            }};
            image.complete ? read() : image.addEventListener('load', read, {{ once: true }});
        }})"""
        at = {}
        for value in ("0", "150", "100"):
            strength.evaluate(f"(s) => {{ s.value = {value}; s.dispatchEvent(new Event('input')); }}")
            page.wait_for_function(
                f"(c) => c.dataset.strength === '{value}'", arg=card.element_handle(), timeout=30_000
            )
            assert card.locator(".strength-value").inner_text() == f"{value}%"
            at[value] = np.array(card.evaluate(shown_pixels), dtype=np.int16).reshape(rows, columns, 4)[..., :3]
        blurry_pixels = np.asarray(Image.open(picked).convert("RGB"), dtype=np.int16)[
            top : top + rows, left : left + columns
        ]
        assert np.abs(at["0"] - blurry_pixels).max() <= 1  # the blurry photo back
        change_100 = at["100"] - blurry_pixels
        change_150 = at["150"] - blurry_pixels
        assert np.abs(change_150).mean() > 1.3 * np.abs(change_100).mean()  # further in the same direction
        assert len(served) == requests_before  # all in the browser

        with page.expect_download() as download:
            card.locator(".download").click()
        assert download.value.suggested_filename == "coffee-deblurred.png"
        downloaded = Path(download.value.path()).read_bytes()
        assert errors == []

        body, kind = multipart("coffee.png", picked.read_bytes())
        status, _, from_api = request(server.host, server.port, "POST", "/v1/deblur", body, {"Content-Type": kind})
    assert status == 200 and downloaded == from_api
    deblurred = np.asarray(Image.open(io.BytesIO(downloaded)))
    assert deblurred.shape == (400, 600, 3) and not np.array_equal(deblurred, np.asarray(Image.open(picked)))


@pytest.mark.slow
def test_a_kernel_way_server_page_offers_no_ensemble(server):
    """Such a server refuses an ensemble (the kernel path runs no network to average): the page says how photos go,
    names no precision and leaves the ensemble at 1. The server's answer about itself is changed on its way to the
    page, as one started with --method kernel gives it (tests/test_serve.py checks the refusal)."""

    def as_kernel_server(route):
        route.fulfill(json={**route.fetch().json(), "method": "kernel", "precision": None})

    with opened_page() as (page, errors):
        page.route("**/v1/model", as_kernel_server)
        page.goto(server.url + "/")
        page.wait_for_function("document.querySelector('#model').textContent.startsWith('Model: ')")
        said = page.inner_text("#model")
        assert "Photos go by the camera-shake kernel path, not the model." in said
        assert "running in" not in said  # no model runs: its precision says nothing
        ensemble = page.locator("#ensemble")
        assert ensemble.is_disabled() and ensemble.input_value() == "1"
        assert "runs no network" in ensemble.get_attribute("title")
        assert errors == []


@pytest.mark.slow
def test_a_photo_named_in_another_script_downloads_under_its_own_name(server, tmp_path):
    """The server sends such a name as RFC 6266's UTF-8 `filename*` beside an ASCII `filename`: the page takes
    the first."""
    path = tmp_path / "照片.png"
    Image.fromarray(skimage_data.astronaut()[:96, :128]).save(path)
    with opened_page() as (page, errors):
        page.goto(server.url + "/")
        page.set_input_files("#files", str(path))
        page.wait_for_function("document.querySelectorAll('.photo[data-state=done]').length === 1", timeout=120_000)
        card = page.locator(".photo").first
        assert card.locator(".download").get_attribute("download") == "照片-deblurred.png"
        assert errors == []


@pytest.mark.slow
def test_what_the_chosen_format_cannot_hold_and_a_small_photo_are_said_on_the_card(server, tmp_path):
    rgba = np.dstack([skimage_data.astronaut()[:96, :128], np.full((96, 128), 128, np.uint8)])
    Image.fromarray(rgba).save(tmp_path / "logo.png")
    with opened_page() as (page, errors):
        page.goto(server.url + "/")
        page.select_option("#format", "jpg")
        page.set_input_files("#files", str(tmp_path / "logo.png"))
        page.wait_for_function("document.querySelectorAll('.photo[data-state=done]').length === 1", timeout=120_000)
        said = page.locator(".photo .timing").first.inner_text()
        lost = "; its transparency flattened onto white in JPEG (PNG keeps it)"
        small = "; under 384 px a side, a crop comes out better deblurred within its photo, cropped after"
        assert said.endswith(f" s on the server{lost}{small}"), said
        assert errors == []


@pytest.mark.slow
def test_page_deblurs_a_clip_as_a_job(server, tmp_path):
    """A clip dropped on the page: uploaded as a job, followed to the end, shown beside the input, downloaded."""
    import av
    from helpers import make_clip

    clip = make_clip(tmp_path / "walk.mp4", frames=6, size=(96, 128))
    with opened_page(accept_downloads=True) as (page, errors):
        page.goto(server.url + "/")
        page.set_input_files("#files", str(clip))
        card = page.locator(".photo", has_text="walk.mp4").first
        page.wait_for_function(
            "document.querySelector('.photo').dataset.state === 'done'", timeout=120_000, polling=250
        )
        assert card.locator(".status").inner_text() == "done"
        assert card.locator(".videos").is_visible() and not card.locator(".viewport").is_visible()
        assert not card.locator(".strength-control").is_visible() and not card.locator(".zoom").is_visible()
        result_url = card.locator(".after-video").get_attribute("src")
        assert result_url.startswith("/v1/jobs/") and result_url.endswith("/result")
        assert card.locator(".before-video").evaluate("(v) => v.src.startsWith('blob:')")
        if os.environ.get("DEBLUR_SCREENSHOTS"):
            Path(os.environ["DEBLUR_SCREENSHOTS"], "serve-video.png").write_bytes(page.screenshot(full_page=True))
        with page.expect_download() as download:
            card.locator(".download").click()
        assert download.value.suggested_filename == "walk-deblurred.mp4"
        with av.open(download.value.path()) as container:
            assert sum(1 for _ in container.decode(video=0)) == 6
        assert errors == []


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "codec", "audio"),
    [
        ("title.m2v", "mpeg2video", False),  # a DVD's video stream: the browser's error
        ("phone.mov", "libx265", True),  # HEVC with AAC, as phones record: the sound plays, the picture is black
    ],
)
def test_a_clip_the_browser_cannot_play_is_said_so_not_shown_as_an_empty_box(server, tmp_path, name, codec, audio):
    """The server deblurs such a clip into H.264, which the page plays, but Chromium cannot show the upload."""
    from helpers import make_clip

    clip = make_clip(tmp_path / name, codec=codec, frames=4, size=(96, 128), audio=audio)
    with opened_page() as (page, errors):
        page.goto(server.url + "/")
        page.set_input_files("#files", str(clip))
        card = page.locator(".photo", has_text=name).first
        page.wait_for_function(
            "document.querySelector('.photo').dataset.state === 'done'", timeout=120_000, polling=250
        )
        said = card.locator(".before-video + figcaption")
        said.filter(has_text="cannot play").wait_for(timeout=10_000)
        assert said.inner_text().startswith("blurry: this browser cannot play the clip as it was sent")
        assert "in step" not in card.locator(".after-video + figcaption").inner_text()
        assert not card.locator(".before-video").is_visible() and card.locator(".download").is_visible()
        assert errors == []


def test_without_a_browser_the_page_test_is_skipped_here_and_required_in_ci(monkeypatch, tmp_path):
    class NoBrowser:  # what Playwright says when it has downloaded no Chromium
        class chromium:  # noqa: N801  Playwright's attribute name
            executable_path = str(tmp_path / "nowhere" / "chrome")

    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: pytest.fail("no download is tried"))
    monkeypatch.setenv("DEBLUR_TESTS_IN_CI", "")
    with pytest.raises(pytest.skip.Exception, match="apt-get install -y chromium"):
        chromium(NoBrowser)
    monkeypatch.setenv("DEBLUR_TESTS_IN_CI", "1")
    with pytest.raises(pytest.fail.Exception, match="CI \\(CI=true\\) requires it"):
        chromium(NoBrowser)
