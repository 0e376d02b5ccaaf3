"""Video jobs in `deblur serve`: 202 and a Location, state and ETA, the result, cancelling, limits, clean-up."""

import errno
import io
import os
import threading
import time

import av
import pytest
from fastapi.testclient import TestClient
from helpers import make_clip, save_model
from PIL import Image
from starlette.requests import ClientDisconnect

from deblur.inference import load_deblurrer
from deblur.serve.app import create_app
from deblur.serve.card import model_info
from deblur.serve.jobs import VideoJobs
from deblur.serve.limits import Limits
from deblur.serve.service import DeblurService


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return save_model(tmp_path_factory.mktemp("run"), width=4, blocks=1, norm="instance", zero_init_output=False)


class Slow:
    """A Deblurrer that waits on a gate before each batch: a job that runs until the test lets it go."""

    def __init__(self, deblurrer):
        self.deblurrer = deblurrer
        self.gate = threading.Event()
        self.gate.set()

    def __getattr__(self, name):
        return getattr(self.deblurrer, name)

    def many(self, images):
        self.gate.wait(timeout=30)
        return self.deblurrer.many(images)


def app_with(model, **limits):
    deblurrer = load_deblurrer(model, precision="float32")
    limits = Limits(**{"max_bytes": 2_000_000, "waiting": 2, **limits})
    service = DeblurService(deblurrer, model_info(model, "a test model", "float32"), limits)
    slow = Slow(deblurrer)
    jobs = VideoJobs(slow, limits, log=lambda _: None)
    return create_app(service, jobs=jobs, allowed_hosts=("testserver",)), jobs, slow


def upload(client, path):
    return client.post("/v1/jobs", files={"video": (path.name, path.read_bytes(), "video/mp4")})


def wait_for(client, job_id, states=("done", "failed", "cancelled"), seconds=60):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        status = client.get(f"/v1/jobs/{job_id}").json()
        if status["state"] in states:
            return status
        time.sleep(0.05)
    raise AssertionError(f"job {job_id} still {status['state']}")


def frame_count(data: bytes) -> int:
    with av.open(io.BytesIO(data)) as container:
        return sum(1 for _ in container.decode(video=0))


def test_a_clip_job_from_upload_to_download_and_delete(model, tmp_path):
    app, jobs, _ = app_with(model)
    clip = make_clip(tmp_path / "holiday.mp4", frames=5)
    with TestClient(app) as client:
        answer = upload(client, clip)
        assert answer.status_code == 202
        job = answer.json()
        assert answer.headers["location"] == f"/v1/jobs/{job['id']}" and job["frames_total"] == 5
        status = wait_for(client, job["id"])
        assert status["state"] == "done" and status["frames_done"] == 5 and status["eta_seconds"] is None
        result = client.get(f"/v1/jobs/{job['id']}/result")
        assert result.status_code == 200 and result.headers["content-type"] == "video/mp4"
        assert 'filename="holiday-deblurred.mp4"' in result.headers["content-disposition"]
        assert frame_count(result.content) == 5
        folder = jobs.jobs[job["id"]].folder
        assert sorted(p.name for p in folder.iterdir()) == ["result.mp4"]  # upload and segments gone
        assert client.delete(f"/v1/jobs/{job['id']}").json()["was"] == "done"
        assert not folder.exists() and client.get(f"/v1/jobs/{job['id']}").status_code == 404
    assert not jobs._root.exists()  # nothing left at shutdown


def test_one_job_at_a_time_photos_still_answered_and_cancel(model, tmp_path):
    app, jobs, slow = app_with(model)
    slow.gate.clear()  # the job waits at its first batch
    clip = make_clip(tmp_path / "clip.mp4", frames=90)
    with TestClient(app) as client:
        job = upload(client, clip).json()
        running = wait_for(client, job["id"], states=("running",))
        assert running["frames_done"] == 0
        second = upload(client, clip)
        assert second.status_code == 503 and int(second.headers["retry-after"]) >= 5
        photo = io.BytesIO()
        Image.new("RGB", (40, 30), (120, 80, 40)).save(photo, "PNG")
        answer = client.post("/v1/deblur", files={"image": ("p.png", photo.getvalue(), "image/png")})
        assert answer.status_code == 200  # the photo line is not held up by the job
        folder = jobs.jobs[job["id"]].folder
        slow.gate.set()
        assert client.delete(f"/v1/jobs/{job['id']}").json()["was"] in ("running", "cancelled")
        assert not folder.exists()
        assert upload(client, make_clip(tmp_path / "next.mp4", frames=2)).status_code == 202  # free again


@pytest.mark.parametrize(
    "limits, status, reason",
    [
        ({"max_video_seconds": 0.5}, 413, "over the limit of 0.5 s (max_video_seconds)"),
        ({"max_pixels": 1000}, 413, "over the limit of 1,000 (max_pixels)"),
        ({"max_video_bytes": 1000}, 413, "the upload is over the limit of 1,000 bytes"),
    ],
)
def test_limits_answer_413_and_name_the_limit(model, tmp_path, limits, status, reason):
    app, jobs, _ = app_with(model, **limits)
    clip = make_clip(tmp_path / "clip.mp4", frames=30)
    with TestClient(app) as client:
        answer = upload(client, clip)
        assert answer.status_code == status and reason in answer.json()["detail"]
        assert list(jobs.root.iterdir()) == []


