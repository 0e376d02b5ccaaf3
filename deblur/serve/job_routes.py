"""The video API: `POST /v1/jobs`, `GET /v1/jobs/{id}`, `GET /v1/jobs/{id}/result`, `DELETE /v1/jobs/{id}`.

A clip takes minutes to hours, so it is a job: the upload answers 202 at once with the job's address, the client
asks how far it is, then downloads the result. Each route parses the request, hands it to `VideoJobs` and writes
the response; no video logic here.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, JSONResponse, Response
from starlette.requests import ClientDisconnect

from deblur.serve.jobs import TooLongError, VideoJobs
from deblur.serve.routes import GONE, busy, error, no_room, unknown_names
from deblur.serve.work import Busy
from deblur.video.clips import VideoReadError

router = APIRouter()

CLIP_BODY = {
    "required": True,
    "content": {
        "multipart/form-data": {
            "schema": {
                "type": "object",
                "properties": {"video": {"type": "string", "format": "binary", "description": "The clip."}},
                "required": ["video"],
            }
        },
        "video/*": {"schema": {"type": "string", "format": "binary"}},
    },
}
JOB_ERRORS = {
    400: {
        "description": "Not a usable clip: a photo, not a video at all, no video stream, truncated, or an "
        "unsupported codec."
    },
    413: {"description": "Over a limit: the upload's size, the clip's length, or its frame size (named)."},
    503: {"description": "A video job is already running (one at a time), or shutting down; see Retry-After."},
    507: {"description": "The server's disk is full: no room for the upload."},
}


def jobs_of(request: Request) -> VideoJobs:
    return request.app.state.jobs


@router.post(
    "/v1/jobs",
    summary="Deblur a video clip, as a job",
    status_code=202,
    responses={202: {"description": "Accepted: the job's state; its address in Location."}, **JOB_ERRORS},
    openapi_extra={"requestBody": CLIP_BODY},
)
async def create_job(request: Request) -> Response:
    """A clip in (a multipart field `video`, or the clip itself as the body); answers 202 with the job's id and
    state, and `Location: /v1/jobs/{id}`. The clip is deblurred as `deblur predict` does it: same size, frames,
    timestamps, rotation, audio."""
    jobs = jobs_of(request)
    problem = unknown_names(request.query_params, (), "parameter")  # a clip job takes no options
    if problem:
        return error(400, problem)
    try:
        jobs.check_free()  # before reading the upload: refused at once
    except Busy as err:
        return busy(err)
    try:
        folder = jobs.new_folder()
    except OSError as err:
        return no_room(err)
    try:
        name, fields = await _save_upload(request, folder / "upload")
    except BaseException as err:
        shutil.rmtree(folder, ignore_errors=True)  # an upload cut short, or no room for it: nothing kept
        if isinstance(err, ClientDisconnect):
            return Response(status_code=GONE)
        if isinstance(err, OSError):
            return no_room(err)
        raise
    problem = unknown_names(fields, (), "field")
    if name is None or problem:
        shutil.rmtree(folder, ignore_errors=True)
        return error(400, problem or "no clip: send it as the multipart field 'video' or as the request body")
    try:
        job = await asyncio.to_thread(jobs.submit, folder / "upload", name)
    except Busy as err:
        return busy(err)
    except TooLongError as err:
        return error(413, str(err))
    except VideoReadError as err:
        status = 413 if "max_pixels" in str(err) else 400
        return error(status, str(err))
    return JSONResponse(job.status(), status_code=202, headers={"Location": f"/v1/jobs/{job.id}"})


async def _save_upload(request: Request, path: Path) -> tuple[str | None, list[str]]:
    """Write the upload to `path` as it arrives (a clip is never held in memory); its file name (or None), and the
    names of the multipart's other fields, text or file."""
    if request.headers.get("content-type", "").startswith("multipart/form-data"):
        async with request.form(max_files=1, max_fields=8, max_part_size=2**20) as form:
            others = [key for key, _ in form.multi_items() if key != "video"]  # a file under another name too
            upload = form.get("video")
            if upload is None or isinstance(upload, str) or others:
                return None, others
            with path.open("wb") as out:
                while chunk := await upload.read(2**20):
                    out.write(chunk)
            return upload.filename or "clip.mp4", []
    size = 0
    with path.open("wb") as out:
        async for chunk in request.stream():
            out.write(chunk)
            size += len(chunk)
    if size == 0:
        path.unlink(missing_ok=True)
        return None, []
    return "clip.mp4", []


@router.get("/v1/jobs/{job_id}", summary="A video job's state")
async def job_status(request: Request, job_id: str) -> Any:
    """queued, running, done, failed or cancelled; frames done and in all, and an estimate of the seconds left."""
    job = jobs_of(request).jobs.get(job_id)
    if job is None:
        return error(404, f"no job {job_id}")
    return job.status()


@router.get("/v1/jobs/{job_id}/result", summary="A finished job's clip", response_class=FileResponse)
async def job_result(request: Request, job_id: str) -> Any:
    """The deblurred clip, once the job is done (409 before)."""
    job = jobs_of(request).jobs.get(job_id)
    if job is None:
        return error(404, f"no job {job_id}")
    if job.state != "done":
        return error(409, f"job {job_id} is {job.state}" + (f": {job.error}" if job.error else ""))
    return FileResponse(job.target, media_type=job.media_type, filename=job.download_name)


@router.delete("/v1/jobs/{job_id}", summary="Cancel a video job, or delete its result")
async def delete_job(request: Request, job_id: str) -> Any:
    """Stops the job if it runs, and removes its files."""
    job = await asyncio.to_thread(jobs_of(request).delete, job_id)
    if job is None:
        return error(404, f"no job {job_id}")
    return {"id": job_id, "state": "deleted", "was": job.state}