def test_bad_clips_answer_400_and_unknown_jobs_404(model, tmp_path):
    app, jobs, _ = app_with(model)
    with TestClient(app) as client:
        answer = client.post("/v1/jobs", files={"video": ("x.mp4", b"not a video", "video/mp4")})
        assert answer.status_code == 400 and "x.mp4" in answer.json()["detail"]
        assert client.post("/v1/jobs", content=b"").status_code == 400
        # A photo sent as a clip: FFmpeg would have made it a video of one frame.
        photo = io.BytesIO()
        Image.new("RGB", (32, 24), (90, 120, 30)).save(photo, "PNG")
        answer = client.post("/v1/jobs", content=photo.getvalue(), headers={"content-type": "video/mp4"})
        assert answer.status_code == 400, answer.text
        assert answer.json()["detail"] == "clip.mp4: a photo, not a clip: send photos to POST /v1/deblur"
        # A clip job takes no options: a parameter or field is a mistake, named.
        clip = make_clip(tmp_path / "named.mp4", frames=2, audio=False).read_bytes()
        answer = client.post("/v1/jobs", params={"strength": "50"}, content=clip, headers={"content-type": "video/mp4"})
        assert answer.status_code == 400 and "unknown parameter(s): strength" in answer.json()["detail"]
        answer = client.post("/v1/jobs", data={"format": "mkv"}, files={"video": ("c.mp4", clip, "video/mp4")})
        assert answer.status_code == 400 and "unknown field(s): format" in answer.json()["detail"]
        assert client.get("/v1/jobs/nope").status_code == 404
        assert client.get("/v1/jobs/nope/result").status_code == 404
        assert client.delete("/v1/jobs/nope").status_code == 404
        assert list(jobs.root.iterdir()) == []


def test_a_clip_sent_as_a_photo_is_said_to_be_one(model, tmp_path):
    app, _, _ = app_with(model)
    clip = make_clip(tmp_path / "c.mp4", frames=2, audio=False).read_bytes()
    with TestClient(app) as client:
        answer = client.post("/v1/deblur", files={"image": ("party.gif", clip, "image/gif")})
        assert answer.status_code == 415, answer.text
        assert answer.json()["detail"] == "party.gif: a video clip (MP4), not a photo: send clips to POST /v1/jobs"
        # bytes that are neither keep the reason they had
        answer = client.post("/v1/deblur", files={"image": ("x.png", b"hello", "image/png")})
        assert answer.status_code == 415 and "not a readable image" in answer.json()["detail"]


def test_a_raw_body_upload_and_the_result_before_it_is_ready(model, tmp_path):
    app, _, slow = app_with(model)
    slow.gate.clear()
    clip = make_clip(tmp_path / "clip.mp4", frames=3)
    with TestClient(app) as client:
        job = client.post("/v1/jobs", content=clip.read_bytes(), headers={"content-type": "video/mp4"}).json()
        early = client.get(f"/v1/jobs/{job['id']}/result")
        assert early.status_code == 409 and "is queued" in early.json()["detail"] or "is running" in early.text
        slow.gate.set()
        assert wait_for(client, job["id"])["state"] == "done"
        assert frame_count(client.get(f"/v1/jobs/{job['id']}/result").content) == 3


def test_a_full_disk_answers_507_or_fails_the_job_without_naming_the_servers_folders(model, tmp_path, monkeypatch):
    full = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "/srv/deblur-jobs-x/result.mp4")
    app, jobs, _ = app_with(model)
    logged = []
    jobs.log = logged.append
    clip = make_clip(tmp_path / "clip.mp4", frames=2)

    def half_then(raised):
        async def save(request, path):
            path.write_bytes(b"part of a clip")
            raise raised

        return save

    def no_room_for_the_result(*args, **kwargs):
        raise full

    with TestClient(app) as client:
        for raised, status in ((full, 507), (ClientDisconnect(), 499)):  # no room; the client hung up halfway
            with monkeypatch.context() as patch:
                patch.setattr("deblur.serve.job_routes._save_upload", half_then(raised))
                answer = upload(client, clip)
            assert answer.status_code == status
            assert status == 499 or answer.json() == {"detail": "the server's disk is full: try again later"}
            assert list(jobs.root.iterdir()) == []  # the half upload went
        monkeypatch.setattr("deblur.serve.jobs.deblur_clip", no_room_for_the_result)
        status = wait_for(client, upload(client, clip).json()["id"])
        assert status["state"] == "failed" and status["error"] == "the server's disk is full: try again later"
        assert logged and "/srv/deblur-jobs-x/result.mp4" in logged[-1]  # the operator is told where
